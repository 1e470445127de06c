package activities

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"svc/auth"
	"svc/internal/domain/registry"
	"svc/internal/platform/secrets"
	"svc/internal/service/registries"
	"svc/store"
	"svc/store/sqlite/sqlitetest"
)

// txCountingStore counts the transactions the registry opens: one per
// harness resolution.
type txCountingStore struct {
	store.Store
	n atomic.Int64
}

func (c *txCountingStore) Transact(ctx context.Context, fn func(tx store.Tx) error) error {
	c.n.Add(1)
	return c.Store.Transact(ctx, fn)
}

// A batch's first round of cases finds the harness memo empty at once:
// they share one resolution, and the next one happens only once it has
// expired.
func TestHarnessMemoSharesOneResolution(t *testing.T) {
	ctx := t.Context()
	st := &txCountingStore{Store: sqlitetest.New(t)}
	sealer, err := secrets.NewSealer(base64.StdEncoding.EncodeToString([]byte(strings.Repeat("m", 32))))
	if err != nil {
		t.Fatal(err)
	}
	regs := registries.New(st, sealer, time.Now)
	admin := auth.Principal{Subject: "admin", Workspace: "memo", Roles: []auth.Role{auth.RoleAdmin}, Via: auth.ViaOIDC}
	raw, _ := json.Marshal(map[string]any{"id": "agent", "version": "1.0.0", "kind": "process", "command": []string{"/bin/agent"}})
	if _, err := regs.Register(ctx, admin, registry.Harness, raw, nil); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	now := time.Date(2026, 11, 24, 5, 0, 0, 0, time.UTC)
	a := &Activities{Store: st, Registries: regs, Logger: slog.New(slog.DiscardHandler), Now: func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}}
	memo := &harnessMemo{}
	ref := registry.Ref{ID: "agent", Version: "1.0.0"}
	round := func() {
		t.Helper()
		var wg sync.WaitGroup
		for range 64 {
			wg.Go(func() {
				h, err := a.resolveHarness(ctx, memo, admin, ref)
				if err != nil || h.Version != "1.0.0" {
					t.Errorf("resolveHarness: %+v, %v", h.Version, err)
				}
			})
		}
		wg.Wait()
	}
	st.n.Store(0)
	round()
	if got := st.n.Load(); got != 1 {
		t.Fatalf("64 cases at once resolved the harness %d times, want 1", got)
	}
	round()
	if got := st.n.Load(); got != 1 {
		t.Fatalf("within harnessTTL the harness was resolved again (%d reads)", got)
	}
	mu.Lock()
	now = now.Add(harnessTTL)
	mu.Unlock()
	round()
	if got := st.n.Load(); got != 2 {
		t.Fatalf("after harnessTTL: %d reads, want 2", got)
	}
}
