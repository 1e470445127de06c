// Package sqlstore implements store.Store once, on database/sql, for both
// backends. store/postgres and store/sqlite open the connections, supply a
// Dialect for the few things that differ (error codes, time columns,
// isolation) and add what only they have (Migrate, Close, the pgx pool).
//
// Every query is written once: both drivers take $N placeholders, and both
// databases support ON CONFLICT ... DO NOTHING and RETURNING.
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"svc/internal/platform/derrors"
	"svc/store"
)

// Dialect is what differs between the databases.
type Dialect interface {
	// Name is "postgres" or "sqlite".
	Name() string
	// IsUniqueViolation reports whether err is a unique-constraint violation,
	// by the driver's error code.
	IsUniqueViolation(err error) bool
	// IsRetryable reports whether a transaction that failed with err may
	// succeed when run again (serialization failure, deadlock, busy).
	IsRetryable(err error) bool
	// TimeArg is the value a created_at column stores for t, which is UTC
	// and truncated to microseconds.
	TimeArg(t time.Time) any
	// EventLockSQL is a statement AppendEvent runs in its transaction before
	// inserting, so that events commit in seq order and a poller reading
	// with AfterSeq cannot pass over an event that commits late. It must
	// hold its lock until the transaction ends. Empty when the database
	// already commits appends in seq order (SQLite: one writer).
	EventLockSQL() string
	// RegistrySeqSQL is an SQL expression drawing the next registry_versions
	// seq inside a write transaction: a value greater than every seq drawn
	// before, never drawn again.
	RegistrySeqSQL() string
	// JSONNumberSQL is an SQL expression for the number at path (field
	// names, outermost first) of the JSON document in column col: NULL
	// when absent.
	JSONNumberSQL(col string, path ...string) string
}

// Copier is implemented by a Dialect that bulk-loads rows faster than
// INSERT statements can (PostgreSQL's COPY). Without it, bulk writes use a
// prepared INSERT in the transaction.
type Copier interface {
	// CopyRows appends rows (values in the order of columns) to table
	// through conn, inside the transaction open on conn. It may refresh
	// the table's planner statistics after a large load.
	CopyRows(ctx context.Context, conn *sql.Conn, table string, columns []string, rows [][]any) error
}

// Options tune a DB.
type Options struct {
	// TxOptions are passed to BeginTx by Transact.
	TxOptions *sql.TxOptions
	// KeyedTxOptions are passed to BeginTx by TransactKeyed; nil means
	// TxOptions.
	KeyedTxOptions *sql.TxOptions
	// MaxAttempts bounds how many times Transact runs fn when the
	// transaction fails with a retryable error; 0 means 10.
	MaxAttempts int
	// Keyed, when set, is the handle TransactKeyed's transactions run on
	// (else the write handle): their statements name rows by key, so a
	// backend may plan them once for every value (PostgreSQL's pool of
	// them forces generic plans).
	Keyed *sql.DB
}

// DB is a store.Store without Close: the backends own the connections.
type DB struct {
	ops
	read, write *sql.DB
	opts        Options
}

// New returns a DB that reads through read and writes through write; they
// may be the same *sql.DB. Transact runs on write.
func New(d Dialect, read, write *sql.DB, opts Options) *DB {
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = 10
	}
	db := &DB{
		read:  read,
		write: write,
		opts:  opts,
	}
	db.ops = ops{d: d, r: read, w: write, kind: "Store", db: db}
	return db
}

// Dialect returns the database's dialect name.
func (db *DB) Dialect() string { return db.d.Name() }

// Ping checks that both the read and write connections answer.
func (db *DB) Ping(ctx context.Context) (err error) {
	defer derrors.Wrap(&err, "Store.Ping(ctx)")
	for _, h := range []*sql.DB{db.write, db.read} {
		if err := h.PingContext(ctx); err != nil {
			return fmt.Errorf("%w: %v", derrors.ErrUnavailable, err)
		}
	}
	return nil
}

// Transact runs fn in one transaction; see store.Store. Inside fn use only
// tx: on SQLite the transaction holds the only write connection, so a write
// through the Store would wait for it until ctx ends.
func (db *DB) Transact(ctx context.Context, fn func(tx store.Tx) error) (err error) {
	defer derrors.Wrap(&err, "Store.Transact(ctx)")
	return db.run(ctx, db.opts.TxOptions, func(o ops) error { return fn(o) })
}

// TransactKeyed is Transact at Options.KeyedTxOptions; see store.Store.
func (db *DB) TransactKeyed(ctx context.Context, fn func(tx store.Tx) error) (err error) {
	defer derrors.Wrap(&err, "Store.TransactKeyed(ctx)")
	opts := db.opts.KeyedTxOptions
	if opts == nil {
		opts = db.opts.TxOptions
	}
	h := db.write
	if db.opts.Keyed != nil {
		h = db.opts.Keyed
	}
	return db.runOn(ctx, h, opts, func(o ops) error { return fn(o) })
}

// run runs fn on the ops of one transaction, retrying as Transact does.
func (db *DB) run(ctx context.Context, opts *sql.TxOptions, fn func(o ops) error) (err error) {
	return db.runOn(ctx, db.write, opts, fn)
}

// runOn is run on the connections of h.
func (db *DB) runOn(ctx context.Context, h *sql.DB, opts *sql.TxOptions, fn func(o ops) error) (err error) {
	for attempt := 1; ; attempt++ {
		err = db.transactOnce(ctx, h, opts, fn)
		if err == nil || !db.d.IsRetryable(err) {
			return err
		}
		if attempt >= db.opts.MaxAttempts {
			return fmt.Errorf("%w: gave up after %d attempts: %w", derrors.ErrUnavailable, attempt, err)
		}
		t := time.NewTimer(backoff(attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(err, ctx.Err())
		case <-t.C:
		}
	}
}

// backoff is the pause before attempt+1: exponential from 1ms, capped at
// 100ms, with jitter so that the transactions that collided do not collide
// again in lockstep.
func backoff(attempt int) time.Duration {
	d := time.Millisecond << min(attempt-1, 7)
	d = min(d, 100*time.Millisecond)
	return d/2 + rand.N(d/2+1)
}

func (db *DB) transactOnce(ctx context.Context, h *sql.DB, opts *sql.TxOptions, fn func(o ops) error) (err error) {
	// A dedicated connection rather than h.BeginTx, so that a Copier can
	// reach the driver connection the transaction runs on.
	conn, err := h.Conn(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, opts)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() {
		if p := recover(); p != nil {
			_ = tx.Rollback()
			panic(p)
		}
		if err != nil {
			// The error that made us roll back is the one that matters.
			_ = tx.Rollback()
		}
	}()
	if err := fn(ops{d: db.d, r: tx, w: tx, kind: "Tx", tx: &txState{conn: conn}}); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// querier is what *sql.DB and *sql.Tx have in common.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
}

// ops implements store.Tx on a pair of queriers: on the Store, reads go to
// the read pool and writes to the writer; in a transaction both are the tx,
// so it reads its own writes.
type ops struct {
	d    Dialect
	r, w querier
	kind string   // "Store" or "Tx", for error context
	db   *DB      // on the Store: where atomic begins a transaction; nil in one
	tx   *txState // in a transaction: what it has done so far; nil on the Store
}

// txState is what one transaction remembers across the ops calls made in it.
type txState struct {
	eventLocked bool      // EventLockSQL has run
	conn        *sql.Conn // the connection the transaction runs on, for a Copier
}

var _ store.Tx = ops{}

// atomic runs fn on ops inside one transaction: o itself when it is a
// transaction's, else a new transaction (retried as Transact is), so that a
// method of several statements never half-applies when called on the Store.
func (o ops) atomic(ctx context.Context, fn func(o ops) error) error {
	if o.db == nil {
		return fn(o)
	}
	return o.db.run(ctx, o.db.opts.TxOptions, fn)
}

// normTime is how the store keeps times: UTC, to the microsecond (the
// resolution of a PostgreSQL timestamp), so they round-trip alike on both
// backends.
func normTime(t time.Time) time.Time {
	if t.IsZero() {
		t = time.Now()
	}
	return t.UTC().Truncate(time.Microsecond)
}

// mapErr turns driver errors into the store's sentinels.
func (o ops) mapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sql.ErrNoRows):
		// The driver's words (and a constraint's or table's name) go to the
		// log only: derrors.Message drops the Op.
		return &derrors.Op{Op: err.Error(), Err: derrors.NotFoundf("no such record")}
	case o.d.IsUniqueViolation(err):
		return &derrors.Op{Op: err.Error(), Err: derrors.Conflictf("the record already exists")}
	}
	return err
}

// found maps the error of a read of one row: no row is a NotFound error
// whose message (format and args) names what was looked for, any other
// error is mapped as mapErr does, and nil stays nil.
func (o ops) found(err error, format string, args ...any) error {
	if errors.Is(err, sql.ErrNoRows) {
		return derrors.NotFoundf(format, args...)
	}
	return o.mapErr(err)
}
