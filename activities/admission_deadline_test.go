package activities

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"svc/drivers"
	"svc/internal/domain/eval"
	"svc/internal/testing/testwait"
	"svc/store"
)

// hungSlots is a store.Slots whose renewals (and, when hangRelease,
// releases) never answer: each blocks until its context ends, as a call to
// a PostgreSQL that was killed without closing its sockets would.
type hungSlots struct {
	store.Slots
	hangRelease  bool
	renewals     atomic.Int32
	withDeadline atomic.Int32 // renewals whose context had a deadline
}

func (s *hungSlots) AcquireSlot(context.Context, store.SlotRequest) (bool, error) { return true, nil }

func (s *hungSlots) RenewSlot(ctx context.Context, _, _, _ string, _ time.Time) error {
	s.renewals.Add(1)
	if _, ok := ctx.Deadline(); ok {
		s.withDeadline.Add(1)
	}
	<-ctx.Done()
	return ctx.Err()
}

func (s *hungSlots) ReleaseSlot(ctx context.Context, _, _, _ string) error {
	if s.hangRelease {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

// untilCtx is a driver whose job runs until its context ends, or until
// stop is closed when stop is set.
type untilCtx struct{ stop chan struct{} }

func (d untilCtx) Run(ctx context.Context, _ drivers.Job) (drivers.Result, error) {
	select {
	case <-ctx.Done():
		return drivers.Result{}, ctx.Err()
	case <-d.stop:
		return drivers.Result{}, nil
	}
}

func fastSlots(t *testing.T, renewEvery, callTimeout time.Duration) {
	t.Helper()
	oldEvery, oldCall := slotRenewEvery, slotCallTimeout
	slotRenewEvery, slotCallTimeout = renewEvery, callTimeout
	t.Cleanup(func() { slotRenewEvery, slotCallTimeout = oldEvery, oldCall })
}

func newAdmitted(slots store.Slots, inner drivers.Driver, activity context.Context) *admitted {
	return &admitted{inner: inner, slots: slots, now: time.Now, log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		req: store.SlotRequest{Workspace: "ws", Runtime: "nomad-small"}, activity: activity}
}

// Issue 36 item 7 (deadlines everywhere): the admission renewer runs under
// the job's context, so when that context's deadline passes it stops, even
// while a renewal hangs on a store that does not answer, and leaves no
// goroutine behind; each renewal's own context carries a deadline.
func TestAdmissionRenewerStopsAtItsContextDeadline(t *testing.T) {
	// The renewal's own bound is far away: only the context's deadline can
	// end the hung renewal.
	fastSlots(t, 5*time.Millisecond, time.Hour)
	slots := &hungSlots{}
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	d := newAdmitted(slots, untilCtx{}, ctx)

	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		d.renew(ctx, store.SlotRequest{Workspace: "ws", Runtime: "nomad-small", Holder: "run_1"}, make(chan struct{}))
	}()
	testwait.Until(t, 10*time.Second, "the renewer to return once its context's deadline passed", func() bool {
		select {
		case <-stopped:
			return true
		default:
			return false
		}
	})
	if ctx.Err() == nil {
		t.Fatal("the renewer returned before its context's deadline")
	}
	if slots.renewals.Load() == 0 || slots.withDeadline.Load() != slots.renewals.Load() {
		t.Fatalf("%d renewals, %d with a deadline; want at least one, every one bounded", slots.renewals.Load(), slots.withDeadline.Load())
	}

	// The whole job likewise: Run returns once the deadline passes (its
	// slot's release bounded too), with no goroutine left.
	fastSlots(t, 5*time.Millisecond, 100*time.Millisecond)
	slots.hangRelease = true
	ctx2, cancel2 := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel2()
	ran := make(chan error, 1)
	go func() {
		_, err := newAdmitted(slots, untilCtx{}, ctx2).Run(ctx2, drivers.Job{RunID: "run_2"})
		ran <- err
	}()
	testwait.Until(t, 10*time.Second, "the admitted job to return after its deadline", func() bool { return len(ran) == 1 })
	testwait.Until(t, 10*time.Second, "no goroutine of the renewer left", func() bool { return runtime.NumGoroutine() <= before })
}

// A job that ends while its slot's renewal hangs on a store that does not
// answer returns within one renewal bound (slotCallTimeout); it used to
// wait for a renewal made with context.Background, that is forever.
func TestAdmittedJobDoesNotWaitForAHungRenewal(t *testing.T) {
	fastSlots(t, 5*time.Millisecond, 200*time.Millisecond)
	slots := &hungSlots{hangRelease: true}
	inner := untilCtx{stop: make(chan struct{})}
	d := newAdmitted(slots, inner, t.Context())
	ran := make(chan error, 1)
	go func() {
		_, err := d.Run(t.Context(), drivers.Job{RunID: "run_1"})
		ran <- err
	}()
	testwait.Until(t, 10*time.Second, "a renewal to start", func() bool { return slots.renewals.Load() > 0 })
	close(inner.stop) // the job ends while its renewal hangs
	start := time.Now()
	testwait.Until(t, 10*time.Second, "the job to return", func() bool { return len(ran) == 1 })
	if err := <-ran; err != nil {
		t.Fatalf("Run = %v, want the job's nil", err)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Fatalf("the job returned %v after it ended, want within about slotCallTimeout (200ms) plus the release's", waited)
	}
}

// deadlineStore answers TransactKeyed and AppendRunLogs at once with an
// error, recording whether their context was cancelled and when it ends.
type deadlineStore struct {
	store.Store
	mu        sync.Mutex
	calls     int
	cancelled bool
	deadlines []time.Time
}

func (s *deadlineStore) note(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	s.cancelled = s.cancelled || ctx.Err() != nil
	if d, ok := ctx.Deadline(); ok {
		s.deadlines = append(s.deadlines, d)
	}
	return errors.New("store unreachable")
}

func (s *deadlineStore) TransactKeyed(ctx context.Context, _ func(store.Tx) error) error {
	return s.note(ctx)
}

func (s *deadlineStore) AppendRunLogs(ctx context.Context, _ []store.RunLog) error {
	return s.note(ctx)
}

// The writes after a job outlive the activity's cancellation (the job
// ran: its result and log tail are recorded) but carry a deadline of
// recordWriteTimeout, so a store that does not answer fails them instead
// of holding the worker; they used to run on context.WithoutCancel alone.
func TestWritesAfterAJobOutliveCancelWithADeadline(t *testing.T) {
	st := &deadlineStore{}
	a := &Activities{Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // the activity was cancelled while its job ran
	start := time.Now()
	run := eval.Run{Tenant: "ws", ID: "run_1", Status: eval.StatusRunning}
	if _, err := a.finish(ctx, run, &eval.CaseResult{}, nil); err == nil {
		t.Fatal("finish on a store that fails = nil error")
	}
	a.storeLogs(ctx, RunRef{Workspace: "ws", RunID: "run_1"}, []store.RunLog{{Workspace: "ws", RunID: "run_1", Seq: 1, Stream: "stdout", Data: "x"}})
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.calls < 2 || st.cancelled {
		t.Fatalf("%d store calls, cancelled context seen: %v; want the finish and the log write made on a live context", st.calls, st.cancelled)
	}
	if len(st.deadlines) != st.calls {
		t.Fatalf("%d of %d store calls had a deadline, want every one", len(st.deadlines), st.calls)
	}
	for _, d := range st.deadlines {
		if d.Before(start) || d.After(time.Now().Add(recordWriteTimeout)) {
			t.Fatalf("a write's deadline is %v from its start, want at most recordWriteTimeout (%v)", d.Sub(start), recordWriteTimeout)
		}
	}
}
