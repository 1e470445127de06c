package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/internal/platform/derrors"
	"svc/store"
)

// analysis returns a valid bundle of revision rev of scorecard sc, created
// at at. Its doc is not in canonical form (spacing, key order) so that a
// store that re-encodes it fails the byte-for-byte checks; its digest is
// the doc's.
func analysis(workspace, sc string, rev int, at time.Time) store.Analysis {
	doc := fmt.Sprintf(`{"scorecardId": %q,  "revision": %d, "metrics": {"pass_rate": 0.75, "cases": [3, 1]}}`, sc, rev)
	return store.Analysis{
		Workspace: workspace, ScorecardID: sc, Revision: rev,
		Digest: digestOf(doc), Doc: []byte(doc), CreatedAt: at,
	}
}

// putAnalysis stores a or fails t.
func putAnalysis(t *testing.T, tx store.Tx, a store.Analysis) (store.Analysis, bool) {
	t.Helper()
	got, created, err := tx.PutAnalysis(t.Context(), a)
	if err != nil {
		t.Fatalf("PutAnalysis(%q, %q, %d): %v", a.Workspace, a.ScorecardID, a.Revision, err)
	}
	return got, created
}

// getAnalysis reads a bundle or fails t.
func getAnalysis(t *testing.T, tx store.Tx, workspace, sc string, rev int) store.Analysis {
	t.Helper()
	got, err := tx.GetAnalysis(t.Context(), workspace, sc, rev)
	if err != nil {
		t.Fatalf("GetAnalysis(%q, %q, %d): %v", workspace, sc, rev, err)
	}
	return got
}

// storedAnalysis is a as the store returns it.
func storedAnalysis(a store.Analysis) store.Analysis {
	a.CreatedAt = norm(a.CreatedAt)
	return a
}

var analysisCases = []Case{
	{"analyses/put_then_get_keeps_the_bytes", func(t *testing.T, s store.Store) {
		in := analysis("acme", "sc-1", 1, t0)
		got, created := putAnalysis(t, s, in)
		if !created {
			t.Error("first put: created = false, want true")
		}
		want := storedAnalysis(in)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("PutAnalysis (-want +got):\n%s", diff)
		}
		// Byte for byte (no jsonEqual): the digest must still match what is served.
		stored := getAnalysis(t, s, "acme", "sc-1", 1)
		if diff := cmp.Diff(want, stored); diff != "" {
			t.Errorf("GetAnalysis (-want +got):\n%s", diff)
		}
		if digestOf(string(stored.Doc)) != stored.Digest {
			t.Errorf("the stored doc no longer hashes to the digest %s", stored.Digest)
		}
		now, _ := putAnalysis(t, s, analysis("acme", "sc-1", 2, time.Time{}))
		wantStamped(t, "CreatedAt", now.CreatedAt)
	}},
	{"analyses/a_frozen_bundle_is_never_rewritten", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		first, _ := putAnalysis(t, s, analysis("acme", "sc-1", 1, t0))
		// A retried activity: same digest, later clock.
		got, created := putAnalysis(t, s, analysis("acme", "sc-1", 1, t0.Add(time.Hour)))
		if created {
			t.Error("second put with the same digest: created = true, want false")
		}
		if diff := cmp.Diff(first, got); diff != "" {
			t.Errorf("second put returns (-stored +got):\n%s", diff)
		}
		other := analysis("acme", "sc-1", 1, t0)
		other.Doc = []byte(`{"metrics":{}}`)
		other.Digest = digestOf(string(other.Doc))
		err := s.Transact(ctx, func(tx store.Tx) error {
			_, _, err := tx.PutAnalysis(ctx, other)
			wantErr(t, "PutAnalysis with another digest", err, derrors.ErrConflict)
			// The conflict did not abort the transaction.
			putAnalysis(t, tx, analysis("acme", "sc-1", 2, t0))
			return nil
		})
		if err != nil {
			t.Fatalf("Transact: %v", err)
		}
		if diff := cmp.Diff(first, getAnalysis(t, s, "acme", "sc-1", 1)); diff != "" {
			t.Errorf("GetAnalysis after a refused rewrite (-first +got):\n%s", diff)
		}
		getAnalysis(t, s, "acme", "sc-1", 2)
	}},
	{"analyses/revision_zero_is_the_latest", func(t *testing.T, s store.Store) {
		// Stored out of order, and beside another scorecard with a higher
		// revision: latest means this scorecard's highest revision.
		for _, a := range []store.Analysis{
			analysis("acme", "sc-1", 2, t0),
			analysis("acme", "sc-1", 10, t0),
			analysis("acme", "sc-1", 3, t0.Add(time.Hour)),
			analysis("acme", "sc-2", 20, t0),
			analysis("globex", "sc-1", 30, t0),
		} {
			putAnalysis(t, s, a)
		}
		if diff := cmp.Diff(storedAnalysis(analysis("acme", "sc-1", 10, t0)), getAnalysis(t, s, "acme", "sc-1", 0)); diff != "" {
			t.Errorf("GetAnalysis(revision 0) (-want +got):\n%s", diff)
		}
		if got := getAnalysis(t, s, "acme", "sc-1", 3).Revision; got != 3 {
			t.Errorf("GetAnalysis(revision 3).Revision = %d, want 3", got)
		}
	}},
	{"analyses/not_found", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		putAnalysis(t, s, analysis("acme", "sc-2", 1, t0))
		putAnalysis(t, s, analysis("acme", "sc-2", 3, t0))
		for _, tc := range []struct {
			name string
			sc   string
			rev  int
		}{
			{"no bundle at all, latest", "sc-1", 0},
			{"no bundle at all, revision 1", "sc-1", 1},
			{"a revision not frozen", "sc-2", 2},
			{"a revision above the latest", "sc-2", 4},
		} {
			_, err := s.GetAnalysis(ctx, "acme", tc.sc, tc.rev)
			wantErr(t, "GetAnalysis: "+tc.name, err, derrors.ErrNotFound)
		}
	}},
	{"analyses/workspace_scoping", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		putAnalysis(t, s, analysis("acme", "sc-1", 1, t0))
		for _, rev := range []int{0, 1} {
			_, err := s.GetAnalysis(ctx, "globex", "sc-1", rev)
			wantErr(t, fmt.Sprintf("GetAnalysis(globex, sc-1, %d)", rev), err, derrors.ErrNotFound)
		}
		// globex's scorecard of the same id freezes its own bundle, with
		// another digest, without a conflict.
		mine := analysis("globex", "sc-1", 1, t0)
		mine.Doc = []byte(`{"tenant":"globex"}`)
		mine.Digest = digestOf(string(mine.Doc))
		if _, created := putAnalysis(t, s, mine); !created {
			t.Error("globex's put: created = false, want true")
		}
		if got := getAnalysis(t, s, "acme", "sc-1", 1); got.Digest == mine.Digest {
			t.Errorf("acme's bundle has globex's digest %s", got.Digest)
		}
	}},
	{"analyses/invalid_input", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		bad := func(edit func(a *store.Analysis)) store.Analysis {
			a := analysis("acme", "sc-1", 1, t0)
			edit(&a)
			return a
		}
		for _, tc := range []struct {
			name string
			a    store.Analysis
		}{
			{"revision 0", bad(func(a *store.Analysis) { a.Revision = 0 })},
			{"negative revision", bad(func(a *store.Analysis) { a.Revision = -1 })},
			{"no workspace", bad(func(a *store.Analysis) { a.Workspace = "" })},
			{"no scorecard", bad(func(a *store.Analysis) { a.ScorecardID = "" })},
			{"no digest", bad(func(a *store.Analysis) { a.Digest = "" })},
			{"digest not sha256", bad(func(a *store.Analysis) { a.Digest = "md5:abc" })},
			{"no doc", bad(func(a *store.Analysis) { a.Doc = nil })},
			{"doc not JSON", bad(func(a *store.Analysis) { a.Doc = []byte(`{"metrics":`) })},
			{"doc with a NUL escape", bad(func(a *store.Analysis) { a.Doc = []byte(`{"k":"\u0000"}`) })},
			{"scorecard with NUL", bad(func(a *store.Analysis) { a.ScorecardID = "sc-\x00" })},
		} {
			_, _, err := s.PutAnalysis(ctx, tc.a)
			wantErr(t, "PutAnalysis: "+tc.name, err, derrors.ErrInvalid)
		}
		_, err := s.GetAnalysis(ctx, "acme", "sc-1", -1)
		wantErr(t, "GetAnalysis(revision -1)", err, derrors.ErrInvalid)
		_, err = s.GetAnalysis(ctx, "acme", "sc-1", 0)
		wantErr(t, "GetAnalysis after only invalid puts", err, derrors.ErrNotFound)
	}},
}
