package sqlstore

import (
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"

	"svc/migrations"
	"svc/store"
	"svc/store/pgtest"
)

// pgDialect is enough of PostgreSQL's dialect for the pending-span
// methods (store/postgres's own is unexported).
type pgDialect struct{ fakeDialect }

func (pgDialect) Name() string            { return "postgres" }
func (pgDialect) TimeArg(t time.Time) any { return t }
func (pgDialect) IsRetryable(error) bool  { return false }

// openDialect is an empty database of dialect d (migrations.SQLite or
// migrations.Postgres, skipped without DATABASE_URL) on one connection,
// with enough of its Dialect for the store's methods.
func openDialect(t *testing.T, d string) (*sql.DB, Dialect) {
	t.Helper()
	var db *sql.DB
	var dialect Dialect
	var err error
	if d == migrations.Postgres {
		if os.Getenv("DATABASE_URL") == "" {
			t.Skip("no DATABASE_URL (run under go run ./internal/cmd/withpg --)")
		}
		db, err = sql.Open("pgx", pgtest.URL(t))
		dialect = pgDialect{}
	} else {
		db, err = sql.Open("sqlite", filepath.Join(t.TempDir(), "t.db")+"?_pragma=journal_mode(WAL)&_txlock=immediate")
		dialect = fakeDialect{}
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	return db, dialect
}

// migrate runs dialect d's migrations from version from through to (0:
// the last) on db.
func migrate(t *testing.T, db *sql.DB, d string, from, to int) {
	t.Helper()
	ms, err := migrations.List(d)
	if err != nil {
		t.Fatal(err)
	}
	if to == 0 {
		to = ms[len(ms)-1].Version
	}
	for v := from; v <= to; v++ {
		i := slices.IndexFunc(ms, func(m migrations.Migration) bool { return m.Version == v })
		if i < 0 {
			t.Fatalf("no migration %d", v)
		}
		if _, err := db.ExecContext(t.Context(), ms[i].SQL); err != nil {
			t.Fatalf("migration %s: %v", ms[i].File(), err)
		}
	}
}

// TestMigrationKeepsPendingSpans: spans pending in the per-span table of
// migration 0013 are still pending, each once and in start order, after
// migration 0017 made them rows of pending_span_batches, and read with
// the rows of migration 0019's form that follow them.
func TestMigrationKeepsPendingSpans(t *testing.T) {
	for _, d := range []string{migrations.SQLite, migrations.Postgres} {
		t.Run(d, func(t *testing.T) {
			ctx := t.Context()
			db, dialect := openDialect(t, d)
			migrate(t, db, d, 1, 16)
			at := func(m int) any { return dialect.TimeArg(time.Date(2026, 5, 1, 10, m, 0, 0, time.UTC)) }
			for _, r := range []struct {
				ws, grp, key string
				external     bool
				start        int64
				at           any
				event        string
			}{
				{"acme", "run-1", "t/b", false, 20, at(1), `{"kind":"span","name":"b"}`},
				{"acme", "run-1", "t/a", false, 10, at(2), "{\n \"kind\": \"span\",\n \"name\": \"a, with \\\"quotes\\\"\"\n}"},
				{"acme", "run-1", "t/0", false, 0, at(0), `{"kind":"message","content":"no start"}`},
				{"acme", "ext", "t/z", true, 5, at(3), `{"kind":"span","name":"z"}`},
				{"other", "run-1", "t/y", false, 1, at(4), `{"kind":"span","name":"y"}`},
			} {
				if _, err := db.ExecContext(ctx, `INSERT INTO pending_spans (workspace, grp, span_key, external, start_unix_nano, received_at, event)
					VALUES ($1, $2, $3, $4, $5, $6, $7)`, r.ws, r.grp, r.key, r.external, r.start, r.at, r.event); err != nil {
					t.Fatal(err)
				}
			}
			migrate(t, db, d, 17, 0)
			s := New(dialect, db, db, Options{})
			got, err := s.ListPendingSpans(ctx, "acme", "run-1")
			if err != nil {
				t.Fatal(err)
			}
			type span struct {
				Key, Event string
				Start      int64
			}
			var spans []span
			for _, sp := range got {
				spans = append(spans, span{sp.Key, string(sp.Event), sp.StartUnixNano})
			}
			want := []span{{"t/0", `{"kind":"message","content":"no start"}`, 0},
				{"t/a", `{  "kind": "span",  "name": "a, with \"quotes\"" }`, 10}, {"t/b", `{"kind":"span","name":"b"}`, 20}}
			if diff := cmp.Diff(want, spans); diff != "" {
				t.Errorf("acme/run-1 after the migration (-want +got):\n%s", diff)
			}
			groups, err := s.ListPendingGroups(ctx, time.Time{}, 0)
			if err != nil {
				t.Fatal(err)
			}
			type group struct {
				Workspace, Group string
				External         bool
				Spans            int
				Last             time.Time
			}
			var gs []group
			for _, g := range groups {
				gs = append(gs, group{g.Workspace, g.Group, g.External, g.Spans, g.LastReceived})
			}
			wantGroups := []group{{"acme", "run-1", false, 3, time.Date(2026, 5, 1, 10, 2, 0, 0, time.UTC)},
				{"acme", "ext", true, 1, time.Date(2026, 5, 1, 10, 3, 0, 0, time.UTC)},
				{"other", "run-1", false, 1, time.Date(2026, 5, 1, 10, 4, 0, 0, time.UTC)}}
			if diff := cmp.Diff(wantGroups, gs); diff != "" {
				t.Errorf("groups after the migration (-want +got):\n%s", diff)
			}
			// The converted row is a group's first: a new export is
			// checked against its keys.
			n, err := s.AddPendingSpans(ctx, []store.PendingSpan{{Workspace: "acme", Group: "run-1", Key: "t/a", StartUnixNano: 10, Event: []byte(`{}`)},
				{Workspace: "acme", Group: "run-1", Key: "t/c", StartUnixNano: 30, Event: []byte(`{}`)}})
			if err != nil || n != 1 {
				t.Errorf("AddPendingSpans after the migration = %d, %v; want 1 (t/c)", n, err)
			}
			// A group of rows of both forms reads as one.
			got, err = s.ListPendingSpans(ctx, "acme", "run-1")
			if err != nil {
				t.Fatal(err)
			}
			spans = spans[:0]
			for _, sp := range got {
				spans = append(spans, span{sp.Key, string(sp.Event), sp.StartUnixNano})
			}
			if diff := cmp.Diff(append(want, span{"t/c", `{}`, 30}), spans); diff != "" {
				t.Errorf("acme/run-1 with a row of each form (-want +got):\n%s", diff)
			}
			var old int
			err = db.QueryRowContext(ctx, `SELECT count(*) FROM pending_spans`).Scan(&old)
			if err == nil || errors.Is(err, sql.ErrNoRows) {
				t.Errorf("pending_spans still exists (%d rows)", old)
			}
		})
	}
}
