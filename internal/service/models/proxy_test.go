package models_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"svc/internal/platform/derrors"
	"svc/internal/service/models"
	"svc/store/sqlite"
)

// A proxy token opens its grant only: not once re-encoded for another
// workspace, nor past its expiry, nor once revoked; only its hash is
// stored.
func TestProxyTokens(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "svc.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	svc := &models.Service{Store: st, Now: func() time.Time { return now }}
	grant := models.ProxyGrant{Workspace: "ws-a", Model: "grader", JudgeID: "tone", RunID: "run-1", ExpiresAt: now.Add(time.Minute)}
	token, err := svc.MintProxyToken(ctx, grant)
	if err != nil {
		t.Fatal(err)
	}
	g, err := svc.OpenProxyToken(ctx, token)
	if err != nil || g.Workspace != "ws-a" || g.Model != "grader" || g.JudgeID != "tone" || g.RunID != "run-1" {
		t.Fatalf("OpenProxyToken = %+v, %v; want the grant", g, err)
	}
	v, err := st.GetVersion(ctx, models.ProxyTokenKind, "ws-a", g.Hash, "1")
	if err != nil || strings.Contains(string(v.Spec), token) {
		t.Errorf("the stored grant (%v) holds the token, or is not stored by its hash", err)
	}
	unauth := func(what, tok string) {
		t.Helper()
		if _, err := svc.OpenProxyToken(ctx, tok); !errors.Is(err, derrors.ErrUnauthenticated) {
			t.Errorf("%s: err %v, want unauthenticated", what, err)
		}
	}
	// The same secret part under another workspace's name.
	_, secret, _ := strings.Cut(token, ".")
	unauth("another workspace", "jpt_d3MtYg."+secret)
	unauth("not a proxy token", "ak_something")
	unauth("empty", "")
	now = now.Add(2 * time.Minute)
	unauth("expired", token)
	now = now.Add(-2 * time.Minute)
	if err := svc.RevokeProxyToken(ctx, token); err != nil {
		t.Fatal(err)
	}
	unauth("revoked", token)
	if err := svc.RevokeProxyToken(ctx, token); err != nil {
		t.Errorf("revoking twice: %v", err)
	}
}
