package ui_test

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"svc/auth/authtest"
	"svc/internal/platform/derrors"
	"svc/ui"
)

const (
	testClient   = "svc-ui"
	testRedirect = "http://127.0.0.1:8080/ui/"
	testVerifier = "verifier-0123456789-0123456789-0123456789-abcdef"
	testNonce    = "nonce-0123456789-0123456789-0123456789-abcdefgh"
)

func challenge(v string) string {
	sum := sha256.Sum256([]byte(v))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// authorizeCode goes through the issuer's authorization endpoint as a
// browser would and returns the code it redirects back with.
func authorizeCode(t *testing.T, cc ui.ClientConfig, nonce string) string {
	t.Helper()
	q := url.Values{"response_type": {"code"}, "client_id": {cc.ClientID}, "redirect_uri": {testRedirect},
		"scope": {strings.Join(cc.Scopes, " ")}, "state": {"st"}, "nonce": {nonce},
		"code_challenge": {challenge(testVerifier)}, "code_challenge_method": {"S256"}}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := noFollow.Get(cc.AuthorizationEndpoint + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	loc, err := url.Parse(res.Header.Get("Location"))
	if res.StatusCode != http.StatusFound || err != nil {
		t.Fatalf("authorize = %d %q, want a 302 back", res.StatusCode, res.Header.Get("Location"))
	}
	if got := loc.Query().Get("state"); got != "st" {
		t.Fatalf("state came back as %q", got)
	}
	return loc.Query().Get("code")
}

func TestOIDCExchange(t *testing.T) {
	iss := authtest.NewIssuer(t)
	iss.AutoApprove(testClient, testRedirect, map[string]any{"sub": "alice", "workspace": "acme"})
	o, err := ui.NewOIDC(ui.OIDCConfig{Issuer: iss.URL, ClientID: testClient, Scopes: []string{"profile", "openid"}})
	if err != nil {
		t.Fatal(err)
	}
	cc, err := o.ClientConfig(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if cc.AuthorizationEndpoint != iss.URL+"/authorize" || strings.Join(cc.Scopes, " ") != "openid profile" {
		t.Fatalf("client config %+v", cc)
	}
	req := ui.TokenRequest{Code: authorizeCode(t, cc, testNonce), CodeVerifier: testVerifier, RedirectURI: testRedirect, Nonce: testNonce}
	tok, err := o.Exchange(t.Context(), req)
	if err != nil {
		t.Fatalf("Exchange: %v", err)
	}
	if tok.AccessToken == "" || tok.Subject != "alice" || tok.ExpiresIn <= 0 {
		t.Fatalf("tokens %+v", tok)
	}
	// A code is spent once.
	if _, err := o.Exchange(t.Context(), req); !errors.Is(err, derrors.ErrInvalid) {
		t.Errorf("second exchange of one code: %v, want ErrInvalid", err)
	}

	for _, tc := range []struct {
		name   string
		mutate func(*ui.TokenRequest)
		want   error
	}{
		{"wrong verifier", func(r *ui.TokenRequest) { r.CodeVerifier = strings.Repeat("x", 43) }, derrors.ErrInvalid},
		{"other redirect", func(r *ui.TokenRequest) { r.RedirectURI = "http://127.0.0.1:9/ui/" }, derrors.ErrInvalid},
		{"another sign-in's nonce", func(r *ui.TokenRequest) { r.Nonce = strings.Repeat("n", 43) }, derrors.ErrUnauthenticated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ui.TokenRequest{Code: authorizeCode(t, cc, testNonce), CodeVerifier: testVerifier, RedirectURI: testRedirect, Nonce: testNonce}
			tc.mutate(&r)
			if _, err := o.Exchange(t.Context(), r); !errors.Is(err, tc.want) {
				t.Errorf("Exchange = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestOIDCIssuerDown(t *testing.T) {
	iss := authtest.NewIssuer(t)
	iss.SetDown(true)
	o, err := ui.NewOIDC(ui.OIDCConfig{Issuer: iss.URL, ClientID: testClient})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.ClientConfig(t.Context()); !errors.Is(err, derrors.ErrUnavailable) {
		t.Errorf("ClientConfig with the issuer down = %v, want ErrUnavailable", err)
	}
}

func TestNewOIDCRefuses(t *testing.T) {
	for _, cfg := range []ui.OIDCConfig{{ClientID: "x"}, {Issuer: "ftp://idp", ClientID: "x"}, {Issuer: "https://idp"}} {
		if _, err := ui.NewOIDC(cfg); err == nil {
			t.Errorf("NewOIDC(%+v) = nil error", cfg)
		}
	}
}

func TestDecodeTokenRequest(t *testing.T) {
	ok := `{"code":"abc","codeVerifier":"` + testVerifier + `","nonce":"` + testNonce + `","redirectUri":"https://svc.example/ui/"}`
	if _, err := ui.DecodeTokenRequest([]byte(ok)); err != nil {
		t.Fatalf("a good request: %v", err)
	}
	for _, body := range []string{
		``, `[]`, `{"code":1}`, ok + `{}`,
		strings.Replace(ok, `"abc"`, `""`, 1),
		strings.Replace(ok, `"abc"`, `"a b"`, 1),
		strings.Replace(ok, testVerifier, "short", 1),
		strings.Replace(ok, testNonce, "short", 1),
		strings.Replace(ok, "https://svc.example/ui/", "https://svc.example/elsewhere", 1),
		strings.Replace(ok, "https://svc.example/ui/", "javascript:alert(1)", 1),
		strings.Replace(ok, "https://svc.example/ui/", "https://svc.example/ui/?code=1", 1),
		strings.Replace(ok, `"code"`, `"extra":1,"code"`, 1),
	} {
		if _, err := ui.DecodeTokenRequest([]byte(body)); !errors.Is(err, derrors.ErrInvalid) {
			t.Errorf("DecodeTokenRequest(%s) = %v, want ErrInvalid", body, err)
		}
	}
}

func FuzzDecodeTokenRequest(f *testing.F) {
	f.Add([]byte(`{"code":"abc","codeVerifier":"` + testVerifier + `","nonce":"` + testNonce + `","redirectUri":"https://svc.example/ui/"}`))
	f.Add([]byte(`{"code":"\u0000"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := ui.DecodeTokenRequest(body)
		if err != nil {
			if !errors.Is(err, derrors.ErrInvalid) {
				t.Fatalf("error %v is not ErrInvalid", err)
			}
			return
		}
		if r.Code == "" || len(r.CodeVerifier) < 43 || len(r.Nonce) < 43 {
			t.Fatalf("accepted %+v", r)
		}
	})
}
