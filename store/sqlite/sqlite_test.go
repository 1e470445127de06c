package sqlite

import (
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	"svc/internal/platform/derrors"
	"svc/store"
	"svc/store/storetest"
)

// newStore opens a migrated store on a new file.
func newStore(t testing.TB) *Store {
	t.Helper()
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "svc.db"))
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

func TestOpenRejectsNonFiles(t *testing.T) {
	for _, path := range []string{"", ":memory:", "file:x.db", "x.db?mode=ro"} {
		if s, err := Open(t.Context(), path); !errors.Is(err, derrors.ErrInvalid) {
			if s != nil {
				s.Close()
			}
			t.Errorf("Open(%q): err = %v, want ErrInvalid", path, err)
		}
	}
}

func TestPragmas(t *testing.T) {
	s := newStore(t)
	for _, tc := range []struct {
		pragma string
		want   string
	}{
		{"journal_mode", "wal"},
		{"synchronous", "1"}, // NORMAL
		{"foreign_keys", "1"},
		{"busy_timeout", "10000"},
	} {
		for name, db := range map[string]*sql.DB{"write": s.write, "read": s.read} {
			var got string
			if err := db.QueryRowContext(t.Context(), "PRAGMA "+tc.pragma).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("%s pool: PRAGMA %s = %q, want %q", name, tc.pragma, got, tc.want)
			}
		}
	}
	if _, err := s.read.ExecContext(t.Context(), `INSERT INTO workspaces (id, doc, created_at) VALUES ('x', '{}', '')`); err == nil {
		t.Error("a write through the read pool succeeded, want it refused (query_only)")
	}
}

func TestDialectClassifiesErrorsByCode(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	insert := `INSERT INTO workspaces (id, doc, created_at) VALUES ('x', '{}', '')`
	if _, err := s.write.ExecContext(ctx, insert); err != nil {
		t.Fatal(err)
	}
	_, err := s.write.ExecContext(ctx, insert)
	if !(dialect{}).IsUniqueViolation(err) {
		t.Errorf("IsUniqueViolation(%v) = false, want true", err)
	}
	if (dialect{}).IsRetryable(err) {
		t.Errorf("IsRetryable(%v) = true, want false", err)
	}
	_, err = s.write.ExecContext(ctx, `INSERT INTO workspaces (id, doc, created_at) VALUES ('y', 'not json', '')`)
	if err == nil || (dialect{}).IsUniqueViolation(err) {
		t.Errorf("a CHECK failure (%v) is not a unique violation", err)
	}
}

func BenchmarkAppendEvent(b *testing.B) {
	storetest.BenchAppendEvent(b, newStore(b))
}

func BenchmarkAppendEventBatch1000(b *testing.B) {
	storetest.BenchAppendEventBatch(b, newStore(b), 1000)
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

func BenchmarkRegisterDataset10k(b *testing.B) {
	storetest.BenchRegisterDataset(b, newStore(b), 10000)
}
