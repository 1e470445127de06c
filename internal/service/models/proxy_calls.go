package models

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"svc/internal/domain/modelproxy"
	"svc/internal/platform/derrors"
	"svc/store"
)

// ProxyCallKind is the registry table kind of one metered proxy call: its
// id is the grant's token hash, its version the call's own id, so the
// calls of one grant are the versions of one entity (ProxyUsage sums
// them when the attempt ends).
const ProxyCallKind = "model-proxy-call"

// ProxyCall is what the proxy metered of one call.
type ProxyCall struct {
	Status       int      `json:"status"`
	InputTokens  int64    `json:"inputTokens"`
	OutputTokens int64    `json:"outputTokens"`
	CostUSD      *float64 `json:"costUsd,omitempty"` // nil: the binding has no prices
}

// ProxyUsage sums the calls made with one token (modelproxy.Usage).
type ProxyUsage = modelproxy.Usage

// RecordProxyCall keeps call under the grant g (opened by the proxy), for
// ProxyUsage.
func (s *Service) RecordProxyCall(ctx context.Context, g ProxyGrant, call ProxyCall) error {
	raw := make([]byte, 8)
	if _, err := rand.Read(raw); err != nil {
		return fmt.Errorf("models.RecordProxyCall: %w", err)
	}
	spec, err := json.Marshal(call)
	if err != nil {
		return fmt.Errorf("models.RecordProxyCall: %w", err)
	}
	sum := sha256.Sum256(append(spec, raw...))
	_, _, err = s.Store.RegisterVersion(ctx, store.EntityVersion{Kind: ProxyCallKind, Owner: g.Workspace, ID: g.Hash,
		Version: hex.EncodeToString(raw), Digest: "sha256:" + hex.EncodeToString(sum[:]), Spec: spec, CreatedBy: g.Actor(), CreatedAt: s.now()}, "", nil)
	if err != nil {
		return fmt.Errorf("models.RecordProxyCall(%q, run %q): %w", g.Workspace, g.RunID, err)
	}
	return nil
}

// ProxyUsage sums the calls recorded under token of workspace; a token
// that made none (or is malformed) sums to zero.
func (s *Service) ProxyUsage(ctx context.Context, token string) (ProxyUsage, error) {
	var u ProxyUsage
	ws, ok := tokenWorkspace(token)
	if !ok {
		return u, nil
	}
	h := tokenHash(token)
	e, err := s.Store.GetEntity(ctx, ProxyCallKind, ws, h)
	if errors.Is(err, derrors.ErrNotFound) {
		return u, nil
	}
	if err != nil {
		return u, fmt.Errorf("models.ProxyUsage: %w", err)
	}
	for _, v := range e.Versions {
		row, err := s.Store.GetVersion(ctx, ProxyCallKind, ws, h, v.Version)
		if errors.Is(err, derrors.ErrNotFound) {
			continue
		}
		if err != nil {
			return u, fmt.Errorf("models.ProxyUsage: %w", err)
		}
		var c ProxyCall
		if err := json.Unmarshal(row.Spec, &c); err != nil {
			return u, fmt.Errorf("models.ProxyUsage: %w", err)
		}
		u.Calls++
		u.InputTokens += c.InputTokens
		u.OutputTokens += c.OutputTokens
		if c.CostUSD != nil {
			u.CostUSD += *c.CostUSD
		}
	}
	return u, nil
}
