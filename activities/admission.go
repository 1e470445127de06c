package activities

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"svc/drivers"
	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
	"svc/internal/platform/derrors"
	"svc/store"
	"svc/store/records"
)

// Admission on a remote runtime (spec §2.6's admission envelope): a job on
// a nomad or k8s runtime holds one of the runtime's slots while it runs, so
// that its maxConcurrent and memoryBudgetMb bound what runs on it at once
// across every batch and run of the workspace. A case waiting for a slot
// waits inside its dispatch (its activity heartbeating), not failed; the
// slots are store rows (store.Slots), leased and renewed while the job
// runs, so a worker killed while it held slots gives them back within
// slotLease.

// slotLease is how long a slot lasts unless renewed; a running job renews
// it every slotLease/3.
const slotLease = 30 * time.Second

// slotPoll bounds the wait between two asks for a slot; the first waits
// are shorter.
var slotPoll = 2 * time.Second

// slotRenewEvery is how often a running job renews its slot: three
// renewals fit in a lease, so two may fail before the slot is lost.
var slotRenewEvery = slotLease / 3

// slotCallTimeout bounds one renewal or release of a slot: one renewal
// interval, so that a renewal never overlaps the next and a store that
// stops answering never holds a finished job (which waits for its
// renewer) longer than that.
var slotCallTimeout = slotLease / 3

// admitted runs a remote runtime's jobs within the runtime's slots.
type admitted struct {
	inner drivers.Driver
	slots store.Slots
	now   func() time.Time
	log   *slog.Logger
	req   store.SlotRequest // Workspace, Runtime, ScorecardID, MemoryMb and the bounds; per job the Holder
	// activity is the dispatching activity's context: when it ends without
	// a cancel (the lease was lost) the job is left running for the next
	// attempt to adopt, and so is its slot.
	activity context.Context
	// waiting, when set, is told that the job waits for a slot (true) and
	// that it got one after waiting (false), so that the run shows as
	// queued meanwhile.
	waiting func(ctx context.Context, waiting bool)
}

// Run waits for a slot, runs the job in it, and gives the slot back.
func (d *admitted) Run(ctx context.Context, j drivers.Job) (drivers.Result, error) {
	req := d.req
	req.Holder = j.RunID
	if err := d.acquire(ctx, req); err != nil {
		return drivers.Result{}, err
	}
	renewed := make(chan struct{})
	stop := make(chan struct{})
	go func() {
		defer close(renewed)
		d.renew(ctx, req, stop)
	}()
	res, err := d.inner.Run(ctx, j)
	close(stop)
	<-renewed
	if d.activity.Err() != nil && !cancelRequested(d.activity) {
		// Left for the next attempt, which takes the slot over (its holder
		// is the run) or, if the lease ran out first, asks again.
		return res, err
	}
	if rerr := d.release(ctx, req); rerr != nil {
		d.log.Warn("admission: giving a slot back failed; it frees itself when its lease ends", "run", req.Holder, "runtime", req.Runtime, "err", rerr)
	}
	return res, err
}

// acquire asks for a slot until it is given, waiting a little longer
// between asks up to slotPoll. A wait ended by ctx takes the job's waiting
// row out of the list.
func (d *admitted) acquire(ctx context.Context, req store.SlotRequest) error {
	wait := 100 * time.Millisecond
	waited := false
	for {
		req.Now = d.now()
		req.Until = req.Now.Add(slotLease)
		held, err := d.slots.AcquireSlot(ctx, req)
		if err != nil {
			return err
		}
		if held {
			if waited && d.waiting != nil {
				d.waiting(ctx, false)
			}
			return nil
		}
		if !waited && d.waiting != nil {
			d.waiting(ctx, true)
		}
		waited = true
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			_ = d.release(ctx, req)
			return context.Cause(ctx)
		case <-t.C:
		}
		wait = min(2*wait, slotPoll)
	}
}

// release gives req's slot back, after ctx ended too, within
// slotCallTimeout.
func (d *admitted) release(ctx context.Context, req store.SlotRequest) error {
	ctx, cancel := detached(ctx, slotCallTimeout)
	defer cancel()
	return d.slots.ReleaseSlot(ctx, req.Workspace, req.Runtime, req.Holder)
}

// renew extends the slot's lease every slotRenewEvery until stop is
// closed or ctx ends (the job's context: once it ends the job is stopped
// or left for the next attempt, which takes the slot over), each renewal
// bounded by slotCallTimeout. A slot that was lost meanwhile (its lease
// ran out while the store was unreachable) is asked for again once: the
// job is running already, so it is logged rather than stopped.
func (d *admitted) renew(ctx context.Context, req store.SlotRequest, stop <-chan struct{}) {
	tick := time.NewTicker(slotRenewEvery)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		d.renewOnce(ctx, req)
	}
}

// renewOnce is one renewal of renew, within slotCallTimeout.
func (d *admitted) renewOnce(ctx context.Context, req store.SlotRequest) {
	ctx, cancel := context.WithTimeout(ctx, slotCallTimeout)
	defer cancel()
	now := d.now()
	err := d.slots.RenewSlot(ctx, req.Workspace, req.Runtime, req.Holder, now.Add(slotLease))
	if errors.Is(err, derrors.ErrNotFound) {
		req.Now, req.Until = now, now.Add(slotLease)
		var held bool
		if held, err = d.slots.AcquireSlot(ctx, req); err == nil && !held {
			d.log.Warn("admission: a running job lost its slot and the runtime is full; it runs on over the bound", "run", req.Holder, "runtime", req.Runtime)
		}
	}
	if err != nil {
		d.log.Warn("admission: renewing a slot failed", "run", req.Holder, "runtime", req.Runtime, "err", err)
	}
}

// admit wraps the driver of a job of run on remote runtime spec in the
// runtime's admission envelope; memoryMb is the job's declared memory (0:
// none, outside the memory budget). ctx is the dispatching activity's.
func (a *Activities) admit(ctx context.Context, d drivers.Driver, run eval.Run, spec *registry.RuntimeSpec, memoryMb int) drivers.Driver {
	req := store.SlotRequest{Workspace: run.Tenant, Runtime: spec.ID, ScorecardID: run.ParentScorecardID,
		MemoryMb: memoryMb, MaxConcurrent: spec.EffectiveMaxConcurrent()}
	if spec.MemoryBudgetMb != nil {
		req.MemoryBudgetMb = *spec.MemoryBudgetMb
	}
	return &admitted{inner: d, slots: a.Store, now: a.now, log: a.logger(), req: req, activity: ctx,
		waiting: func(ctx context.Context, waiting bool) { a.markWaiting(ctx, run, waiting) }}
}

// markWaiting shows run as queued while its job waits for a slot of its
// runtime (waiting), and as running again once it has one, unless the run
// ended meanwhile. It is what progress counts read: a batch's case that
// waits for a slot is queued, not running. A failure is logged: the job
// waits or runs all the same.
func (a *Activities) markWaiting(ctx context.Context, run eval.Run, waiting bool) {
	from, to := eval.StatusRunning, eval.StatusQueued
	if !waiting {
		from, to = to, from
	}
	ctx, cancel := detached(ctx, recordWriteTimeout)
	defer cancel()
	err := a.Store.TransactKeyed(ctx, func(tx store.Tx) error {
		row, err := tx.GetRun(ctx, run.Tenant, run.ID)
		if err != nil {
			return err
		}
		cur, err := records.FromRow(row)
		if err != nil || cur.Status != from {
			return err
		}
		cur.Status, cur.UpdatedAt = to, a.now()
		next, err := records.Row(cur)
		if err != nil {
			return err
		}
		_, err = tx.PutRun(ctx, next)
		return err
	})
	if err != nil {
		a.logger().Warn("admission: marking a run that waits for a slot", "run", run.ID, "waiting", waiting, "err", err)
	}
}
