// Package sqlite is the embedded store: one SQLite file, through
// modernc.org/sqlite (pure Go), used by `svc dev`.
//
// SQLite allows one writer at a time. Rather than let concurrent writers
// collide and see SQLITE_BUSY, the Store writes through a pool of exactly one
// connection whose transactions begin IMMEDIATE (taking the write lock at
// BEGIN), and reads through a separate pool of read-only connections, which
// WAL mode lets run beside the writer.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"svc/internal/platform/derrors"
	"svc/migrations"
	"svc/store"
	"svc/store/sqlstore"
)

// Store is a store.Store on a SQLite file.
type Store struct {
	*sqlstore.DB
	read, write *sql.DB
}

var _ store.Store = (*Store)(nil)

// busyTimeout is how long a connection waits for another process's lock
// before SQLITE_BUSY; within one process the single writer makes waiting
// happen in database/sql instead.
const busyTimeout = 10 * time.Second

// Open opens (creating if needed) the database file at path. It does not
// migrate; call Migrate.
func Open(ctx context.Context, path string) (_ *Store, err error) {
	defer derrors.Wrap(&err, "sqlite.Open(ctx, %q)", path)
	if path == "" || path == ":memory:" || strings.HasPrefix(path, "file:") || strings.ContainsRune(path, '?') {
		// The reader and writer pools must share one file; an in-memory
		// database would give each connection its own.
		return nil, derrors.Invalidf("need the path of a database file, got %q", path)
	}
	common := fmt.Sprintf("_pragma=busy_timeout(%d)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)", busyTimeout.Milliseconds())
	write, err := sql.Open("sqlite", path+"?"+common+"&_pragma=journal_mode(WAL)&_txlock=immediate")
	if err != nil {
		return nil, err
	}
	write.SetMaxOpenConns(1)
	write.SetMaxIdleConns(1)
	write.SetConnMaxLifetime(0)
	// Connect the writer first: it switches the file to WAL (a persistent
	// setting), which the read-only connections could not do.
	if err := write.PingContext(ctx); err != nil {
		write.Close()
		return nil, err
	}
	read, err := sql.Open("sqlite", path+"?"+common+"&_pragma=query_only(1)")
	if err != nil {
		write.Close()
		return nil, err
	}
	n := max(4, runtime.NumCPU())
	read.SetMaxOpenConns(n)
	read.SetMaxIdleConns(n)
	if err := read.PingContext(ctx); err != nil {
		write.Close()
		read.Close()
		return nil, err
	}
	return &Store{
		// SQLite transactions are serializable: with one writer there is
		// nothing to choose.
		DB:    sqlstore.New(dialect{}, read, write, sqlstore.Options{MaxAttempts: 5}),
		read:  read,
		write: write,
	}, nil
}

// Migrate applies the pending migrations and returns the ones it applied.
func (s *Store) Migrate(ctx context.Context) ([]migrations.Migration, error) {
	return migrations.Apply(ctx, s.write, migrations.SQLite)
}

// Close closes both pools.
func (s *Store) Close() error {
	return errors.Join(s.read.Close(), s.write.Close())
}

// dialect is SQLite's sqlstore.Dialect.
type dialect struct{}

// Name is "sqlite".
func (dialect) Name() string { return migrations.SQLite }

// timeLayout is fixed-width so that TEXT times sort as they compare.
const timeLayout = "2006-01-02T15:04:05.000000Z"

// TimeArg formats t as the TEXT the time columns hold.
func (dialect) TimeArg(t time.Time) any { return t.UTC().Format(timeLayout) }

// EventLockSQL is empty: with one writer, transactions commit one at a
// time, so appends already commit in seq order.
func (dialect) EventLockSQL() string { return "" }

// RegistrySeqSQL is max(seq) + 1: the one writer draws it inside its
// transaction, so no two draws can meet, and versions are never deleted, so
// a seq is never drawn twice.
// JSONNumberSQL is json_extract on the path; see sqlstore.Dialect.
func (dialect) JSONNumberSQL(col string, path ...string) string {
	return "json_extract(" + col + ", '$." + strings.Join(path, ".") + "')"
}

func (dialect) RegistrySeqSQL() string {
	return "(SELECT coalesce(max(seq), 0) + 1 FROM registry_versions)"
}

// IsUniqueViolation reports a UNIQUE or PRIMARY KEY constraint failure.
func (dialect) IsUniqueViolation(err error) bool {
	switch code(err) {
	case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
		return true
	}
	return false
}

// IsRetryable reports SQLITE_BUSY and SQLITE_LOCKED, which another
// process's lock held past busy_timeout can cause.
func (dialect) IsRetryable(err error) bool {
	// The primary code is the low byte of an extended code.
	switch code(err) & 0xff {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return true
	}
	return false
}

// code is err's SQLite (extended) result code, or 0.
func code(err error) int {
	var e *sqlite.Error
	if errors.As(err, &e) {
		return e.Code()
	}
	return 0
}
