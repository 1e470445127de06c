package postgres

import (
	"errors"
	"strings"
	"testing"

	"svc/internal/platform/derrors"
	"svc/store"
	"svc/store/pgtest"
	"svc/store/storetest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// newStore opens a migrated store on a fresh database.
func newStore(t testing.TB) *Store {
	t.Helper()
	s, err := Open(t.Context(), pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return newStore(t) })
}

func TestOpenErrors(t *testing.T) {
	_, err := Open(t.Context(), "postgres://u:secret@127.0.0.1:1/db?connect_timeout=5")
	if !errors.Is(err, derrors.ErrUnavailable) {
		t.Errorf("Open of a closed port: err = %v, want ErrUnavailable", err)
	}
	if err != nil && strings.Contains(err.Error(), "secret") {
		t.Errorf("the error shows the password: %v", err)
	}
	_, err = Open(t.Context(), "postgres://u:secret@[bad")
	if !errors.Is(err, derrors.ErrInvalid) {
		t.Errorf("Open of a malformed URL: err = %v, want ErrInvalid", err)
	}
	if err != nil && strings.Contains(err.Error(), "secret") {
		t.Errorf("the error shows the password: %v", err)
	}
}

func TestDialectClassifiesErrorsByCode(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	insert := `INSERT INTO workspaces (id, doc, created_at) VALUES ('x', '{}', now())`
	if _, err := s.db.ExecContext(ctx, insert); err != nil {
		t.Fatal(err)
	}
	_, err := s.db.ExecContext(ctx, insert)
	if !(dialect{}).IsUniqueViolation(err) {
		t.Errorf("IsUniqueViolation(%v) = false, want true", err)
	}
	if (dialect{}).IsRetryable(err) {
		t.Errorf("IsRetryable(%v) = true, want false", err)
	}
}

func TestPoolIsReachable(t *testing.T) {
	s := newStore(t)
	var n int
	if err := s.Pool().QueryRow(t.Context(), `SELECT count(*) FROM workspaces`).Scan(&n); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkAppendEvent(b *testing.B) {
	storetest.BenchAppendEvent(b, newStore(b))
}

func BenchmarkChildRunCounts100k(b *testing.B) {
	storetest.BenchChildRunCounts(b, newStore(b), 100_000)
}

func BenchmarkListChildRuns100k(b *testing.B) {
	storetest.BenchListChildRuns(b, newStore(b), 100_000)
}

func BenchmarkCanonicalChildPage100k(b *testing.B) {
	storetest.BenchCanonicalChildPage(b, newStore(b), 100_000)
}

func BenchmarkAppendEventBatch1000(b *testing.B) {
	storetest.BenchAppendEventBatch(b, newStore(b), 1000)
}

func BenchmarkRegisterDataset10k(b *testing.B) {
	storetest.BenchRegisterDataset(b, newStore(b), 10000)
}
