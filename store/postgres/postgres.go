// Package postgres is the production store: PostgreSQL through pgx/v5.
//
// Queries go through database/sql (stdlib.OpenDBFromPool) so that they are
// shared with the SQLite store in package sqlstore; the underlying pgxpool
// stays reachable through Pool for what only pgx does well (COPY bulk loads).
package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"svc/derrors"
	"svc/migrations"
	"svc/store"
	"svc/store/sqlstore"
)

// Store is a store.Store on a PostgreSQL database.
type Store struct {
	*sqlstore.DB
	pool *pgxpool.Pool
	db   *sql.DB
}

var _ store.Store = (*Store)(nil)

// Open connects to the database at url (postgres://...; pgxpool settings such
// as pool_max_conns may be given as query parameters) and checks that it
// answers. It does not migrate; call Migrate.
func Open(ctx context.Context, url string) (_ *Store, err error) {
	defer derrors.Wrap(&err, "postgres.Open(ctx, %q)", redact(url))
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// The message may quote the URL; do not wrap it with its password.
		return nil, derrors.Invalidf("cannot parse the database URL")
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	db := stdlib.OpenDBFromPool(pool)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		pool.Close()
		return nil, fmt.Errorf("%w: %v", derrors.ErrUnavailable, err)
	}
	return &Store{
		// SERIALIZABLE, not READ COMMITTED: SQLite, the other backend, runs
		// transactions one at a time, so code that reads then writes in
		// Transact (check a budget, then admit) is correct there without
		// locks. SERIALIZABLE gives PostgreSQL the same guarantee, so the
		// conformance suite means the same thing on both; the price is the
		// occasional serialization failure, which Transact retries.
		DB:   sqlstore.New(dialect{}, db, db, sqlstore.Options{TxOptions: &sql.TxOptions{Isolation: sql.LevelSerializable}}),
		pool: pool,
		db:   db,
	}, nil
}

// Pool is the pgx pool under the store, for COPY and other pgx-only work.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Migrate applies the pending migrations and returns the ones it applied.
func (s *Store) Migrate(ctx context.Context) ([]migrations.Migration, error) {
	return migrations.Apply(ctx, s.db, migrations.Postgres)
}

// Close closes the database/sql handle and then the pool under it.
func (s *Store) Close() error {
	err := s.db.Close()
	s.pool.Close()
	return err
}

// SQLSTATE codes, from PostgreSQL's errcodes.txt.
const (
	uniqueViolation      = "23505"
	serializationFailure = "40001"
	deadlockDetected     = "40P01"
)

// dialect is PostgreSQL's sqlstore.Dialect.
type dialect struct{}

// Name is "postgres".
func (dialect) Name() string { return migrations.Postgres }

// TimeArg passes t as is: the columns are timestamptz.
func (dialect) TimeArg(t time.Time) any { return t }

// eventLockKey names the event log's append lock among the database's
// advisory locks ("svc-evts" in ASCII).
const eventLockKey int64 = 0x7376632d65767473

// EventLockSQL takes a transaction-scoped advisory lock: an identity value
// is drawn at insert, not at commit, so without it a transaction holding seq
// 5 could commit after one holding seq 6, and a poller that had read 6 would
// never see 5.
func (dialect) EventLockSQL() string {
	return fmt.Sprintf("SELECT pg_advisory_xact_lock(%d)", eventLockKey)
}

// IsUniqueViolation reports SQLSTATE 23505.
func (dialect) IsUniqueViolation(err error) bool { return sqlState(err) == uniqueViolation }

// IsRetryable reports serialization failures and deadlocks, which a rerun
// of the transaction may not meet again.
func (dialect) IsRetryable(err error) bool {
	switch sqlState(err) {
	case serializationFailure, deadlockDetected:
		return true
	}
	return false
}

func sqlState(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// redact hides the password of a URL for error messages.
func redact(url string) string {
	cfg, err := pgconn.ParseConfig(url)
	if err != nil {
		return "<unparsable URL>"
	}
	return fmt.Sprintf("postgres://%s@%s:%d/%s", cfg.User, cfg.Host, cfg.Port, cfg.Database)
}
