package activities

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
	"svc/internal/domain/trace"
	"svc/internal/platform/derrors"
	"svc/store"
	"svc/store/records"
)

// Group commit of the writes every case of a batch makes: the creation of
// its child run and its finish. With dozens of cases in flight per worker
// and each lasting a few milliseconds, many of those writes arrive within
// the same millisecond; written one transaction each they cost the
// database a transaction and the worker several round trips per case.
// Instead a case's write joins a queue, and one caller at a time (the
// leader) writes everything queued in one keyed transaction with the
// store's batch methods, so a group costs about as many statements as one
// case did. There is no timer: a write that finds no commit running
// commits at once; writes that arrive while a commit runs form the next
// group.

// maxGroup bounds the items of one group commit.
const maxGroup = 128

// groupCommitTimeout bounds one group's transaction. It runs on behalf of
// every item, so it does not end with the leader's context.
const groupCommitTimeout = time.Minute

// groupCommit is the queue of one worker process's writes; its zero value
// is ready to use.
type groupCommit struct {
	mu      sync.Mutex
	pending []*commitItem
	leading bool // a caller is committing groups
}

// wake is what a queued item is woken with.
type wake int

const (
	wakeDone  wake = iota + 1 // committed (or failed early): its result is set
	wakeLead                  // lead the next groups
	wakeAlone                 // its group failed: write it on its own
)

// commitItem is one queued write: a finish or a creation.
type commitItem struct {
	ctx    context.Context
	finish *finishItem
	create *createItem
	wake   chan wake
	err    error // with wakeDone
}

// key is the run an item writes: two items of one run never share a group,
// so that the second sees the first as committed, as it would one by one.
func (it *commitItem) key() string {
	if it.finish != nil {
		return it.finish.run.Tenant + "\x00" + it.finish.run.ID
	}
	return it.create.row.Workspace + "\x00" + it.create.row.ID
}

// finishItem is a finish: finishOne's arguments and its result.
type finishItem struct {
	now    time.Time
	run    eval.Run
	result *eval.CaseResult
	runErr *eval.Error
	logs   []store.RunLog
	out    RunStatus
}

// createItem is the creation of a run: createRunOne's argument and its
// result.
type createItem struct {
	row     store.Run
	stored  store.Run
	created bool
}

// finishGrouped is finish through the group commit.
func (a *Activities) finishGrouped(ctx context.Context, run eval.Run, result *eval.CaseResult, runErr *eval.Error, logs []store.RunLog) (RunStatus, error) {
	it := &commitItem{ctx: ctx, finish: &finishItem{now: a.now(), run: run, result: result, runErr: runErr, logs: logs}}
	if err := a.commits.do(a, it); err != nil {
		return RunStatus{}, err
	}
	return it.finish.out, nil
}

// createRun inserts row, or reads the run a concurrent attempt inserted
// first, through the group commit; created reports which.
func (a *Activities) createRun(ctx context.Context, row store.Run) (stored store.Run, created bool, err error) {
	it := &commitItem{ctx: ctx, create: &createItem{row: row}}
	if err := a.commits.do(a, it); err != nil {
		return store.Run{}, false, err
	}
	return it.create.stored, it.create.created, nil
}

// createRunOne is createRun on its own: CreateRun, and on a conflict the
// stored run.
func (a *Activities) createRunOne(ctx context.Context, row store.Run) (store.Run, bool, error) {
	stored, err := a.Store.CreateRun(ctx, row)
	switch {
	case errors.Is(err, derrors.ErrConflict):
		// A concurrent attempt made it first: use that one.
		stored, err = a.Store.GetRun(ctx, row.Workspace, row.ID)
		return stored, false, err
	case err != nil:
		return store.Run{}, false, err
	}
	return stored, true, nil
}

// do queues it and returns once it is written, leading the commits when
// no other caller does.
func (g *groupCommit) do(a *Activities, it *commitItem) error {
	it.wake = make(chan wake, 1)
	g.mu.Lock()
	g.pending = append(g.pending, it)
	w := wakeLead
	if g.leading {
		w = 0
	} else {
		g.leading = true
	}
	g.mu.Unlock()
	if w == 0 {
		w = <-it.wake
	}
	if w == wakeLead {
		w = g.lead(a, it)
	}
	if w == wakeAlone {
		return a.writeOne(it)
	}
	return it.err
}

// lead commits groups until mine is written, then hands the lead to the
// oldest queued item, if any, and returns how mine ended.
func (g *groupCommit) lead(a *Activities, mine *commitItem) wake {
	var mineEnded wake
	for mineEnded == 0 {
		group := g.take()
		if mine.err != nil {
			mineEnded = wakeDone // take ended it early
		}
		if len(group) == 0 {
			break
		}
		if len(group) == 1 && group[0] == mine {
			// Alone: written as without group commit, which for a
			// creation is one statement rather than a transaction. The
			// lead is kept meanwhile, so that the writes arriving form
			// the next group.
			mine.err, mineEnded = a.writeOne(mine), wakeDone
			break
		}
		err := a.commitGroup(context.WithoutCancel(mine.ctx), group)
		if err != nil {
			a.logger().Warn("group commit failed; writing its items one by one", "items", len(group), "error", err)
		}
		for _, it := range group {
			w := wakeDone
			if err != nil {
				w = wakeAlone
			}
			if it == mine {
				mineEnded = w
				continue
			}
			it.wake <- w
		}
	}
	g.mu.Lock()
	if len(g.pending) > 0 {
		g.pending[0].wake <- wakeLead
	} else {
		g.leading = false
	}
	g.mu.Unlock()
	if mineEnded == 0 {
		return wakeAlone // not reached: mine was queued
	}
	return mineEnded
}

// take removes the next group from the queue: at most maxGroup items, in
// order, one per run. An item whose context has ended is woken with its
// error rather than written, as its own transaction would not begin.
func (g *groupCommit) take() []*commitItem {
	g.mu.Lock()
	defer g.mu.Unlock()
	var group, rest []*commitItem
	keys := map[string]bool{}
	for _, it := range g.pending {
		switch {
		case it.ctx.Err() != nil:
			// The leader's own item too: its channel is free, as it leads.
			it.err = it.ctx.Err()
			it.wake <- wakeDone
		case len(group) < maxGroup && !keys[it.key()]:
			keys[it.key()] = true
			group = append(group, it)
		default:
			rest = append(rest, it)
		}
	}
	g.pending = rest
	return group
}

// writeOne writes an item of a failed group on its own, as if there were
// no group commit, so that one bad item does not fail its neighbours.
func (a *Activities) writeOne(it *commitItem) error {
	if f := it.finish; f != nil {
		out, err := a.finishOne(it.ctx, f.now, f.run, f.result, f.runErr, f.logs...)
		f.out = out
		return err
	}
	c := it.create
	var err error
	c.stored, c.created, err = a.createRunOne(it.ctx, c.row)
	return err
}

// commitGroup writes a group in one keyed transaction with the store's
// batch methods, each item as finishOne or createRunOne would write it.
// An error of any item fails the group.
func (a *Activities) commitGroup(ctx context.Context, group []*commitItem) (err error) {
	defer func() {
		// A panic here would leave the group's other writers waiting:
		// each one writes alone instead, in its own activity.
		if p := recover(); p != nil {
			err = fmt.Errorf("group commit panicked: %v", p)
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, groupCommitTimeout)
	defer cancel()
	var creates []*createItem
	var finishes []*finishItem
	for _, it := range group {
		if it.create != nil {
			creates = append(creates, it.create)
		} else {
			finishes = append(finishes, it.finish)
		}
	}
	return a.Store.TransactKeyed(ctx, func(tx store.Tx) error {
		if err := createGroup(ctx, tx, creates); err != nil {
			return err
		}
		return finishGroup(ctx, tx, finishes)
	})
}

// createGroup inserts the runs of creates, reading back those a
// concurrent attempt inserted first.
func createGroup(ctx context.Context, tx store.Tx, creates []*createItem) error {
	if len(creates) == 0 {
		return nil
	}
	rows := make([]store.Run, len(creates))
	for i, c := range creates {
		rows[i] = c.row
	}
	stored, created, err := tx.CreateRuns(ctx, rows)
	if err != nil {
		return err
	}
	taken := map[string][]string{} // workspace -> ids to read back
	for i, c := range creates {
		c.stored, c.created = stored[i], created[i]
		if !created[i] {
			taken[c.row.Workspace] = append(taken[c.row.Workspace], c.row.ID)
		}
	}
	if len(taken) == 0 {
		return nil
	}
	found, err := getRuns(ctx, tx, taken)
	if err != nil {
		return err
	}
	for _, c := range creates {
		if c.created {
			continue
		}
		r, ok := found[c.row.Workspace+"\x00"+c.row.ID]
		if !ok {
			// Its canonical slot is another run's: createRunOne reports it.
			return derrors.NotFoundf("run %q of workspace %q", c.row.ID, c.row.Workspace)
		}
		c.stored = r
	}
	return nil
}

// getRuns reads runs by workspace and id, keyed by workspace NUL id.
func getRuns(ctx context.Context, tx store.Tx, ids map[string][]string) (map[string]store.Run, error) {
	out := map[string]store.Run{}
	for ws, ids := range ids {
		rows, err := tx.GetRuns(ctx, ws, ids)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			out[ws+"\x00"+r.ID] = r
		}
	}
	return out, nil
}

// finishGroup writes the finishes of a group: their log chunks, then the
// runs read together, their trajectories sealed together and their
// terminal records put together.
func finishGroup(ctx context.Context, tx store.Tx, finishes []*finishItem) error {
	if len(finishes) == 0 {
		return nil
	}
	var logs []store.RunLog
	ids := map[string][]string{}
	for _, f := range finishes {
		logs = append(logs, f.logs...)
		ids[f.run.Tenant] = append(ids[f.run.Tenant], f.run.ID)
	}
	if len(logs) > 0 {
		if err := tx.AppendRunLogs(ctx, logs); err != nil {
			return err
		}
	}
	cur, err := getRuns(ctx, tx, ids)
	if err != nil {
		return err
	}
	var seals []store.Trajectory
	var puts []store.Run
	for _, f := range finishes {
		row, ok := cur[f.run.Tenant+"\x00"+f.run.ID]
		if !ok {
			return derrors.NotFoundf("run %q of workspace %q", f.run.ID, f.run.Tenant)
		}
		p, err := planFinish(f.now, f.run, row, f.result, f.runErr)
		if err != nil {
			return err
		}
		f.out = p.status
		if p.trajectory != nil {
			seals = append(seals, *p.trajectory)
		}
		if p.row != nil {
			puts = append(puts, *p.row)
		}
	}
	if len(seals) > 0 {
		if _, _, err := tx.SealTrajectories(ctx, seals); err != nil {
			return err
		}
	}
	if len(puts) > 0 {
		if _, err := tx.PutRuns(ctx, puts); err != nil {
			return err
		}
	}
	return nil
}

// finishPlan is what finishing a run writes, decided from the run as
// stored: nothing when it is already terminal, else the trajectory to
// seal (when there is a result) and the terminal record.
type finishPlan struct {
	status     RunStatus
	trajectory *store.Trajectory
	row        *store.Run
}

// planFinish decides how run finishes with result or runErr at now, given
// cur, the run as stored. It fills result's trace reference, as the
// trajectory it returns will be sealed in the same transaction.
func planFinish(now time.Time, run eval.Run, cur store.Run, result *eval.CaseResult, runErr *eval.Error) (finishPlan, error) {
	if eval.Status(cur.Status).Terminal() {
		return finishPlan{status: RunStatus{Status: cur.Status, WebhookURL: run.WebhookURL}}, nil
	}
	if n, err := records.AttemptsOf(cur); err == nil && n > run.Attempts {
		// A later attempt marked the run since this one read it: the
		// count stays the stored one.
		run.Attempts = n
	}
	var p finishPlan
	if result != nil {
		events, digest, err := trace.SealEvents(result.Trace)
		if err != nil {
			return finishPlan{}, err
		}
		p.trajectory = &store.Trajectory{
			Workspace: run.Tenant, RunID: run.ID, Source: "svc", EventCount: len(result.Trace),
			Digest: digest, SealedAt: now, Audience: run.Audience(), Events: events,
		}
		result.TraceRef, result.TraceSealed = "trajectory:"+run.ID, true
		run.Usage, run.Provenance = result.Usage, result.Provenance
		if result.Harness != "" {
			if id, v, ok := strings.Cut(result.Harness, "@"); ok {
				run.Harness = registry.Ref{ID: id, Version: v}
			}
		}
	}
	run.Result, run.Error = result, runErr
	run.Status = eval.StatusSucceeded
	if runErr != nil {
		run.Status = eval.StatusFailed
	}
	run.FinishedAt, run.UpdatedAt = &now, now
	row, err := records.Row(run)
	if err != nil {
		return finishPlan{}, err
	}
	p.row = &row
	p.status = RunStatus{Status: string(run.Status), WebhookURL: run.WebhookURL}
	return p, nil
}
