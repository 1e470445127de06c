package storetest

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/store"
)

// sessionCases hold store.Sessions: the live sandbox sessions the
// capacity rule counts, GET /sandboxes lists and a restarted worker
// reconciles (read through runs_live_sessions_idx, migration 0021).
var sessionCases = []Case{
	{"sessions/live_are_running_sandbox_runs_oldest_first_by_workspace", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		session := func(ws, id, status string, at time.Time) store.Run {
			r := topRun(ws, id, at)
			r.Kind, r.Status, r.Audience, r.CaseID = "sandbox", status, "user:alice", ""
			return r
		}
		for _, r := range []store.Run{
			session("acme", "sbx-3", "running", t0.Add(3*time.Minute)),
			session("acme", "sbx-1", "running", t0.Add(time.Minute)),
			session("acme", "sbx-2", "running", t0.Add(2*time.Minute)),
			session("acme", "sbx-done", "succeeded", t0),
			session("acme", "sbx-failed", "failed", t0),
			session("globex", "sbx-g", "running", t0.Add(90*time.Second)),
			func() store.Run { r := topRun("acme", "run-eval", t0); r.Status = "running"; return r }(),
		} {
			createRun(t, s, r)
		}
		live := func(ws string) []string {
			t.Helper()
			rs, err := s.ListLiveSessions(ctx, ws)
			if err != nil {
				t.Fatalf("ListLiveSessions(%q): %v", ws, err)
			}
			for _, r := range rs {
				if len(r.Doc) == 0 {
					t.Errorf("ListLiveSessions(%q): run %s without its doc", ws, r.ID)
				}
			}
			return runIDs(rs)
		}
		if diff := cmp.Diff([]string{"sbx-1", "sbx-2", "sbx-3"}, live("acme")); diff != "" {
			t.Errorf("acme's live sessions (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"sbx-1", "sbx-g", "sbx-2", "sbx-3"}, live("")); diff != "" {
			t.Errorf("every workspace's live sessions (-want +got):\n%s", diff)
		}
		if got := live("initech"); len(got) != 0 {
			t.Errorf("a workspace without sessions lists %v", got)
		}
		// A settled session leaves the list; one in a transaction sees it
		// (the capacity rule counts inside the create's).
		r, err := s.GetRun(ctx, "acme", "sbx-2")
		if err != nil {
			t.Fatal(err)
		}
		r.Status = "succeeded"
		err = s.Transact(ctx, func(tx store.Tx) error {
			if _, err := tx.PutRun(ctx, r); err != nil {
				return err
			}
			rs, err := tx.ListLiveSessions(ctx, "acme")
			if err != nil {
				return err
			}
			if diff := cmp.Diff([]string{"sbx-1", "sbx-3"}, runIDs(rs)); diff != "" {
				t.Errorf("in the transaction that settled sbx-2 (-want +got):\n%s", diff)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"sbx-1", "sbx-3"}, live("acme")); diff != "" {
			t.Errorf("after sbx-2 settled (-want +got):\n%s", diff)
		}
	}},
}
