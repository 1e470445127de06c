package sqlstore

import (
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	_ "modernc.org/sqlite" // registers "sqlite"

	"svc/internal/platform/derrors"
	"svc/migrations"
	"svc/store"
)

var errRetry = errors.New("retry me")

// fakeDialect is SQLite's behaviour with a retryable error of our choosing,
// so the retry loop can be driven exactly.
type fakeDialect struct{}

func (fakeDialect) Name() string                                    { return "fake" }
func (fakeDialect) IsUniqueViolation(error) bool                    { return false }
func (fakeDialect) IsRetryable(err error) bool                      { return errors.Is(err, errRetry) }
func (fakeDialect) TimeArg(t time.Time) any                         { return t.UTC().Format("2006-01-02T15:04:05.000000Z") }
func (fakeDialect) EventLockSQL() string                            { return "" }
func (fakeDialect) JSONNumberSQL(col string, path ...string) string { return col }

func (fakeDialect) RegistrySeqSQL() string {
	return "(SELECT coalesce(max(seq), 0) + 1 FROM registry_versions)"
}

func newDB(t *testing.T, maxAttempts int) *DB {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "t.db")+"?_pragma=journal_mode(WAL)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	if _, err := migrations.Apply(t.Context(), db, migrations.SQLite); err != nil {
		t.Fatal(err)
	}
	return New(fakeDialect{}, db, db, Options{MaxAttempts: maxAttempts})
}

func TestTransactRetries(t *testing.T) {
	for _, tc := range []struct {
		name      string
		failures  int   // attempts that fail with fail before one succeeds
		fail      error // the error of a failing attempt
		wantCalls int
		wantErr   []error // errors.Is targets; none means success
	}{
		{"success first time", 0, errRetry, 1, nil},
		{"retryable then success", 2, errRetry, 3, nil},
		{"retryable until the bound", 100, errRetry, 4, []error{errRetry, derrors.ErrUnavailable}},
		{"not retryable", 100, derrors.ErrConflict, 1, []error{derrors.ErrConflict}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := newDB(t, 4)
			calls := 0
			err := db.Transact(t.Context(), func(tx store.Tx) error {
				calls++
				// Each attempt writes; only the committed one may remain.
				if _, err := tx.AppendEvent(t.Context(), store.Event{Workspace: "w", Type: "attempt"}); err != nil {
					return err
				}
				if calls <= tc.failures {
					return tc.fail
				}
				return nil
			})
			if calls != tc.wantCalls {
				t.Errorf("fn ran %d times, want %d", calls, tc.wantCalls)
			}
			for _, target := range tc.wantErr {
				if !errors.Is(err, target) {
					t.Errorf("err = %v, want it to be %v", err, target)
				}
			}
			if len(tc.wantErr) == 0 && err != nil {
				t.Errorf("err = %v, want success", err)
			}
			es, lerr := db.ListEvents(t.Context(), store.EventFilter{Workspace: "w"})
			if lerr != nil {
				t.Fatal(lerr)
			}
			want := 0
			if len(tc.wantErr) == 0 {
				want = 1
			}
			if len(es) != want {
				t.Errorf("%d events stored, want %d (failed attempts rolled back)", len(es), want)
			}
		})
	}
}

func TestTransactDoesNotRetryPanics(t *testing.T) {
	db := newDB(t, 4)
	calls := 0
	func() {
		defer func() { _ = recover() }()
		_ = db.Transact(t.Context(), func(store.Tx) error {
			calls++
			panic(errRetry)
		})
	}()
	if calls != 1 {
		t.Errorf("fn ran %d times, want 1", calls)
	}
}

func TestBackoffIsBounded(t *testing.T) {
	for attempt := 1; attempt <= 20; attempt++ {
		d := backoff(attempt)
		if d <= 0 || d > 100*time.Millisecond {
			t.Errorf("backoff(%d) = %v, want in (0, 100ms]", attempt, d)
		}
	}
}
