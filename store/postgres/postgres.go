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
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"svc/internal/platform/derrors"
	"svc/migrations"
	"svc/store"
	"svc/store/sqlstore"
)

// Store is a store.Store on a PostgreSQL database.
type Store struct {
	*sqlstore.DB
	pool *pgxpool.Pool
	db   *sql.DB
	// keyedPool and keyed carry TransactKeyed's transactions (keyedConfig).
	keyedPool *pgxpool.Pool
	keyed     *sql.DB
}

var _ store.Store = (*Store)(nil)

// DefaultMaxConns is the pool size when the URL sets no pool_max_conns.
const DefaultMaxConns = 32

// DefaultStatementTimeout is the statement_timeout of the store's
// sessions when Open is given none (SVC_PG_STATEMENT_TIMEOUT's default).
// The longest statement of a 2,000-case batch on PostgreSQL takes well
// under a second (docs/decisions.md), so a statement still running after
// a minute is stuck (a lock never released, a plan gone wrong), and
// cancelling it frees its connection and the worker waiting on it.
const DefaultStatementTimeout = 60 * time.Second

// Options are the settings of Open beyond the URL.
type Options struct {
	// StatementTimeout is PostgreSQL's statement_timeout for every
	// session of the store but the migrations' (Migrate runs without
	// one); 0 turns it off. A statement_timeout given in the URL wins.
	StatementTimeout time.Duration
}

// Open connects to the database at url (postgres://...; pgxpool settings such
// as pool_max_conns may be given as query parameters) and checks that it
// answers, with DefaultStatementTimeout. It does not migrate; call Migrate.
func Open(ctx context.Context, url string) (*Store, error) {
	return OpenWith(ctx, url, Options{StatementTimeout: DefaultStatementTimeout})
}

// OpenWith is Open with opts.
func OpenWith(ctx context.Context, url string, opts Options) (_ *Store, err error) {
	defer derrors.Wrap(&err, "postgres.Open(ctx, %q)", redact(url))
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// The message may quote the URL; do not wrap it with its password.
		return nil, derrors.Invalidf("cannot parse the database URL")
	}
	if opts.StatementTimeout < 0 {
		return nil, derrors.Invalidf("statement timeout %v is negative", opts.StatementTimeout)
	}
	if _, set := cfg.ConnConfig.RuntimeParams[statementTimeout]; !set {
		if cfg.ConnConfig.RuntimeParams == nil {
			cfg.ConnConfig.RuntimeParams = map[string]string{}
		}
		cfg.ConnConfig.RuntimeParams[statementTimeout] = fmt.Sprintf("%dms", opts.StatementTimeout.Milliseconds())
	}
	if !strings.Contains(url, "pool_max_conns") {
		// pgxpool's default, max(4, cores), starves a worker running a
		// wide batch (64 case activities at once share the pool); the
		// URL's pool_max_conns still wins.
		cfg.MaxConns = max(cfg.MaxConns, DefaultMaxConns)
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
	keyedPool, err := pgxpool.NewWithConfig(ctx, keyedConfig(cfg))
	if err != nil {
		db.Close()
		pool.Close()
		return nil, err
	}
	keyed := stdlib.OpenDBFromPool(keyedPool)
	return &Store{
		// SERIALIZABLE, not READ COMMITTED: SQLite, the other backend, runs
		// transactions one at a time, so code that reads then writes in
		// Transact (check a budget, then admit) is correct there without
		// locks. SERIALIZABLE gives PostgreSQL the same guarantee, so the
		// conformance suite means the same thing on both; the price is the
		// occasional serialization failure, which Transact retries.
		// TransactKeyed at REPEATABLE READ: a transaction that touches only
		// rows it names by key is as correct there (a concurrent write of
		// the same row fails it with a retried serialization failure) and
		// does not fail on the predicate locks of shared index pages,
		// which made every case's finish run twice under load.
		DB: sqlstore.New(dialect{}, db, db, sqlstore.Options{
			TxOptions:      &sql.TxOptions{Isolation: sql.LevelSerializable},
			KeyedTxOptions: &sql.TxOptions{Isolation: sql.LevelRepeatableRead},
			Keyed:          keyed,
		}),
		pool:      pool,
		db:        db,
		keyedPool: keyedPool,
		keyed:     keyed,
	}, nil
}

// KeyedMaxConns bounds the pool of TransactKeyed's transactions: a
// worker's case writes go through one group commit at a time, so a few
// connections carry them.
const KeyedMaxConns = 8

// keyedConfig is the configuration of the pool TransactKeyed's
// transactions run on: the same server and credentials as cfg, at most
// KeyedMaxConns connections, each planning a prepared statement once for
// every value (plan_cache_mode=force_generic_plan). Those transactions
// name rows by key, where the generic plan is the custom one; without it
// each of a pool's backends planned each statement afresh for its first
// five executions, and the group commit's statements, whose text varies
// with the number of rows, for every execution: a third of PostgreSQL's
// time on a 2,000-case batch went to planning.
func keyedConfig(cfg *pgxpool.Config) *pgxpool.Config {
	k := cfg.Copy()
	k.MaxConns = min(cfg.MaxConns, KeyedMaxConns)
	k.MinConns = min(k.MinConns, k.MaxConns)
	if k.ConnConfig.RuntimeParams == nil {
		k.ConnConfig.RuntimeParams = map[string]string{}
	}
	k.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
	return k
}

// Pool is the pgx pool under the store, for COPY and other pgx-only work.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// statementTimeout is the name of PostgreSQL's setting.
const statementTimeout = "statement_timeout"

// Migrate applies the pending migrations and returns the ones it applied.
// They run on a session of their own without statement_timeout: a
// migration may rewrite or index a large table, and it waits for the
// migration lock while another process migrates, both legitimately
// longer than any statement of the service.
func (s *Store) Migrate(ctx context.Context) ([]migrations.Migration, error) {
	cfg := s.pool.Config()
	cfg.MaxConns, cfg.MinConns = 1, 0
	cfg.ConnConfig.RuntimeParams[statementTimeout] = "0"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", derrors.ErrUnavailable, err)
	}
	defer pool.Close()
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	return migrations.Apply(ctx, db, migrations.Postgres)
}

// Close closes the database/sql handle and then the pool under it.
func (s *Store) Close() error {
	err := errors.Join(s.db.Close(), s.keyed.Close())
	s.pool.Close()
	s.keyedPool.Close()
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

// RegistrySeqSQL draws from a sequence: max(seq) + 1 would hand concurrent
// SERIALIZABLE registrations the same number.
func (dialect) RegistrySeqSQL() string { return "nextval('registry_seq')" }

// JSONNumberSQL is the jsonb path as text, cast; see sqlstore.Dialect.
func (dialect) JSONNumberSQL(col string, path ...string) string {
	return "(" + col + " #>> '{" + strings.Join(path, ",") + "}')::double precision"
}

var _ sqlstore.Copier = dialect{}

// analyzeMinRows is the smallest load after which CopyRows refreshes the
// table's planner statistics; smaller ones cannot make a plan slow.
const analyzeMinRows = 1000

// CopyRows loads rows with COPY FROM STDIN on the pgx connection under conn,
// so it runs inside the transaction open there: pgxpool's own CopyFrom would
// take another connection and commit on its own.
//
// A load that is large beside the table is followed by ANALYZE, as
// PostgreSQL's "Populating a Database" advises: until autovacuum gets to it
// the planner believes the new rows absent, and a selection from a freshly
// registered 10,000-case dataset took 300-600 ms on nested loops instead of
// 3-20 ms. The condition is autovacuum's own (a tenth of the table), so this
// only does at once what autovacuum would do within a minute.
func (dialect) CopyRows(ctx context.Context, conn *sql.Conn, table string, columns []string, rows [][]any) error {
	return conn.Raw(func(driverConn any) error {
		c, ok := driverConn.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("copy into %s: driver connection is a %T, not a pgx one", table, driverConn)
		}
		pc := c.Conn()
		n, err := pc.CopyFrom(ctx, pgx.Identifier{table}, columns, pgx.CopyFromRows(rows))
		if err != nil {
			return fmt.Errorf("copy into %s: %w", table, err)
		}
		if n != int64(len(rows)) {
			return fmt.Errorf("copy into %s: copied %d rows of %d", table, n, len(rows))
		}
		if n < analyzeMinRows {
			return nil
		}
		// reltuples is -1 (never analysed) or the estimate of the last ANALYZE.
		var reltuples float64
		if err := pc.QueryRow(ctx, `SELECT reltuples FROM pg_class WHERE oid = $1::regclass`, table).Scan(&reltuples); err != nil {
			return fmt.Errorf("statistics of %s: %w", table, err)
		}
		if reltuples >= 0 && float64(n) < reltuples/10 {
			return nil
		}
		if _, err := pc.Exec(ctx, `ANALYZE `+pgx.Identifier{table}.Sanitize()); err != nil {
			return fmt.Errorf("analyze %s: %w", table, err)
		}
		return nil
	})
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
