// Package migrations holds svc's numbered SQL migrations, one directory per
// dialect (postgres/, sqlite/), embedded in the binary, and the runner that
// applies them in order and records them in schema_migrations.
//
// A migration file is named NNNN_name.sql. Once applied, a file must never
// change: Apply refuses to run when an applied file's checksum differs, so a
// fix is always a new migration.
package migrations

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"database/sql/driver"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strconv"
	"time"

	"svc/internal/platform/derrors"
)

// Dialect names, the same strings store.Store.Dialect returns.
const (
	Postgres = "postgres"
	SQLite   = "sqlite"
)

//go:embed postgres/*.sql sqlite/*.sql
var files embed.FS

// Migration is one numbered SQL file of a dialect.
type Migration struct {
	Version  int    // the NNNN prefix
	Name     string // the rest of the file name, without .sql
	SQL      string
	Checksum string // hex SHA-256 of the file
}

// File is the migration's file name, e.g. 0001_init.sql.
func (m Migration) File() string { return fmt.Sprintf("%04d_%s.sql", m.Version, m.Name) }

// FS returns the migration files of dialect, at the root of the returned FS.
func FS(dialect string) (fs.FS, error) {
	if dialect != Postgres && dialect != SQLite {
		return nil, derrors.Invalidf("migrations: unknown dialect %q (want %q or %q)", dialect, Postgres, SQLite)
	}
	return fs.Sub(files, dialect)
}

var fileRE = regexp.MustCompile(`^([0-9]+)_([a-z0-9_]+)\.sql$`)

// List returns the migrations of dialect in version order.
func List(dialect string) ([]Migration, error) {
	fsys, err := FS(dialect)
	if err != nil {
		return nil, err
	}
	return list(fsys)
}

func list(fsys fs.FS) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	var ms []Migration
	for _, e := range entries {
		m := fileRE.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("migrations: file %q is not named NNNN_name.sql", e.Name())
		}
		v, err := strconv.Atoi(m[1])
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("migrations: file %q: bad version", e.Name())
		}
		b, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			return nil, fmt.Errorf("migrations: %w", err)
		}
		sum := sha256.Sum256(b)
		ms = append(ms, Migration{Version: v, Name: m[2], SQL: string(b), Checksum: hex.EncodeToString(sum[:])})
	}
	slices.SortFunc(ms, func(a, b Migration) int { return a.Version - b.Version })
	for i := 1; i < len(ms); i++ {
		if ms[i].Version == ms[i-1].Version {
			return nil, fmt.Errorf("migrations: %s and %s share version %d", ms[i-1].File(), ms[i].File(), ms[i].Version)
		}
	}
	return ms, nil
}

// Apply applies dialect's pending migrations to db in version order, each in
// its own transaction recorded in schema_migrations, and returns the ones it
// applied. It refuses to apply anything (ErrConflict) when an applied
// migration's file changed or the database has one this binary does not know.
//
// Processes may call Apply at the same time: on PostgreSQL the run holds a
// session advisory lock on one dedicated connection; on SQLite it runs in one
// BEGIN IMMEDIATE transaction (each migration under its own savepoint), which
// takes the database's write lock. The second caller waits, then finds
// nothing pending.
func Apply(ctx context.Context, db *sql.DB, dialect string) (applied []Migration, err error) {
	defer derrors.Wrap(&err, "migrations.Apply(ctx, %q)", dialect)
	ms, err := List(dialect)
	if err != nil {
		return nil, err
	}
	return apply(ctx, db, dialect, ms)
}

func apply(ctx context.Context, db *sql.DB, dialect string, ms []Migration) ([]Migration, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", derrors.ErrUnavailable, err)
	}
	defer conn.Close()
	switch dialect {
	case Postgres:
		return applyPostgres(ctx, conn, ms)
	case SQLite:
		return applySQLite(ctx, conn, ms)
	}
	return nil, derrors.Invalidf("unknown dialect %q", dialect)
}

// advisoryLockKey names svc's migration lock among the database's advisory
// locks ("svc-migr" in ASCII).
const advisoryLockKey int64 = 0x7376632d6d696772

// The record table is the one table created outside a numbered migration:
// it must exist before the first one can be recorded. It is created under the
// lock, so concurrent starts cannot race on it.
const (
	pgBootstrap = `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    integer PRIMARY KEY,
	name       text NOT NULL,
	checksum   text NOT NULL,
	applied_at timestamptz NOT NULL DEFAULT now()
)`
	sqliteBootstrap = `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    INTEGER NOT NULL PRIMARY KEY,
	name       TEXT NOT NULL,
	checksum   TEXT NOT NULL,
	applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
)`
	recordSQL = `INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)`
)

func applyPostgres(ctx context.Context, conn *sql.Conn, ms []Migration) (applied []Migration, err error) {
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, advisoryLockKey); err != nil {
		return nil, fmt.Errorf("take migration lock: %w", err)
	}
	defer func() {
		// Release even when ctx is done: the connection goes back to a pool,
		// and a lock left on it would block every later start.
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		var released bool
		uerr := conn.QueryRowContext(uctx, `SELECT pg_advisory_unlock($1)`, advisoryLockKey).Scan(&released)
		if uerr == nil && !released {
			uerr = errors.New("lock was not held")
		}
		if uerr != nil {
			// Discard the session so the lock dies with it.
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
			err = errors.Join(err, fmt.Errorf("release migration lock: %w", uerr))
		}
	}()
	if _, err := conn.ExecContext(ctx, pgBootstrap); err != nil {
		return nil, fmt.Errorf("create schema_migrations: %w", err)
	}
	pending, err := pendingOf(ctx, conn, ms)
	if err != nil {
		return nil, err
	}
	for _, m := range pending {
		if err := inTx(ctx, conn, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, recordSQL, m.Version, m.Name, m.Checksum)
			return err
		}); err != nil {
			return applied, fmt.Errorf("apply %s: %w", m.File(), err)
		}
		applied = append(applied, m)
	}
	return applied, nil
}

func inTx(ctx context.Context, conn *sql.Conn, fn func(*sql.Tx) error) (err error) {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

func applySQLite(ctx context.Context, conn *sql.Conn, ms []Migration) (applied []Migration, err error) {
	// BEGIN IMMEDIATE takes the write lock now (waiting out busy_timeout),
	// so two processes cannot both see a migration as pending.
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		return nil, fmt.Errorf("take write lock: %w", err)
	}
	committed := false
	defer func() {
		if !committed {
			_, _ = conn.ExecContext(context.WithoutCancel(ctx), `ROLLBACK`)
			applied = nil
		}
	}()
	if _, err := conn.ExecContext(ctx, sqliteBootstrap); err != nil {
		return nil, fmt.Errorf("create schema_migrations: %w", err)
	}
	pending, err := pendingOf(ctx, conn, ms)
	if err != nil {
		return nil, err
	}
	var runErr error
	for _, m := range pending {
		if err := sqliteStep(ctx, conn, m); err != nil {
			runErr = fmt.Errorf("apply %s: %w", m.File(), err)
			// The savepoint is undone; keep the migrations before it, as
			// PostgreSQL does with one transaction per migration.
			if _, err := conn.ExecContext(ctx, `ROLLBACK TO migration; RELEASE migration`); err != nil {
				return nil, errors.Join(runErr, err)
			}
			break
		}
		applied = append(applied, m)
	}
	if _, err := conn.ExecContext(ctx, `COMMIT`); err != nil {
		return nil, errors.Join(runErr, fmt.Errorf("commit: %w", err))
	}
	committed = true
	return applied, runErr
}

func sqliteStep(ctx context.Context, conn *sql.Conn, m Migration) error {
	if _, err := conn.ExecContext(ctx, `SAVEPOINT migration`); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, m.SQL); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, recordSQL, m.Version, m.Name, m.Checksum); err != nil {
		return err
	}
	_, err := conn.ExecContext(ctx, `RELEASE migration`)
	return err
}

// pendingOf reads schema_migrations, checks it against ms and returns the
// migrations still to apply, in order.
func pendingOf(ctx context.Context, conn *sql.Conn, ms []Migration) ([]Migration, error) {
	rows, err := conn.QueryContext(ctx, `SELECT version, name, checksum FROM schema_migrations ORDER BY version`)
	if err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	defer rows.Close()
	done := map[int]bool{}
	for rows.Next() {
		var r Migration
		if err := rows.Scan(&r.Version, &r.Name, &r.Checksum); err != nil {
			return nil, fmt.Errorf("read schema_migrations: %w", err)
		}
		i := slices.IndexFunc(ms, func(m Migration) bool { return m.Version == r.Version })
		if i < 0 {
			return nil, derrors.Conflictf("the database has migration %s, which this binary does not know: it was migrated by a newer version", r.File())
		}
		if ms[i].Checksum != r.Checksum {
			return nil, derrors.Conflictf("migration %s changed after it was applied (checksum %.12s, recorded %.12s): add a new migration instead of editing an applied one", ms[i].File(), ms[i].Checksum, r.Checksum)
		}
		done[r.Version] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	var pending []Migration
	for _, m := range ms {
		if !done[m.Version] {
			pending = append(pending, m)
		}
	}
	return pending, nil
}
