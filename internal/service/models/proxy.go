package models

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"svc/internal/domain/modelproxy"
	"svc/internal/platform/derrors"
	"svc/store"
)

// A code judge that names a model calls it through the control plane's
// model proxy (POST /judge-proxy/v1/chat/completions), never with the
// key: the worker mints a proxy token for one judge execution, gives it
// to the judge in place of an API key, and revokes it when the judge ends.
// A token is worthless outside that execution: it names one workspace,
// one binding, one judge and one run, expires with the judge's timeout,
// and only its SHA-256 is stored (looked up by it, compared in constant
// time).

// ProxyTokenKind is the registry table kind of a proxy grant; its id is
// the hex SHA-256 of the token, its one version "1".
const ProxyTokenKind = "judge-proxy-token"

// proxyTokenPrefix begins every proxy token.
const proxyTokenPrefix = "jpt_"

// ProxyGrant is what a proxy token allows (the domain's modelproxy.Grant,
// which the worker names too).
type ProxyGrant = modelproxy.Grant

// MintProxyToken stores a grant and returns its token. The token goes to
// the judge only (as its API key); never log or record it.
func (s *Service) MintProxyToken(ctx context.Context, g ProxyGrant) (string, error) {
	if g.Workspace == "" || g.Model == "" || (g.JudgeID == "") == (g.Harness == "") || g.RunID == "" || g.ExpiresAt.IsZero() {
		return "", derrors.Invalidf("models.MintProxyToken: an incomplete grant (a workspace, a model, a run, an expiry, and a judge or a harness)")
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("models.MintProxyToken: %w", err)
	}
	token := proxyTokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(g.Workspace)) + "." + base64.RawURLEncoding.EncodeToString(raw)
	g.Hash = tokenHash(token)
	g.ExpiresAt = g.ExpiresAt.UTC()
	spec, err := json.Marshal(g)
	if err != nil {
		return "", fmt.Errorf("models.MintProxyToken: %w", err)
	}
	sum := sha256.Sum256(spec)
	if _, _, err := s.Store.RegisterVersion(ctx, store.EntityVersion{Kind: ProxyTokenKind, Owner: g.Workspace, ID: g.Hash,
		Version: "1", Digest: "sha256:" + hex.EncodeToString(sum[:]), Spec: spec, CreatedBy: g.Actor(), CreatedAt: s.now()}, "", nil); err != nil {
		return "", fmt.Errorf("models.MintProxyToken: %w", err)
	}
	return token, nil
}

// RevokeProxyToken ends a token's grant; a token already revoked or never
// minted is not an error.
func (s *Service) RevokeProxyToken(ctx context.Context, token string) error {
	ws, ok := tokenWorkspace(token)
	if !ok {
		return nil
	}
	err := s.Store.TombstoneVersion(ctx, ProxyTokenKind, ws, tokenHash(token), "1", s.now())
	if errors.Is(err, derrors.ErrNotFound) {
		return nil
	}
	return err
}

// errProxyToken is the one answer to any token that does not open a
// grant, whatever the reason, so a caller learns nothing from it.
var errProxyToken = &derrors.Public{Kind: derrors.ErrUnauthenticated,
	Msg: "the model proxy takes the run-scoped token a judge (OPENAI_API_KEY) or a harness job (the SVC_MODEL_TOKEN entry of its SVC_SECRETS_FILE) was given, valid while the judge or the job runs"}

// OpenProxyToken returns the live grant of token, or an unauthenticated
// error: unknown, revoked, expired or malformed tokens alike.
func (s *Service) OpenProxyToken(ctx context.Context, token string) (ProxyGrant, error) {
	ws, ok := tokenWorkspace(token)
	if !ok {
		return ProxyGrant{}, errProxyToken
	}
	h := tokenHash(token)
	v, err := s.Store.GetVersion(ctx, ProxyTokenKind, ws, h, "1")
	if errors.Is(err, derrors.ErrNotFound) {
		return ProxyGrant{}, errProxyToken
	}
	if err != nil {
		return ProxyGrant{}, err
	}
	var g ProxyGrant
	if err := json.Unmarshal(v.Spec, &g); err != nil {
		return ProxyGrant{}, fmt.Errorf("models.OpenProxyToken: %w", err)
	}
	if subtle.ConstantTimeCompare([]byte(g.Hash), []byte(h)) != 1 || g.Workspace != ws || !s.now().Before(g.ExpiresAt) {
		return ProxyGrant{}, errProxyToken
	}
	return g, nil
}

// tokenHash is the hex SHA-256 of a token.
func tokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// tokenWorkspace reads the workspace a token names.
func tokenWorkspace(token string) (string, bool) {
	rest, ok := strings.CutPrefix(token, proxyTokenPrefix)
	if !ok {
		return "", false
	}
	enc, _, ok := strings.Cut(rest, ".")
	if !ok {
		return "", false
	}
	ws, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil || len(ws) == 0 {
		return "", false
	}
	return string(ws), true
}
