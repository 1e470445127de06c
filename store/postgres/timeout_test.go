package postgres

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"svc/internal/testing/testwait"
	"svc/store/pgtest"
)

// Issue 36 item 7 (deadlines everywhere): every session of the store
// carries statement_timeout, so a statement that runs past it (stuck on a
// lock, a plan gone wrong) is cancelled by PostgreSQL with an error that
// says so, on the plain pool and on the keyed transactions' pool alike,
// and the connection is usable again.
func TestStatementPastTheTimeoutIsCancelled(t *testing.T) {
	s, err := OpenWith(t.Context(), pgtest.URL(t), Options{StatementTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	check := func(name string, run func(ctx context.Context) error) {
		t.Helper()
		start := time.Now()
		err := run(t.Context())
		took := time.Since(start)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "57014" || !strings.Contains(err.Error(), "statement timeout") {
			t.Fatalf("%s: pg_sleep(30) past a 200ms statement_timeout: err = %v, want SQLSTATE 57014 saying \"statement timeout\"", name, err)
		}
		if took > 10*time.Second {
			t.Fatalf("%s: cancelled after %v, want about 200ms", name, took)
		}
	}
	check("pool", func(ctx context.Context) error {
		_, err := s.db.ExecContext(ctx, `SELECT pg_sleep(30)`)
		return err
	})
	check("keyed transactions' pool", func(ctx context.Context) error {
		_, err := s.keyed.ExecContext(ctx, `SELECT pg_sleep(30)`)
		return err
	})
	check("pgx pool", func(ctx context.Context) error {
		_, err := s.Pool().Exec(ctx, `SELECT pg_sleep(30)`)
		return err
	})
	// A statement within the bound runs, on the same pool.
	var one int
	if err := s.db.QueryRowContext(t.Context(), `SELECT 1 FROM pg_sleep(0.01)`).Scan(&one); err != nil || one != 1 {
		t.Fatalf("a short statement after the cancelled ones: %d, %v", one, err)
	}
}

// The setting's value reaches the sessions: Open's default, an explicit
// one, 0 (off), and a statement_timeout in the URL, which wins.
func TestStatementTimeoutSetting(t *testing.T) {
	url := pgtest.URL(t)
	show := func(s *Store) (pool, keyed string) {
		t.Helper()
		if err := s.db.QueryRowContext(t.Context(), `SHOW statement_timeout`).Scan(&pool); err != nil {
			t.Fatal(err)
		}
		if err := s.keyed.QueryRowContext(t.Context(), `SHOW statement_timeout`).Scan(&keyed); err != nil {
			t.Fatal(err)
		}
		return pool, keyed
	}
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	for _, tc := range []struct {
		name string
		open func() (*Store, error)
		want string
	}{
		{"default", func() (*Store, error) { return Open(t.Context(), url) }, "1min"},
		{"explicit", func() (*Store, error) { return OpenWith(t.Context(), url, Options{StatementTimeout: 90 * time.Second}) }, "90s"},
		{"off", func() (*Store, error) { return OpenWith(t.Context(), url, Options{}) }, "0"},
		{"URL wins", func() (*Store, error) {
			return OpenWith(t.Context(), url+sep+"statement_timeout=5000", Options{StatementTimeout: time.Second})
		}, "5s"},
	} {
		s, err := tc.open()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		pool, keyed := show(s)
		s.Close()
		if pool != tc.want || keyed != tc.want {
			t.Errorf("%s: statement_timeout = %q (pool), %q (keyed), want %q", tc.name, pool, keyed, tc.want)
		}
	}
}

// Migrations run without statement_timeout: here Migrate waits for the
// migration lock, held by another session, far longer than the store's
// 100ms bound, and still applies them once the lock is let go.
func TestMigrateRunsWithoutTheStatementTimeout(t *testing.T) {
	s, err := OpenWith(t.Context(), pgtest.URL(t), Options{StatementTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	holder, err := s.Pool().Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	const advisoryLockKey int64 = 0x7376632d6d696772 // migrations' lock
	if _, err := holder.Exec(t.Context(), `SELECT pg_advisory_lock($1)`, advisoryLockKey); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.Migrate(t.Context())
		done <- err
	}()
	// Let go of the lock once Migrate has waited for it past the bound.
	testwait.Until(t, 30*time.Second, "Migrate to wait for the migration lock", func() bool {
		var n int
		if err := holder.QueryRow(t.Context(), `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n > 0
	})
	// Not a wait for work: the proof that Migrate outlives five times
	// the statement bound while it waits.
	timer := time.NewTimer(500 * time.Millisecond) // five times the statement bound
	select {
	case err := <-done:
		t.Fatalf("Migrate returned while the lock was held: %v", err)
	case <-timer.C:
	}
	if _, err := holder.Exec(t.Context(), `SELECT pg_advisory_unlock($1)`, advisoryLockKey); err != nil {
		t.Fatal(err)
	}
	holder.Release()
	if err := <-done; err != nil {
		t.Fatalf("Migrate after waiting for the lock past the statement bound: %v", err)
	}
}
