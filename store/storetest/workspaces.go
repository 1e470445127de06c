package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/internal/platform/derrors"
	"svc/store"
)

// createWorkspace creates a workspace named after its id or fails t.
func createWorkspace(t *testing.T, tx store.Tx, id string) store.Workspace {
	t.Helper()
	w, err := tx.CreateWorkspace(t.Context(), store.Workspace{ID: id, Name: "Workspace " + id})
	if err != nil {
		t.Fatalf("CreateWorkspace(%q): %v", id, err)
	}
	return w
}

var workspaceCases = []Case{
	{"workspaces/create_then_get", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		before := time.Now().UTC().Truncate(time.Microsecond)
		w, err := s.CreateWorkspace(ctx, store.Workspace{ID: "acme", Name: "Acme", CreatedBy: "alice"})
		if err != nil {
			t.Fatal(err)
		}
		after := time.Now()
		if w.CreatedAt.Before(before) || w.CreatedAt.After(after) {
			t.Errorf("CreatedAt = %v, want the time of the call, between %v and %v", w.CreatedAt, before, after)
		}
		if w.CreatedAt.Location() != time.UTC || w.CreatedAt.Nanosecond()%1000 != 0 {
			t.Errorf("CreatedAt = %v, want UTC to the microsecond", w.CreatedAt)
		}
		want := store.Workspace{ID: "acme", Name: "Acme", CreatedBy: "alice", CreatedAt: w.CreatedAt}
		if diff := cmp.Diff(want, w); diff != "" {
			t.Errorf("CreateWorkspace (-want +got):\n%s", diff)
		}
		got, err := s.GetWorkspace(ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("GetWorkspace (-want +got):\n%s", diff)
		}
	}},
	{"workspaces/created_at_kept_in_utc_to_the_microsecond", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		in := time.Date(2024, 2, 29, 23, 59, 58, 123456789, time.FixedZone("CET", 3600))
		w, err := s.CreateWorkspace(ctx, store.Workspace{ID: "w", Name: "W", CreatedAt: in})
		if err != nil {
			t.Fatal(err)
		}
		want := time.Date(2024, 2, 29, 22, 59, 58, 123456000, time.UTC)
		got, err := s.GetWorkspace(ctx, "w")
		if err != nil {
			t.Fatal(err)
		}
		for what, ts := range map[string]time.Time{"returned": w.CreatedAt, "stored": got.CreatedAt} {
			// == and not Equal: the location must be UTC too.
			if ts != want {
				t.Errorf("%s CreatedAt = %v, want %v", what, ts, want)
			}
		}
	}},
	{"workspaces/duplicate_id_is_conflict", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		first := createWorkspace(t, s, "acme")
		_, err := s.CreateWorkspace(ctx, store.Workspace{ID: "acme", Name: "Other"})
		wantErr(t, "second CreateWorkspace", err, derrors.ErrConflict)
		got, err := s.GetWorkspace(ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(first, got); diff != "" {
			t.Errorf("the stored workspace changed (-want +got):\n%s", diff)
		}
	}},
	{"workspaces/empty_id_is_invalid", func(t *testing.T, s store.Store) {
		_, err := s.CreateWorkspace(t.Context(), store.Workspace{Name: "No id"})
		wantErr(t, "CreateWorkspace", err, derrors.ErrInvalid)
	}},
	{"workspaces/get_missing_is_not_found", func(t *testing.T, s store.Store) {
		_, err := s.GetWorkspace(t.Context(), "nope")
		wantErr(t, "GetWorkspace", err, derrors.ErrNotFound)
	}},
	{"workspaces/list", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		// Byte order, whatever the database's collation: "B" < "_x" < "a".
		ws := map[string]store.Workspace{}
		for _, id := range []string{"a", "_x", "B", "c"} {
			ws[id] = createWorkspace(t, s, id)
		}
		for _, tc := range []struct {
			name string
			ids  []string
			want []string
		}{
			{"nil lists all", nil, []string{"B", "_x", "a", "c"}},
			{"some, any order, unknown skipped", []string{"c", "missing", "B"}, []string{"B", "c"}},
			{"duplicates once", []string{"a", "a"}, []string{"a"}},
			{"empty lists none", []string{}, []string{}},
		} {
			got, err := s.ListWorkspaces(ctx, tc.ids)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			want := []store.Workspace{}
			for _, id := range tc.want {
				want = append(want, ws[id])
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s: ListWorkspaces(%q) (-want +got):\n%s", tc.name, tc.ids, diff)
			}
		}
	}},
	{"workspaces/list_many_ids", func(t *testing.T, s store.Store) {
		// More ids than one statement should carry.
		ctx := t.Context()
		const n = 1200
		var ids []string
		err := s.Transact(ctx, func(tx store.Tx) error {
			ids = nil
			for i := range n {
				id := fmt.Sprintf("w%04d", n-i) // created in reverse order
				if _, err := tx.CreateWorkspace(ctx, store.Workspace{ID: id}); err != nil {
					return err
				}
				ids = append(ids, id)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.ListWorkspaces(ctx, append(ids, "missing"))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != n {
			t.Fatalf("ListWorkspaces returned %d workspaces, want %d", len(got), n)
		}
		if !slices.IsSortedFunc(got, func(a, b store.Workspace) int { return strings.Compare(a.ID, b.ID) }) {
			t.Error("ListWorkspaces is not ordered by id")
		}
	}},
	{"workspaces/list_empty_store", func(t *testing.T, s store.Store) {
		got, err := s.ListWorkspaces(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 0 {
			t.Errorf("ListWorkspaces on an empty store = %v, want none", got)
		}
	}},
}
