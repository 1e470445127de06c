package pgtest

import (
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { Main(m) }

func TestURLIsAFreshDatabaseDroppedAtCleanup(t *testing.T) {
	var first string
	t.Run("use", func(t *testing.T) {
		first = URL(t)
		second := URL(t)
		if first == second {
			t.Fatalf("two calls returned the same database %s", first)
		}
		conn, err := pgx.Connect(t.Context(), first)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(t.Context())
		var tables int
		if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'`).Scan(&tables); err != nil {
			t.Fatal(err)
		}
		if tables != 0 {
			t.Errorf("fresh database has %d tables, want 0", tables)
		}
	})
	if t.Skipped() || first == "" {
		return
	}
	// The subtest's cleanups have run: its databases must be gone.
	conn, err := pgx.Connect(t.Context(), first)
	if err == nil {
		conn.Close(t.Context())
		t.Errorf("Connect(%s) after cleanup succeeded, want the database dropped", first)
	}
}

func TestWithDatabase(t *testing.T) {
	for _, tc := range []struct {
		base, want string
	}{
		{"postgres://u:p@h:5432/postgres?sslmode=disable", "postgres://u:p@h:5432/svc_x?sslmode=disable"},
		{"postgresql://h/", "postgresql://h/svc_x"},
		{"host=h user=u dbname=postgres", "host=h user=u dbname=postgres dbname=svc_x"},
	} {
		got, err := withDatabase(tc.base, "svc_x")
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("withDatabase(%q) = %q, want %q", tc.base, got, tc.want)
		}
	}
}
