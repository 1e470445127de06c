package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/internal/platform/derrors"
	"svc/store"
)

var errAbort = errors.New("storetest: abort")

// wantNoWorkspace fails t if workspace id exists.
func wantNoWorkspace(t *testing.T, s store.Store, id string) {
	t.Helper()
	_, err := s.GetWorkspace(t.Context(), id)
	wantErr(t, "GetWorkspace("+id+") after rollback", err, derrors.ErrNotFound)
}

var transactCases = []Case{
	{"transact/keyed_no_lost_update", func(t *testing.T, s store.Store) {
		// Read, change, write one row from many keyed transactions at
		// once: every increment lands (PostgreSQL's REPEATABLE READ fails
		// all but one writer of a row, and TransactKeyed retries them).
		ctx := t.Context()
		createWorkspace(t, s, "acme")
		r := topRun("acme", "run-keyed", time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC))
		r.Doc = []byte(`{"n": 0}`)
		createRun(t, s, r)
		const writers = 8
		var wg sync.WaitGroup
		errs := make([]error, writers)
		for i := range writers {
			wg.Go(func() {
				errs[i] = s.TransactKeyed(ctx, func(tx store.Tx) error {
					cur, err := tx.GetRun(ctx, "acme", "run-keyed")
					if err != nil {
						return err
					}
					var d struct{ N int }
					if err := json.Unmarshal(cur.Doc, &d); err != nil {
						return err
					}
					cur.Doc = []byte(fmt.Sprintf(`{"n": %d}`, d.N+1))
					_, err = tx.PutRun(ctx, cur)
					return err
				})
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("writer %d: %v", i, err)
			}
		}
		got, err := s.GetRun(ctx, "acme", "run-keyed")
		if err != nil {
			t.Fatal(err)
		}
		if !sameJSON(got.Doc, []byte(fmt.Sprintf(`{"n": %d}`, writers))) {
			t.Errorf("after %d keyed increments the doc is %s", writers, got.Doc)
		}
		// And it rolls back on an error.
		err = s.TransactKeyed(ctx, func(tx store.Tx) error {
			createWorkspace(t, tx, "other")
			return errAbort
		})
		wantErr(t, "TransactKeyed", err, errAbort)
		wantNoWorkspace(t, s, "other")
	}},
	{"transact/commits", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		var e store.Event
		err := s.Transact(ctx, func(tx store.Tx) error {
			if _, err := tx.CreateWorkspace(ctx, store.Workspace{ID: "acme", Name: "Acme"}); err != nil {
				return err
			}
			var err error
			e, err = tx.AppendEvent(ctx, store.Event{Workspace: "acme", Type: "workspace.created"})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetWorkspace(ctx, "acme"); err != nil {
			t.Errorf("GetWorkspace after commit: %v", err)
		}
		if diff := cmp.Diff([]store.Event{e}, listEvents(t, s, store.EventFilter{Workspace: "acme"}), jsonEqual); diff != "" {
			t.Errorf("events after commit (-want +got):\n%s", diff)
		}
	}},
	{"transact/rolls_back_on_error", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		err := s.Transact(ctx, func(tx store.Tx) error {
			createWorkspace(t, tx, "acme")
			appendEvent(t, tx, store.Event{Workspace: "acme", Type: "workspace.created"})
			return fmt.Errorf("step two: %w", errAbort)
		})
		wantErr(t, "Transact", err, errAbort)
		wantNoWorkspace(t, s, "acme")
		if got := listEvents(t, s, store.EventFilter{Workspace: "acme"}); len(got) != 0 {
			t.Errorf("events after rollback: %+v, want none", got)
		}
	}},
	{"transact/rolls_back_on_panic_and_repanics", func(t *testing.T, s store.Store) {
		var recovered any
		func() {
			defer func() { recovered = recover() }()
			_ = s.Transact(t.Context(), func(tx store.Tx) error {
				createWorkspace(t, tx, "acme")
				panic("boom")
			})
		}()
		if recovered != "boom" {
			t.Fatalf("recovered %v, want the panic value \"boom\"", recovered)
		}
		wantNoWorkspace(t, s, "acme")
		// The connection the panic abandoned must be usable again.
		createWorkspace(t, s, "after")
		if err := s.Transact(t.Context(), func(tx store.Tx) error {
			_, err := tx.CreateWorkspace(t.Context(), store.Workspace{ID: "after2"})
			return err
		}); err != nil {
			t.Fatalf("Transact after a panic: %v", err)
		}
	}},
	{"transact/tx_reads_its_own_writes", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		createWorkspace(t, s, "before")
		err := s.Transact(ctx, func(tx store.Tx) error {
			w := createWorkspace(t, tx, "acme")
			got, err := tx.GetWorkspace(ctx, "acme")
			if err != nil {
				return err
			}
			if diff := cmp.Diff(w, got); diff != "" {
				t.Errorf("GetWorkspace in tx (-want +got):\n%s", diff)
			}
			ws, err := tx.ListWorkspaces(ctx, nil)
			if err != nil {
				return err
			}
			if len(ws) != 2 {
				t.Errorf("ListWorkspaces in tx = %+v, want before and acme", ws)
			}
			e := appendEvent(t, tx, store.Event{Workspace: "acme", Type: "workspace.created"})
			again := appendEvent(t, tx, store.Event{ID: e.ID, Workspace: "acme", Type: "workspace.created"})
			if again.Seq != e.Seq {
				t.Errorf("re-append in tx got seq %d, want the first's %d", again.Seq, e.Seq)
			}
			if got := listEvents(t, tx, store.EventFilter{Workspace: "acme"}); len(got) != 1 {
				t.Errorf("ListEvents in tx = %+v, want the one event", got)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}},
	{"transact/errors_inside_leave_the_tx_usable", func(t *testing.T, s store.Store) {
		// A conflict or a miss is an answer, not a broken transaction
		// (PostgreSQL would abort the transaction on a failed statement).
		ctx := t.Context()
		createWorkspace(t, s, "taken")
		err := s.Transact(ctx, func(tx store.Tx) error {
			_, err := tx.CreateWorkspace(ctx, store.Workspace{ID: "taken"})
			wantErr(t, "CreateWorkspace(taken) in tx", err, derrors.ErrConflict)
			_, err = tx.GetWorkspace(ctx, "missing")
			wantErr(t, "GetWorkspace(missing) in tx", err, derrors.ErrNotFound)
			_, err = tx.CreateWorkspace(ctx, store.Workspace{ID: "fresh"})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetWorkspace(ctx, "fresh"); err != nil {
			t.Errorf("GetWorkspace(fresh) after commit: %v", err)
		}
	}},
	{"transact/cancelled_context", func(t *testing.T, s store.Store) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		ran := false
		err := s.Transact(ctx, func(tx store.Tx) error {
			ran = true
			_, err := tx.CreateWorkspace(ctx, store.Workspace{ID: "acme"})
			return err
		})
		if err == nil {
			t.Fatalf("Transact with a cancelled context succeeded (fn ran: %v)", ran)
		}
		wantNoWorkspace(t, s, "acme")
	}},
	{"concurrency/writers_all_succeed", func(t *testing.T, s store.Store) {
		// Autocommit appends and whole transactions from several goroutines
		// at once: none may fail (on SQLite: no SQLITE_BUSY).
		ctx := t.Context()
		const writers, each = 8, 25
		var wg sync.WaitGroup
		errs := make(chan error, writers*each*2)
		for g := range writers {
			wg.Go(func() {
				for i := range each {
					if _, err := s.AppendEvent(ctx, store.Event{ID: fmt.Sprintf("evt_%d_%d", g, i), Workspace: "acme", Type: "a.happened"}); err != nil {
						errs <- err
					}
					err := s.Transact(ctx, func(tx store.Tx) error {
						id := fmt.Sprintf("ws_%d_%d", g, i)
						if _, err := tx.CreateWorkspace(ctx, store.Workspace{ID: id}); err != nil {
							return err
						}
						_, err := tx.AppendEvent(ctx, store.Event{Workspace: id, Type: "workspace.created"})
						return err
					})
					if err != nil {
						errs <- err
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		got := listEvents(t, s, store.EventFilter{Workspace: "acme", Limit: 1000})
		if len(got) != writers*each {
			t.Errorf("acme has %d events, want %d", len(got), writers*each)
		}
		ss := seqs(got)
		if !slices.IsSorted(ss) || len(slices.Compact(slices.Clone(ss))) != len(ss) {
			t.Errorf("seqs are not strictly increasing: %v", ss)
		}
		ws, err := s.ListWorkspaces(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(ws) != writers*each {
			t.Errorf("%d workspaces, want %d", len(ws), writers*each)
		}
	}},
	{"concurrency/transactions_are_serializable", func(t *testing.T, s store.Store) {
		// Each transaction reads the count of events and appends one that
		// carries it. If transactions were not serializable, two would read
		// the same count and the numbers would repeat.
		ctx := t.Context()
		const workers, each = 4, 5
		var wg sync.WaitGroup
		errs := make(chan error, workers*each)
		for range workers {
			wg.Go(func() {
				for range each {
					err := s.Transact(ctx, func(tx store.Tx) error {
						es, err := tx.ListEvents(ctx, store.EventFilter{Workspace: "acme", Limit: 1000})
						if err != nil {
							return err
						}
						_, err = tx.AppendEvent(ctx, store.Event{Workspace: "acme", Type: "counter", Data: json.RawMessage(fmt.Sprint(len(es)))})
						return err
					})
					if err != nil {
						errs <- err
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		var got []int
		for _, e := range listEvents(t, s, store.EventFilter{Workspace: "acme", Limit: 1000}) {
			var n int
			if err := json.Unmarshal(e.Data, &n); err != nil {
				t.Fatal(err)
			}
			got = append(got, n)
		}
		var want []int
		for i := range workers * each {
			want = append(want, i)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("counts seen by the transactions, in commit order (-want +got):\n%s", diff)
		}
	}},
}
