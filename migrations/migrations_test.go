package migrations

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"
	_ "modernc.org/sqlite"             // registers "sqlite"

	"svc/internal/platform/derrors"
	"svc/store/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// freshDSN returns the database/sql driver name and the DSN of a fresh,
// empty database of dialect.
func freshDSN(t *testing.T, dialect string) (driverName, dsn string) {
	t.Helper()
	if dialect == Postgres {
		return "pgx", pgtest.URL(t)
	}
	return "sqlite", filepath.Join(t.TempDir(), "svc.db") + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"
}

// openDB opens a fresh, empty database of dialect.
func openDB(t *testing.T, dialect string) *sql.DB {
	t.Helper()
	driverName, dsn := freshDSN(t, dialect)
	return open(t, driverName, dsn)
}

func open(t *testing.T, driverName, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open(driverName, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

var dialects = []string{Postgres, SQLite}

func TestDialectsHaveTheSameMigrations(t *testing.T) {
	names := map[string][]string{}
	for _, d := range dialects {
		ms, err := List(d)
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) == 0 {
			t.Fatalf("List(%q) is empty", d)
		}
		for i, m := range ms {
			if m.Version != i+1 {
				t.Errorf("%s: migration %s has version %d, want %d (no gaps)", d, m.File(), m.Version, i+1)
			}
			names[d] = append(names[d], m.File())
		}
	}
	if diff := cmp.Diff(names[Postgres], names[SQLite]); diff != "" {
		t.Errorf("postgres and sqlite migrations differ (-postgres +sqlite):\n%s", diff)
	}
}

func TestListRejectsBadFiles(t *testing.T) {
	for _, tc := range []struct {
		name string
		fsys fstest.MapFS
	}{
		{"unnumbered", fstest.MapFS{"init.sql": {}}},
		{"not sql", fstest.MapFS{"0001_init.txt": {}}},
		{"version zero", fstest.MapFS{"0000_init.sql": {}}},
		{"duplicate version", fstest.MapFS{"0001_a.sql": {}, "01_b.sql": {}}},
	} {
		if _, err := list(tc.fsys); err == nil {
			t.Errorf("%s: list succeeded, want error", tc.name)
		}
	}
}

func TestApplyIsRecordedAndIdempotent(t *testing.T) {
	for _, d := range dialects {
		t.Run(d, func(t *testing.T) {
			ctx := t.Context()
			db := openDB(t, d)
			want, err := List(d)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Apply(ctx, db, d)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("first Apply (-want +got):\n%s", diff)
			}
			again, err := Apply(ctx, db, d)
			if err != nil {
				t.Fatal(err)
			}
			if len(again) != 0 {
				t.Errorf("second Apply applied %d migrations, want 0", len(again))
			}
			if diff := cmp.Diff(want, recorded(t, db), cmpopts.IgnoreFields(Migration{}, "SQL")); diff != "" {
				t.Errorf("schema_migrations (-want +got):\n%s", diff)
			}
		})
	}
}

// recorded returns schema_migrations as Migrations (without SQL).
func recorded(t *testing.T, db *sql.DB) []Migration {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), `SELECT version, name, checksum FROM schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ms []Migration
	for rows.Next() {
		var m Migration
		if err := rows.Scan(&m.Version, &m.Name, &m.Checksum); err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return ms
}

func TestApplyRefusesChangedOrUnknownMigrations(t *testing.T) {
	for _, d := range dialects {
		for _, tc := range []struct {
			name   string
			tamper string
		}{
			{"changed checksum", `UPDATE schema_migrations SET checksum = 'edited' WHERE version = 1`},
			{"unknown version", `INSERT INTO schema_migrations (version, name, checksum) VALUES (9999, 'future', 'x')`},
		} {
			t.Run(d+"/"+tc.name, func(t *testing.T) {
				ctx := t.Context()
				db := openDB(t, d)
				if _, err := Apply(ctx, db, d); err != nil {
					t.Fatal(err)
				}
				if _, err := db.ExecContext(ctx, tc.tamper); err != nil {
					t.Fatal(err)
				}
				_, err := Apply(ctx, db, d)
				if !errors.Is(err, derrors.ErrConflict) {
					t.Fatalf("Apply after %s: err = %v, want ErrConflict", tc.name, err)
				}
			})
		}
	}
}

func TestFailedMigrationKeepsTheOnesBefore(t *testing.T) {
	ms := []Migration{
		{Version: 1, Name: "good", SQL: `CREATE TABLE good (x integer)`, Checksum: "1"},
		{Version: 2, Name: "bad", SQL: `CREATE TABLE half (x integer); INSERT INTO no_such_table VALUES (1)`, Checksum: "2"},
		{Version: 3, Name: "after", SQL: `CREATE TABLE after (x integer)`, Checksum: "3"},
	}
	for _, d := range dialects {
		t.Run(d, func(t *testing.T) {
			ctx := t.Context()
			db := openDB(t, d)
			applied, err := apply(ctx, db, d, ms)
			if err == nil {
				t.Fatal("apply succeeded, want the error of migration 2")
			}
			if len(applied) != 1 || applied[0].Version != 1 {
				t.Errorf("applied = %v, want only version 1", applied)
			}
			for _, tc := range []struct {
				table string
				want  bool
			}{{"good", true}, {"half", false}, {"after", false}} {
				_, err := db.ExecContext(ctx, `SELECT count(*) FROM `+tc.table)
				if got := err == nil; got != tc.want {
					t.Errorf("table %s exists = %v, want %v (err %v)", tc.table, got, tc.want, err)
				}
			}
			if got := len(recorded(t, db)); got != 1 {
				t.Errorf("schema_migrations has %d rows, want 1", got)
			}
		})
	}
}

func TestConcurrentApplyAppliesOnce(t *testing.T) {
	for _, d := range dialects {
		t.Run(d, func(t *testing.T) {
			ctx := t.Context()
			// Separate *sql.DB handles on one database stand for separate processes.
			driverName, dsn := freshDSN(t, d)
			const n = 4
			dbs := make([]*sql.DB, n)
			for i := range dbs {
				dbs[i] = open(t, driverName, dsn)
				// Connected one by one: a fresh SQLite file switched to WAL
				// by several connections at once can answer SQLITE_BUSY
				// without waiting; what is tested is Apply's lock.
				if err := dbs[i].PingContext(ctx); err != nil {
					t.Fatal(err)
				}
			}
			ms, err := List(d)
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			counts := make([]int, n)
			errs := make([]error, n)
			for i, db := range dbs {
				wg.Go(func() {
					applied, err := Apply(ctx, db, d)
					counts[i], errs[i] = len(applied), err
				})
			}
			wg.Wait()
			total := 0
			for i := range n {
				if errs[i] != nil {
					t.Errorf("Apply #%d: %v", i, errs[i])
				}
				total += counts[i]
			}
			if total != len(ms) {
				t.Errorf("the concurrent Apply calls applied %d migrations in all, want %d (each once)", total, len(ms))
			}
			if got := len(recorded(t, dbs[0])); got != len(ms) {
				t.Errorf("schema_migrations has %d rows, want %d", got, len(ms))
			}
		})
	}
}

// column, index and table describe a schema as both dialects can report it.
type column struct {
	Name    string
	NotNull bool
}

type index struct {
	Unique  bool
	Columns string // comma-separated, in index order
}

type table struct {
	Columns    []column
	PrimaryKey string // comma-separated
	Indexes    map[string]index
}

func TestDialectsProduceTheSameLogicalSchema(t *testing.T) {
	ctx := t.Context()
	got := map[string]map[string]table{}
	for _, d := range dialects {
		db := openDB(t, d)
		if _, err := Apply(ctx, db, d); err != nil {
			t.Fatal(err)
		}
		var err error
		if d == Postgres {
			got[d], err = introspectPostgres(ctx, db)
		} else {
			got[d], err = introspectSQLite(ctx, db)
		}
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
	}
	for _, want := range []string{"workspaces", "events", "schema_migrations", "api_keys", "members", "invites", "teams", "team_members",
		"registry_entities", "registry_versions", "dataset_cases", "dataset_case_tags", "secrets",
		"runs", "run_logs", "trajectories", "notifications", "webhook_secrets", "webhook_deliveries",
		"scorecards", "scorecard_steps", "analyses"} {
		if _, ok := got[SQLite][want]; !ok {
			t.Errorf("sqlite schema lacks table %s", want)
		}
	}
	if diff := cmp.Diff(got[Postgres], got[SQLite]); diff != "" {
		t.Errorf("schemas differ (-postgres +sqlite):\n%s", diff)
	}
}

func introspectSQLite(ctx context.Context, db *sql.DB) (map[string]table, error) {
	names, err := strings(ctx, db, `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`)
	if err != nil {
		return nil, err
	}
	s := map[string]table{}
	for _, name := range names {
		tb := table{Indexes: map[string]index{}}
		rows, err := db.QueryContext(ctx, `SELECT name, "notnull" OR pk > 0 FROM pragma_table_info($1) ORDER BY cid`, name)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var c column
			if err := rows.Scan(&c.Name, &c.NotNull); err != nil {
				return nil, err
			}
			tb.Columns = append(tb.Columns, c)
		}
		rows.Close()
		if err := db.QueryRowContext(ctx, `SELECT coalesce(group_concat(name, ','), '') FROM (SELECT name FROM pragma_table_info($1) WHERE pk > 0 ORDER BY pk)`, name).Scan(&tb.PrimaryKey); err != nil {
			return nil, err
		}
		// origin 'c': made by CREATE INDEX, not by a PRIMARY KEY or UNIQUE constraint.
		idx, err := strings(ctx, db, `SELECT name FROM pragma_index_list($1) WHERE origin = 'c'`, name)
		if err != nil {
			return nil, err
		}
		for _, in := range idx {
			var ix index
			if err := db.QueryRowContext(ctx, `SELECT "unique" FROM pragma_index_list($1) WHERE name = $2`, name, in).Scan(&ix.Unique); err != nil {
				return nil, err
			}
			if err := db.QueryRowContext(ctx, `SELECT group_concat(name, ',') FROM (SELECT name FROM pragma_index_info($1) ORDER BY seqno)`, in).Scan(&ix.Columns); err != nil {
				return nil, err
			}
			tb.Indexes[in] = ix
		}
		s[name] = tb
	}
	return s, nil
}

func introspectPostgres(ctx context.Context, db *sql.DB) (map[string]table, error) {
	names, err := strings(ctx, db, `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY 1`)
	if err != nil {
		return nil, err
	}
	s := map[string]table{}
	for _, name := range names {
		tb := table{Indexes: map[string]index{}}
		rows, err := db.QueryContext(ctx, `SELECT column_name, is_nullable = 'NO' FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position`, name)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var c column
			if err := rows.Scan(&c.Name, &c.NotNull); err != nil {
				return nil, err
			}
			tb.Columns = append(tb.Columns, c)
		}
		rows.Close()
		const keyCols = `SELECT coalesce(string_agg(a.attname, ',' ORDER BY k.ord), '')
			FROM unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord)
			JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum`
		if err := db.QueryRowContext(ctx, `SELECT coalesce((SELECT (`+keyCols+`) FROM pg_index i WHERE i.indrelid = $1::regclass AND i.indisprimary), '')`, name).Scan(&tb.PrimaryKey); err != nil {
			return nil, err
		}
		// Indexes that back no constraint: the ones made by CREATE INDEX.
		rows, err = db.QueryContext(ctx, `SELECT c.relname, i.indisunique, (`+keyCols+`)
			FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
			WHERE i.indrelid = $1::regclass
			AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid)`, name)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var in string
			var ix index
			if err := rows.Scan(&in, &ix.Unique, &ix.Columns); err != nil {
				return nil, err
			}
			tb.Indexes[in] = ix
		}
		rows.Close()
		s[name] = tb
	}
	return s, nil
}

func strings(ctx context.Context, db *sql.DB, query string, args ...any) ([]string, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
