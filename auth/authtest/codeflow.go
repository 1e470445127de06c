package authtest

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// codeLifetime bounds how long an issued authorization code can be
// redeemed, as real issuers do (RFC 6749 §4.1.2 recommends at most ten
// minutes).
const codeLifetime = time.Minute

// codeFlow is the issuer's authorization code flow with PKCE: one
// registered public client, one user approved without a login page.
type codeFlow struct {
	mu          sync.Mutex
	clientID    string
	redirectURI string         // "" accepts any http(s) redirect URI
	claims      map[string]any // the approved user's claims
	codes       map[string]grant
	issued      int
	redeemed    int
}

// grant is what an issued code stands for.
type grant struct {
	redirectURI string
	challenge   string
	nonce       string
	expires     time.Time
}

// AutoApprove registers clientID as a public client (no secret, PKCE S256
// required) and makes /authorize approve claims's user at once, redirecting
// back with a code; /token then redeems the code, once, for an access
// token and an ID token (audience clientID, carrying the request's nonce),
// both signed like Mint's. redirectURI, when not empty, is the only
// redirect URI accepted, as an issuer's client registration would have it.
func (iss *Issuer) AutoApprove(clientID, redirectURI string, claims map[string]any) {
	f := &iss.flow
	f.mu.Lock()
	defer f.mu.Unlock()
	f.clientID, f.redirectURI, f.claims = clientID, redirectURI, claims
	f.codes = map[string]grant{}
}

// CodesIssued and CodesRedeemed count the flow's codes, to check a client
// went through the redirect and exchanged what it got exactly once.
func (iss *Issuer) CodesIssued() int {
	iss.flow.mu.Lock()
	defer iss.flow.mu.Unlock()
	return iss.flow.issued
}

// CodesRedeemed is how many codes /token accepted.
func (iss *Issuer) CodesRedeemed() int {
	iss.flow.mu.Lock()
	defer iss.flow.mu.Unlock()
	return iss.flow.redeemed
}

// authorize implements the authorization endpoint (OIDC Core §3.1.2). A
// request that cannot be redirected safely (unknown client or redirect
// URI) gets a 400 page; any other mistake is redirected back as an OAuth
// error, as the specification says.
func (iss *Issuer) authorize(w http.ResponseWriter, r *http.Request) {
	f := &iss.flow
	q := r.URL.Query()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.codes == nil || q.Get("client_id") != f.clientID {
		http.Error(w, "unknown client_id", http.StatusBadRequest)
		return
	}
	redirect, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || (redirect.Scheme != "http" && redirect.Scheme != "https") || redirect.Host == "" ||
		(f.redirectURI != "" && q.Get("redirect_uri") != f.redirectURI) {
		http.Error(w, "redirect_uri is not registered", http.StatusBadRequest)
		return
	}
	back := func(params url.Values) {
		params.Set("state", q.Get("state"))
		params.Set("iss", iss.URL) // RFC 9207
		u := *redirect
		u.RawQuery = params.Encode()
		http.Redirect(w, r, u.String(), http.StatusFound)
	}
	switch {
	case q.Get("response_type") != "code":
		back(url.Values{"error": {"unsupported_response_type"}})
	case q.Get("code_challenge_method") != "S256" || len(q.Get("code_challenge")) != 43:
		back(url.Values{"error": {"invalid_request"}, "error_description": {"PKCE with S256 is required"}})
	default:
		code := randomString()
		f.codes[code] = grant{redirectURI: q.Get("redirect_uri"), challenge: q.Get("code_challenge"),
			nonce: q.Get("nonce"), expires: time.Now().Add(codeLifetime)}
		f.issued++
		back(url.Values{"code": {code}})
	}
}

// token implements the token endpoint for grant_type=authorization_code
// (RFC 6749 §4.1.3 with RFC 7636 §4.6): the code is single-use and bound
// to the client, the redirect URI and the PKCE challenge.
func (iss *Issuer) token(w http.ResponseWriter, r *http.Request) {
	f := &iss.flow
	if err := r.ParseForm(); err != nil {
		oauthError(w, "invalid_request", "unreadable form")
		return
	}
	f.mu.Lock()
	code := r.PostForm.Get("code")
	g, ok := f.codes[code]
	delete(f.codes, code) // used or not, a presented code is spent
	clientID, claims := f.clientID, f.claims
	if ok {
		f.redeemed++
	}
	f.mu.Unlock()
	sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
	switch {
	case r.PostForm.Get("grant_type") != "authorization_code":
		oauthError(w, "unsupported_grant_type", "only authorization_code")
	case r.PostForm.Get("client_id") != clientID || clientID == "":
		oauthError(w, "invalid_client", "unknown client_id")
	case !ok || time.Now().After(g.expires):
		oauthError(w, "invalid_grant", "unknown, used or expired code")
	case r.PostForm.Get("redirect_uri") != g.redirectURI:
		oauthError(w, "invalid_grant", "redirect_uri differs from the authorization request")
	case subtle.ConstantTimeCompare([]byte(base64.RawURLEncoding.EncodeToString(sum[:])), []byte(g.challenge)) != 1:
		oauthError(w, "invalid_grant", "code_verifier does not match the code_challenge")
	default:
		access := map[string]any{"azp": clientID, "scope": "openid"}
		id := map[string]any{"aud": clientID, "azp": clientID}
		if g.nonce != "" {
			id["nonce"] = g.nonce
		}
		for k, v := range claims {
			access[k] = v
			if _, set := id[k]; !set {
				id[k] = v
			}
		}
		w.Header().Set("Cache-Control", "no-store")
		writeJSON(w, map[string]any{
			"access_token": iss.Mint(access),
			"id_token":     iss.Mint(id),
			"token_type":   "Bearer",
			"expires_in":   3600,
		})
	}
}

func oauthError(w http.ResponseWriter, code, description string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write([]byte(`{"error":"` + code + `","error_description":"` + description + `"}`))
}

func randomString() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
