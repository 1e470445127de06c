package storetest

import (
	"context"
	"sync"

	"svc/store"
)

// Failing is a store.Store whose chosen write methods fail, on the store
// and inside its transactions, for the tests of what a service or an
// activity does when a write fails (a record marked failed must not stay
// queued; a dropped side record must be logged). Every other method is
// the wrapped store's. Safe for concurrent use.
type Failing struct {
	store.Store

	mu    sync.Mutex
	fail  map[string]error
	calls map[string]int
}

// NewFailing wraps st; nothing fails until Fail says so.
func NewFailing(st store.Store) *Failing {
	return &Failing{Store: st, fail: map[string]error{}, calls: map[string]int{}}
}

// Fail makes every later call of method (a method name of store.Tx that
// Failing overrides, such as "PutRun", or "Transact") return err; a nil
// err makes it succeed again.
func (f *Failing) Fail(method string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil {
		delete(f.fail, method)
		return
	}
	f.fail[method] = err
}

// Calls is how many times method was called, failed or not.
func (f *Failing) Calls(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[method]
}

// check counts a call of method and returns the error it is set to fail with.
func (f *Failing) check(method string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[method]++
	return f.fail[method]
}

// failing returns the error method is set to fail with, without counting
// a call.
func (f *Failing) failing(method string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fail[method]
}

// Transact runs fn on a transaction whose chosen methods fail as the
// store's do.
func (f *Failing) Transact(ctx context.Context, fn func(tx store.Tx) error) error {
	if err := f.check("Transact"); err != nil {
		return err
	}
	return f.Store.Transact(ctx, func(tx store.Tx) error { return fn(&failingTx{Tx: tx, f: f}) })
}

// TransactKeyed is Transact for keyed transactions.
func (f *Failing) TransactKeyed(ctx context.Context, fn func(tx store.Tx) error) error {
	if err := f.check("TransactKeyed"); err != nil {
		return err
	}
	return f.Store.TransactKeyed(ctx, func(tx store.Tx) error { return fn(&failingTx{Tx: tx, f: f}) })
}

// The writes Failing can fail, on the store and in a transaction.

func (f *Failing) CreateRun(ctx context.Context, r store.Run) (store.Run, error) {
	return failingCreateRun(ctx, f.Store, f, r)
}

func (f *Failing) PutRun(ctx context.Context, r store.Run) (store.Run, error) {
	return failingPutRun(ctx, f.Store, f, r)
}

func (f *Failing) CreateRuns(ctx context.Context, rs []store.Run) ([]store.Run, []bool, error) {
	return failingCreateRuns(ctx, f.Store, f, rs)
}

func (f *Failing) PutRuns(ctx context.Context, rs []store.Run) ([]store.Run, error) {
	return failingPutRuns(ctx, f.Store, f, rs)
}

func (f *Failing) AppendRunLogs(ctx context.Context, chunks []store.RunLog) error {
	return failingAppendRunLogs(ctx, f.Store, f, chunks)
}

func (f *Failing) CreateScorecard(ctx context.Context, s store.Scorecard) (store.Scorecard, error) {
	return failingCreateScorecard(ctx, f.Store, f, s)
}

func (f *Failing) PutScorecard(ctx context.Context, s store.Scorecard) (store.Scorecard, error) {
	return failingPutScorecard(ctx, f.Store, f, s)
}

func (f *Failing) AppendScorecardSteps(ctx context.Context, steps []store.ScorecardStep) error {
	return failingAppendScorecardSteps(ctx, f.Store, f, steps)
}

func (f *Failing) AppendEvent(ctx context.Context, e store.Event) (store.Event, error) {
	return failingAppendEvent(ctx, f.Store, f, e)
}

func (f *Failing) AddNotification(ctx context.Context, n store.Notification) (store.Notification, bool, error) {
	return failingAddNotification(ctx, f.Store, f, n)
}

// failingTx is a transaction of a Failing store.
type failingTx struct {
	store.Tx
	f *Failing
}

func (t *failingTx) CreateRun(ctx context.Context, r store.Run) (store.Run, error) {
	return failingCreateRun(ctx, t.Tx, t.f, r)
}

func (t *failingTx) PutRun(ctx context.Context, r store.Run) (store.Run, error) {
	return failingPutRun(ctx, t.Tx, t.f, r)
}

func (t *failingTx) CreateRuns(ctx context.Context, rs []store.Run) ([]store.Run, []bool, error) {
	return failingCreateRuns(ctx, t.Tx, t.f, rs)
}

func (t *failingTx) PutRuns(ctx context.Context, rs []store.Run) ([]store.Run, error) {
	return failingPutRuns(ctx, t.Tx, t.f, rs)
}

func (t *failingTx) AppendRunLogs(ctx context.Context, chunks []store.RunLog) error {
	return failingAppendRunLogs(ctx, t.Tx, t.f, chunks)
}

func (t *failingTx) CreateScorecard(ctx context.Context, s store.Scorecard) (store.Scorecard, error) {
	return failingCreateScorecard(ctx, t.Tx, t.f, s)
}

func (t *failingTx) PutScorecard(ctx context.Context, s store.Scorecard) (store.Scorecard, error) {
	return failingPutScorecard(ctx, t.Tx, t.f, s)
}

func (t *failingTx) AppendScorecardSteps(ctx context.Context, steps []store.ScorecardStep) error {
	return failingAppendScorecardSteps(ctx, t.Tx, t.f, steps)
}

func (t *failingTx) AppendEvent(ctx context.Context, e store.Event) (store.Event, error) {
	return failingAppendEvent(ctx, t.Tx, t.f, e)
}

func (t *failingTx) AddNotification(ctx context.Context, n store.Notification) (store.Notification, bool, error) {
	return failingAddNotification(ctx, t.Tx, t.f, n)
}

func failingCreateRun(ctx context.Context, tx store.Tx, f *Failing, r store.Run) (store.Run, error) {
	if err := f.check("CreateRun"); err != nil {
		return store.Run{}, err
	}
	return tx.CreateRun(ctx, r)
}

func failingPutRun(ctx context.Context, tx store.Tx, f *Failing, r store.Run) (store.Run, error) {
	if err := f.check("PutRun"); err != nil {
		return store.Run{}, err
	}
	return tx.PutRun(ctx, r)
}

// failingCreateRuns fails as CreateRuns is set to, or else as CreateRun
// is: the batch writes what the single write would.
func failingCreateRuns(ctx context.Context, tx store.Tx, f *Failing, rs []store.Run) ([]store.Run, []bool, error) {
	err := f.check("CreateRuns")
	if err == nil && len(rs) > 0 {
		err = f.failing("CreateRun")
	}
	if err != nil {
		return nil, nil, err
	}
	return tx.CreateRuns(ctx, rs)
}

// failingPutRuns fails as PutRuns is set to, or else as PutRun is.
func failingPutRuns(ctx context.Context, tx store.Tx, f *Failing, rs []store.Run) ([]store.Run, error) {
	err := f.check("PutRuns")
	if err == nil && len(rs) > 0 {
		err = f.failing("PutRun")
	}
	if err != nil {
		return nil, err
	}
	return tx.PutRuns(ctx, rs)
}

func failingAppendRunLogs(ctx context.Context, tx store.Tx, f *Failing, chunks []store.RunLog) error {
	if err := f.check("AppendRunLogs"); err != nil {
		return err
	}
	return tx.AppendRunLogs(ctx, chunks)
}

func failingCreateScorecard(ctx context.Context, tx store.Tx, f *Failing, s store.Scorecard) (store.Scorecard, error) {
	if err := f.check("CreateScorecard"); err != nil {
		return store.Scorecard{}, err
	}
	return tx.CreateScorecard(ctx, s)
}

func failingPutScorecard(ctx context.Context, tx store.Tx, f *Failing, s store.Scorecard) (store.Scorecard, error) {
	if err := f.check("PutScorecard"); err != nil {
		return store.Scorecard{}, err
	}
	return tx.PutScorecard(ctx, s)
}

func failingAppendScorecardSteps(ctx context.Context, tx store.Tx, f *Failing, steps []store.ScorecardStep) error {
	if err := f.check("AppendScorecardSteps"); err != nil {
		return err
	}
	return tx.AppendScorecardSteps(ctx, steps)
}

func failingAppendEvent(ctx context.Context, tx store.Tx, f *Failing, e store.Event) (store.Event, error) {
	if err := f.check("AppendEvent"); err != nil {
		return store.Event{}, err
	}
	return tx.AppendEvent(ctx, e)
}

func failingAddNotification(ctx context.Context, tx store.Tx, f *Failing, n store.Notification) (store.Notification, bool, error) {
	if err := f.check("AddNotification"); err != nil {
		return store.Notification{}, false, err
	}
	return tx.AddNotification(ctx, n)
}
