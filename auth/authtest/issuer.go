// Package authtest runs a real OIDC issuer on loopback for tests: discovery,
// a JWKS with an RSA key generated in-process, and a Mint that signs tokens,
// well-formed or deliberately forged.
package authtest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// KeyID is the kid of the issuer's published signing key.
const KeyID = "authtest-key-1"

// Issuer is an OIDC issuer served by httptest on 127.0.0.1.
type Issuer struct {
	// URL is the issuer URL (the iss of tokens it mints).
	URL string

	t       testing.TB
	srv     *httptest.Server
	key     *rsa.PrivateKey // published in the JWKS
	foreign *rsa.PrivateKey // never published
	down    atomic.Bool
	hits    atomic.Int64
	flow    codeFlow // the authorization code flow (codeflow.go)
}

// NewIssuer starts an issuer; it stops when the test ends.
func NewIssuer(t testing.TB) *Issuer {
	t.Helper()
	iss := &Issuer{t: t, key: newRSAKey(t), foreign: newRSAKey(t)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", iss.discovery)
	mux.HandleFunc("GET /jwks", iss.jwks)
	mux.HandleFunc("GET /authorize", iss.authorize)
	mux.HandleFunc("POST /token", iss.token)
	iss.srv = httptest.NewServer(mux)
	iss.URL = iss.srv.URL
	t.Cleanup(iss.srv.Close)
	return iss
}

func newRSAKey(t testing.TB) *rsa.PrivateKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatalf("authtest: generating RSA key: %v", err)
	}
	return k
}

// SetDown makes every endpoint answer 503 (true) or serve again (false), to
// test an issuer that is unreachable at start.
func (iss *Issuer) SetDown(down bool) { iss.down.Store(down) }

// DiscoveryHits is how many times the discovery document was requested.
func (iss *Issuer) DiscoveryHits() int64 { return iss.hits.Load() }

func (iss *Issuer) discovery(w http.ResponseWriter, _ *http.Request) {
	iss.hits.Add(1)
	if iss.down.Load() {
		http.Error(w, "issuer down", http.StatusServiceUnavailable)
		return
	}
	writeJSON(w, map[string]any{
		"issuer":                                iss.URL,
		"jwks_uri":                              iss.URL + "/jwks",
		"authorization_endpoint":                iss.URL + "/authorize",
		"token_endpoint":                        iss.URL + "/token",
		"response_types_supported":              []string{"code"},
		"grant_types_supported":                 []string{"authorization_code"},
		"code_challenge_methods_supported":      []string{"S256"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256", "HS256", "none"}, // a careless issuer: the verifier must not trust this list
	})
}

func (iss *Issuer) jwks(w http.ResponseWriter, _ *http.Request) {
	if iss.down.Load() {
		http.Error(w, "issuer down", http.StatusServiceUnavailable)
		return
	}
	writeJSON(w, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{
		Key: &iss.key.PublicKey, KeyID: KeyID, Algorithm: string(jose.RS256), Use: "sig",
	}}})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

type mintOptions struct {
	foreignKey bool
	kid        string
	algNone    bool
	hs256      bool
	expired    bool
	issuer     string
}

// MintOption changes how Mint builds a token.
type MintOption func(*mintOptions)

// WithForeignKey signs with an RSA key that is not in the JWKS, under the
// published key id: a forged signature.
func WithForeignKey() MintOption { return func(o *mintOptions) { o.foreignKey = true } }

// WithKeyID sets the kid header, e.g. to one the JWKS does not have.
func WithKeyID(kid string) MintOption { return func(o *mintOptions) { o.kid = kid } }

// WithAlgNone produces an unsigned token with header alg "none".
func WithAlgNone() MintOption { return func(o *mintOptions) { o.algNone = true } }

// WithHS256PublicKey signs with HMAC-SHA256 keyed by the issuer's public key
// (PEM), the algorithm-confusion forgery.
func WithHS256PublicKey() MintOption { return func(o *mintOptions) { o.hs256 = true } }

// Expired sets exp (and iat) an hour in the past.
func Expired() MintOption { return func(o *mintOptions) { o.expired = true } }

// WithIssuer sets the iss claim to another issuer.
func WithIssuer(iss string) MintOption { return func(o *mintOptions) { o.issuer = iss } }

// Mint returns a compact JWT with claims. Unless claims set them, iss is
// the issuer's URL, iat now and exp an hour from now.
func (iss *Issuer) Mint(claims map[string]any, opts ...MintOption) string {
	iss.t.Helper()
	o := mintOptions{kid: KeyID, issuer: iss.URL}
	for _, opt := range opts {
		opt(&o)
	}
	c := make(map[string]any, len(claims)+3)
	now := time.Now()
	c["iss"] = o.issuer
	c["iat"] = now.Unix()
	c["exp"] = now.Add(time.Hour).Unix()
	if o.expired {
		c["iat"] = now.Add(-2 * time.Hour).Unix()
		c["exp"] = now.Add(-time.Hour).Unix()
	}
	for k, v := range claims {
		c[k] = v
	}
	payload, err := json.Marshal(c)
	if err != nil {
		iss.t.Fatalf("authtest: encoding claims: %v", err)
	}
	if o.algNone {
		enc := base64.RawURLEncoding.EncodeToString
		return enc([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + enc(payload) + "."
	}
	var sk jose.SigningKey
	switch {
	case o.hs256:
		der, err := x509.MarshalPKIXPublicKey(&iss.key.PublicKey)
		if err != nil {
			iss.t.Fatalf("authtest: encoding public key: %v", err)
		}
		pemKey := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
		sk = jose.SigningKey{Algorithm: jose.HS256, Key: jose.JSONWebKey{Key: pemKey, KeyID: o.kid}}
	case o.foreignKey:
		sk = jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: iss.foreign, KeyID: o.kid}}
	default:
		sk = jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: iss.key, KeyID: o.kid}}
	}
	signer, err := jose.NewSigner(sk, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		iss.t.Fatalf("authtest: signer: %v", err)
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		iss.t.Fatalf("authtest: signing: %v", err)
	}
	tok, err := jws.CompactSerialize()
	if err != nil {
		iss.t.Fatalf("authtest: serialising: %v", err)
	}
	return tok
}
