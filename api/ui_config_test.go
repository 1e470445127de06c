package api_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"svc/api"
	"svc/internal/platform/config"
)

// TestUIOIDCSignIn walks the web view's OIDC sign-in against a real issuer
// on loopback: the page's configuration, the issuer's redirect with a
// code, the exchange through the service, and the access token working on
// the API like any other.
func TestUIOIDCSignIn(t *testing.T) {
	e := newEnv(t, withOIDC(), withRequireAuth(), withConfig(func(c *config.Config) { c.UIOIDCClientID = "svc-ui" }))
	e.client.AllowUndocumented(http.MethodGet, "/ui/oidc/config")
	e.client.AllowUndocumented(http.MethodPost, "/ui/oidc/token")
	redirect := e.client.URL + "/ui/"
	e.issuer.AutoApprove("svc-ui", redirect, map[string]any{"sub": "alice", "workspace": "acme", "roles": []string{"member"}})

	res := e.do(t, http.MethodGet, "/ui/oidc/config", "")
	want(t, res, http.StatusOK, "GET /ui/oidc/config")
	var cc struct {
		Issuer, ClientID, AuthorizationEndpoint string
		Scopes                                  []string
	}
	if err := json.Unmarshal(res.Body, &cc); err != nil {
		t.Fatal(err)
	}
	if cc.Issuer != e.issuer.URL || cc.ClientID != "svc-ui" || cc.AuthorizationEndpoint != e.issuer.URL+"/authorize" ||
		strings.Join(cc.Scopes, " ") != "openid profile email" {
		t.Fatalf("config %+v", cc)
	}

	verifier := strings.Repeat("v", 50)
	nonce := strings.Repeat("n", 50)
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{"response_type": {"code"}, "client_id": {"svc-ui"}, "redirect_uri": {redirect}, "state": {"s"}, "nonce": {nonce},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	ar, err := noFollow.Get(cc.AuthorizationEndpoint + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	ar.Body.Close()
	back, _ := url.Parse(ar.Header.Get("Location"))
	code := back.Query().Get("code")
	if code == "" {
		t.Fatalf("the issuer answered %d %s", ar.StatusCode, ar.Header.Get("Location"))
	}

	body := func(code, verifier string) string {
		b, _ := json.Marshal(map[string]string{"code": code, "codeVerifier": verifier, "redirectUri": redirect, "nonce": nonce})
		return string(b)
	}
	// A wrong verifier is the issuer's refusal, a 400 saying to sign in
	// again; the code is spent by it, as at a real issuer.
	res = e.do(t, http.MethodPost, "/ui/oidc/token", body(code, strings.Repeat("w", 50)))
	want(t, res, http.StatusBadRequest, "a wrong code verifier")
	if msg := res.ErrorInfo(t).Message; !strings.Contains(msg, "invalid_grant") {
		t.Errorf("the refusal says %q", msg)
	}

	ar, err = noFollow.Get(cc.AuthorizationEndpoint + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	ar.Body.Close()
	back, _ = url.Parse(ar.Header.Get("Location"))
	res = e.do(t, http.MethodPost, "/ui/oidc/token", body(back.Query().Get("code"), verifier))
	want(t, res, http.StatusOK, "POST /ui/oidc/token")
	var tok struct{ AccessToken, Subject string }
	if err := json.Unmarshal(res.Body, &tok); err != nil || tok.AccessToken == "" || tok.Subject != "alice" {
		t.Fatalf("tokens %s (%v)", res.Body, err)
	}
	if cc := res.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control %q, want no-store", cc)
	}
	res = e.do(t, http.MethodGet, "/me", "", bearer(tok.AccessToken))
	want(t, res, http.StatusOK, "GET /me with the view's token")
	if !strings.Contains(string(res.Body), `"acme"`) || !strings.Contains(string(res.Body), `"alice"`) {
		t.Errorf("GET /me = %s", res.Body)
	}

	// Client mistakes are 4xx in the one error shape.
	for _, tc := range []struct {
		name, body string
		status     int
	}{
		{"not JSON", `code=1`, http.StatusBadRequest},
		{"no verifier", `{"code":"x","redirectUri":"` + redirect + `","nonce":"` + nonce + `"}`, http.StatusBadRequest},
		{"foreign redirect", `{"code":"x","codeVerifier":"` + verifier + `","redirectUri":"https://evil.example/cb","nonce":"` + nonce + `"}`, http.StatusBadRequest},
	} {
		want(t, e.do(t, http.MethodPost, "/ui/oidc/token", tc.body), tc.status, tc.name)
	}
	req := e.client.NewRequest(t, http.MethodPost, "/ui/oidc/token", strings.NewReader(body("x", verifier)))
	req.Header.Set("Content-Type", "text/plain")
	if res := e.client.Do(t, req); res.Status != http.StatusUnsupportedMediaType {
		t.Errorf("a text/plain body: %d, want 415", res.Status)
	}
}

func TestUIOIDCOff(t *testing.T) {
	e := newEnv(t, withOIDC())
	want(t, e.do(t, http.MethodGet, "/ui/oidc/config", ""), http.StatusNotFound, "no client id")
	want(t, e.do(t, http.MethodPost, "/ui/oidc/token", `{}`), http.StatusNotFound, "no client id")

	cfg := config.Defaults()
	cfg.UIOIDCClientID = "svc-ui" // without OIDC_ISSUER
	if _, err := api.NewServer(api.Options{Store: openStore(t), Config: cfg}); err == nil {
		t.Error("NewServer with SVC_UI_OIDC_CLIENT_ID and no OIDC_ISSUER: nil error")
	}
}
