package registries_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/auth"
	"svc/internal/domain/registry"
	"svc/internal/platform/derrors"
	"svc/internal/service/registries"
	"svc/store"
	"svc/store/pgtest"
	"svc/store/postgres"
	"svc/store/records"
	"svc/store/sqlite"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// backends opens a migrated store of each kind; PostgreSQL is skipped only
// in -short mode (pgtest's rule).
var backends = []struct {
	name string
	open func(t *testing.T) store.Store
}{
	{"sqlite", func(t *testing.T) store.Store {
		s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "svc.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		if _, err := s.Migrate(t.Context()); err != nil {
			t.Fatal(err)
		}
		return s
	}},
	{"postgres", func(t *testing.T) store.Store {
		s, err := postgres.Open(t.Context(), pgtest.URL(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		if _, err := s.Migrate(t.Context()); err != nil {
			t.Fatal(err)
		}
		return s
	}},
}

func judge(version, lang string) []byte {
	return fmt.Appendf(nil, `{"id":"j","version":%q,"kind":"code","language":%q,"code":"print(1)"}`, version, lang)
}

// TestRegisterLatestConflict is the registration happy path on both stores:
// create, idempotent repeat, conflict with both digests, `latest` by
// semver, `_shared` fallback, tags, tombstone and revival, events.
func TestRegisterLatestConflict(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			st := b.open(t)
			now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
			svc := registries.New(st, nil, func() time.Time { return now })
			p := auth.Principal{Subject: "alice", Workspace: "ws1", Roles: []auth.Role{auth.RoleAdmin}, Via: auth.ViaAPIKey}
			ctx := t.Context()

			first, err := svc.Register(ctx, p, registry.Judge, judge("1.9.0", "python"), []byte(`{"via":"ci"}`))
			if err != nil || !first.Created {
				t.Fatalf("first registration: %+v, %v", first, err)
			}
			again, err := svc.Register(ctx, p, registry.Judge, judge("1.9.0", "python"), nil)
			if err != nil || again.Created || again.Digest != first.Digest || string(again.Origin) != `{"via":"ci"}` {
				t.Fatalf("repeat: %+v, %v", again, err)
			}
			_, err = svc.Register(ctx, p, registry.Judge, judge("1.9.0", "node"), nil)
			var ce *registries.ConflictError
			if !errors.As(err, &ce) || ce.StoredDigest != first.Digest || ce.Digest == first.Digest {
				t.Fatalf("conflict: %v", err)
			}
			if _, err := svc.Register(ctx, p, registry.Judge, judge("1.10.0", "python"), nil); err != nil {
				t.Fatal(err)
			}
			doc, err := svc.GetVersion(ctx, p, registry.Judge, "j", "latest", registries.CasePage{})
			if err != nil || doc.Version != "1.10.0" || doc.Owner != "ws1" {
				t.Fatalf("latest: %+v, %v", doc, err)
			}

			// `_shared` fallback.
			spec, err := registry.Parse(registry.Rubric, []byte(`{"id":"r","version":"1","text":"t"}`), true)
			if err != nil {
				t.Fatal(err)
			}
			v, _, err := records.VersionRecord(registry.SharedOwner, spec)
			if err != nil {
				t.Fatal(err)
			}
			v.CreatedAt = now
			if _, _, err := st.RegisterVersion(ctx, v, "", nil); err != nil {
				t.Fatal(err)
			}
			if doc, err := svc.GetVersion(ctx, p, registry.Rubric, "r", "latest", registries.CasePage{}); err != nil || doc.Owner != registry.SharedOwner {
				t.Fatalf("shared fallback: %+v, %v", doc, err)
			}

			// Tags, delete and revival of a dataset.
			ds := []byte(`{"id":"d","version":"1","cases":[{"id":"a","task":"t"}]}`)
			if _, err := svc.Register(ctx, p, registry.Dataset, ds, nil); err != nil {
				t.Fatal(err)
			}
			if tr, err := svc.SetTags(ctx, p, registry.Dataset, "d", "1", []string{" x ", "x", "y"}); err != nil || !cmp.Equal(tr.Tags, []string{"x", "y"}) {
				t.Fatalf("tags: %+v, %v", tr, err)
			}
			if err := svc.DeleteDatasetVersion(ctx, p, "d", "1"); err != nil {
				t.Fatal(err)
			}
			if _, err := svc.GetVersion(ctx, p, registry.Dataset, "d", "1", registries.CasePage{}); err == nil {
				t.Fatal("a tombstoned version is still read")
			}
			if r, err := svc.Register(ctx, p, registry.Dataset, ds, nil); err != nil || r.Created {
				t.Fatalf("revival: %+v, %v", r, err)
			}

			evs, err := st.ListEvents(ctx, store.EventFilter{Workspace: "ws1"})
			if err != nil {
				t.Fatal(err)
			}
			var types []string
			for _, e := range evs {
				types = append(types, e.Type+" "+e.Subject)
			}
			if diff := cmp.Diff([]string{"judge.registered judge:j@1.9.0", "judge.registered judge:j@1.10.0", "dataset.registered dataset:d@1"}, types); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDeletedDatasetStaysWithItsTeam: a dataset whose every version is
// tombstoned still belongs to its team, so a member of another team cannot
// take it over by registering a new version; a member of the team can.
func TestDeletedDatasetStaysWithItsTeam(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			st := b.open(t)
			ctx := t.Context()
			now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
			svc := registries.New(st, nil, func() time.Time { return now })
			admin := auth.Principal{Subject: "alice", Workspace: "ws1", Roles: []auth.Role{auth.RoleAdmin}, Via: auth.ViaOIDC}
			outsider := auth.Principal{Subject: "bob", Workspace: "ws1", Roles: []auth.Role{auth.RoleMember}, Via: auth.ViaOIDC}
			insider := auth.Principal{Subject: "carol", Workspace: "ws1", Roles: []auth.Role{auth.RoleMember}, Via: auth.ViaOIDC}
			for _, m := range []string{"alice", "bob", "carol"} {
				if _, err := st.PutMember(ctx, store.Member{Workspace: "ws1", Subject: m, Role: "member", AddedAt: now}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := st.CreateTeam(ctx, store.Team{ID: "red", Workspace: "ws1", Name: "Red", CreatedAt: now}); err != nil {
				t.Fatal(err)
			}
			if _, err := st.AddTeamMember(ctx, store.TeamMember{Workspace: "ws1", TeamID: "red", Subject: "carol", AddedAt: now}); err != nil {
				t.Fatal(err)
			}

			v1 := []byte(`{"id":"d","version":"1","cases":[{"id":"a","task":"t"}]}`)
			v2 := []byte(`{"id":"d","version":"2","cases":[{"id":"a","task":"t2"}]}`)
			if _, err := svc.Register(ctx, admin, registry.Dataset, v1, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := svc.Move(ctx, admin, registry.Dataset, "d", "red"); err != nil {
				t.Fatalf("move to red: %v", err)
			}
			if err := svc.DeleteDatasetVersion(ctx, admin, "d", "1"); err != nil {
				t.Fatal(err)
			}
			if _, err := svc.Register(ctx, outsider, registry.Dataset, v2, nil); !errors.Is(err, derrors.ErrForbidden) {
				t.Fatalf("another team's member registering a version of red's deleted dataset = %v, want ErrForbidden", err)
			}
			if _, err := svc.Register(ctx, insider, registry.Dataset, v2, nil); err != nil {
				t.Fatalf("red's member registering a new version: %v", err)
			}
		})
	}
}
