package ui

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"svc/internal/platform/derrors"
)

// OIDCConfig configures the web view's sign-in with an OIDC issuer: an
// authorization code flow with PKCE for a public client (no secret), the
// browser going to the issuer's authorization endpoint and back to
// /ui/, and the code exchanged through the service (see Exchange).
type OIDCConfig struct {
	// Issuer is the issuer URL (OIDC_ISSUER), the one whose tokens the API
	// accepts.
	Issuer string
	// ClientID is the public client registered at the issuer for the web
	// view (SVC_UI_OIDC_CLIENT_ID), with <public URL>/ui/ as a redirect URI.
	ClientID string
	// Scopes are requested at the authorization endpoint; "openid" is
	// always among them.
	Scopes []string
	// HTTPClient reaches the issuer; a client with a 10 s timeout when nil.
	HTTPClient *http.Client
}

// OIDC is the service's half of the web view's OIDC sign-in: it tells the
// page where to send the user (ClientConfig) and redeems the code the
// issuer sends back (Exchange).
type OIDC struct {
	cfg    OIDCConfig
	client *http.Client

	// sem admits one discovery at a time.
	sem      chan struct{}
	mu       sync.Mutex // guards the fields below
	provider *oidc.Provider
	lastFail time.Time
	lastErr  error
}

// oidcTimeout bounds each call to the issuer; discoveryRetry spaces
// discovery attempts after a failure.
const (
	oidcTimeout    = 10 * time.Second
	discoveryRetry = 5 * time.Second
)

// signingAlgs are the ID token algorithms accepted: asymmetric only, as
// for the API's access tokens (auth/oidc.go), whatever the issuer's
// discovery document advertises.
var signingAlgs = []string{
	oidc.RS256, oidc.RS384, oidc.RS512, oidc.ES256, oidc.ES384, oidc.ES512,
	oidc.PS256, oidc.PS384, oidc.PS512, oidc.EdDSA,
}

// NewOIDC checks cfg; it does not contact the issuer (discovery happens on
// first use and is retried, so the service starts while the issuer is
// down).
func NewOIDC(cfg OIDCConfig) (*OIDC, error) {
	u, err := url.Parse(cfg.Issuer)
	if cfg.Issuer == "" || err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("ui: SVC_UI_OIDC_CLIENT_ID needs OIDC_ISSUER to be an http(s) URL, got %q", cfg.Issuer)
	}
	if strings.TrimSpace(cfg.ClientID) == "" {
		return nil, errors.New("ui: the OIDC client id is empty")
	}
	scopes := []string{oidc.ScopeOpenID}
	for _, s := range cfg.Scopes {
		if s = strings.TrimSpace(s); s != "" && s != oidc.ScopeOpenID {
			scopes = append(scopes, s)
		}
	}
	cfg.Scopes = scopes
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: oidcTimeout}
	}
	return &OIDC{cfg: cfg, client: client, sem: make(chan struct{}, 1)}, nil
}

// ClientConfig is what the sign-in page needs to start the flow.
type ClientConfig struct {
	Issuer                string   `json:"issuer"`
	ClientID              string   `json:"clientId"`
	AuthorizationEndpoint string   `json:"authorizationEndpoint"`
	Scopes                []string `json:"scopes"`
}

// ClientConfig returns the issuer's authorization endpoint and the client
// settings, running discovery if it has not succeeded yet.
func (o *OIDC) ClientConfig(ctx context.Context) (ClientConfig, error) {
	p, err := o.discover(ctx)
	if err != nil {
		return ClientConfig{}, err
	}
	return ClientConfig{Issuer: o.cfg.Issuer, ClientID: o.cfg.ClientID,
		AuthorizationEndpoint: p.Endpoint().AuthURL, Scopes: o.cfg.Scopes}, nil
}

func (o *OIDC) discover(ctx context.Context) (*oidc.Provider, error) {
	if p, err := o.cached(); p != nil || err != nil {
		return p, err
	}
	select {
	case o.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, derrors.Unavailablef("waiting for OIDC discovery at %s", o.cfg.Issuer)
	}
	defer func() { <-o.sem }()
	if p, err := o.cached(); p != nil || err != nil {
		return p, err
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), oidcTimeout)
	defer cancel()
	p, err := oidc.NewProvider(oidc.ClientContext(dctx, o.client), o.cfg.Issuer)
	o.mu.Lock()
	defer o.mu.Unlock()
	if err == nil && (p.Endpoint().AuthURL == "" || p.Endpoint().TokenURL == "") {
		err = errors.New("the discovery document names no authorization or token endpoint")
	}
	if err != nil {
		o.lastFail, o.lastErr = time.Now(), err
		return nil, derrors.Unavailablef("OIDC issuer %s cannot be reached for sign-in; try again shortly", o.cfg.Issuer)
	}
	o.provider = p
	return p, nil
}

func (o *OIDC) cached() (*oidc.Provider, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.provider != nil {
		return o.provider, nil
	}
	if o.lastErr != nil && time.Since(o.lastFail) < discoveryRetry {
		return nil, derrors.Unavailablef("OIDC issuer %s cannot be reached for sign-in; try again shortly", o.cfg.Issuer)
	}
	return nil, nil
}

// TokenRequest is the page's request to redeem a code: what the issuer
// sent back to /ui/, the PKCE verifier and the nonce the page made before
// leaving, and the redirect URI it used.
type TokenRequest struct {
	Code         string `json:"code"`
	CodeVerifier string `json:"codeVerifier"`
	RedirectURI  string `json:"redirectUri"`
	Nonce        string `json:"nonce"`
}

// MaxTokenRequest bounds a TokenRequest body.
const MaxTokenRequest = 16 << 10

// verifierRE is RFC 7636 §4.1's code_verifier; nonces are held to the
// same alphabet (the page makes both the same way).
var verifierRE = regexp.MustCompile(`^[A-Za-z0-9._~-]{43,128}$`)

// DecodeTokenRequest reads and checks a TokenRequest; every mistake is an
// ErrInvalid naming the field to fix.
func DecodeTokenRequest(body []byte) (TokenRequest, error) {
	var r TokenRequest
	if len(body) > MaxTokenRequest {
		return r, derrors.Invalidf("the token request is larger than %d bytes", MaxTokenRequest)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return TokenRequest{}, derrors.Invalidf("the token request is not a JSON object of code, codeVerifier, redirectUri and nonce: %v", err)
	}
	if dec.More() {
		return TokenRequest{}, derrors.Invalidf("the token request has data after its JSON object")
	}
	switch {
	case r.Code == "" || len(r.Code) > 4096 || strings.ContainsFunc(r.Code, func(c rune) bool { return c < 0x21 || c > 0x7e }):
		return TokenRequest{}, derrors.Invalidf("code: want the code the issuer sent back (1 to 4096 printable ASCII characters)")
	case !verifierRE.MatchString(r.CodeVerifier):
		return TokenRequest{}, derrors.Invalidf("codeVerifier: want 43 to 128 characters of A-Z a-z 0-9 - . _ ~ (RFC 7636)")
	case !verifierRE.MatchString(r.Nonce):
		return TokenRequest{}, derrors.Invalidf("nonce: want 43 to 128 characters of A-Z a-z 0-9 - . _ ~")
	}
	u, err := url.Parse(r.RedirectURI)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != Prefix || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return TokenRequest{}, derrors.Invalidf("redirectUri: want this service's web view, an http(s) URL whose path is %s with no query", Prefix)
	}
	return r, nil
}

// Tokens is what the page keeps: the access token it sends to the API.
// The ID token has been checked here and is not passed on; a refresh
// token, if the issuer sent one, is dropped (the sign-in lasts as long as
// the access token, in one tab).
type Tokens struct {
	AccessToken string `json:"accessToken"`
	ExpiresIn   int64  `json:"expiresIn,omitempty"`
	Subject     string `json:"subject"`
}

// Exchange redeems the code at the issuer's token endpoint (client id,
// code, redirect URI and PKCE verifier; no secret) and checks the ID token
// that comes back: signature by the issuer's keys, issuer, audience (the
// client id), expiry, and that its nonce is the one the page made.
func (o *OIDC) Exchange(ctx context.Context, r TokenRequest) (Tokens, error) {
	p, err := o.discover(ctx)
	if err != nil {
		return Tokens{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, oidcTimeout)
	defer cancel()
	ctx = oidc.ClientContext(ctx, o.client)
	conf := oauth2.Config{
		ClientID:    o.cfg.ClientID,
		RedirectURL: r.RedirectURI,
		Endpoint:    oauth2.Endpoint{AuthURL: p.Endpoint().AuthURL, TokenURL: p.Endpoint().TokenURL, AuthStyle: oauth2.AuthStyleInParams},
		Scopes:      o.cfg.Scopes,
	}
	tok, err := conf.Exchange(ctx, r.Code, oauth2.VerifierOption(r.CodeVerifier))
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode >= 400 && re.Response.StatusCode < 500 {
			code := re.ErrorCode
			if code == "" {
				code = re.Response.Status
			}
			return Tokens{}, derrors.Invalidf("the issuer refused the sign-in code (%s); sign in again", code)
		}
		return Tokens{}, derrors.Unavailablef("the OIDC issuer's token endpoint did not answer; try again shortly")
	}
	rawID, _ := tok.Extra("id_token").(string)
	if rawID == "" {
		return Tokens{}, derrors.Invalidf("the issuer sent no ID token: the client must be allowed the openid scope")
	}
	if tok.AccessToken == "" {
		return Tokens{}, derrors.Invalidf("the issuer sent no access token")
	}
	idt, err := p.Verifier(&oidc.Config{ClientID: o.cfg.ClientID, SupportedSigningAlgs: signingAlgs}).Verify(ctx, rawID)
	if err != nil {
		return Tokens{}, fmt.Errorf("%w: the issuer's ID token does not verify: %v", derrors.ErrUnauthenticated, err)
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(r.Nonce)) != 1 {
		return Tokens{}, fmt.Errorf("%w: the ID token's nonce is not this sign-in's; sign in again", derrors.ErrUnauthenticated)
	}
	t := Tokens{AccessToken: tok.AccessToken, Subject: idt.Subject}
	if !tok.Expiry.IsZero() {
		t.ExpiresIn = int64(time.Until(tok.Expiry).Seconds())
	}
	return t, nil
}
