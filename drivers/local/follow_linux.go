package local

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"svc/drivers"
	"svc/drivers/local/shim"
)

// What both ways of running a job (the job server, a supervisor per job)
// share once the harness is started: making its pipes, reading its output,
// stopping it on a timeout or a cancel, and turning its end into a Result.

// pipes returns n pipes as n read and write ends, in pairs; on an error
// none is left open.
func pipes(n int) ([]*os.File, error) {
	ends := make([]*os.File, 0, 2*n)
	for range n {
		r, w, err := os.Pipe()
		if err != nil {
			closeFiles(ends...)
			return nil, fmt.Errorf("local driver: creating pipes: %w", err)
		}
		ends = append(ends, r, w)
	}
	return ends, nil
}

// output reads a job's stdout and stderr as they arrive into two captures,
// and hands each chunk to the job's log.
type output struct {
	mu             sync.Mutex // serialises the calls of the job's log
	stdout, stderr drivers.Capture
	readers        sync.WaitGroup
	files          []*os.File
}

// readOutput starts reading outR and errR; logf may be nil.
func readOutput(outR, errR *os.File, logf func(string, []byte)) *output {
	o := &output{stdout: drivers.Capture{Max: drivers.MaxOutput}, files: []*os.File{outR, errR}}
	o.readers.Go(func() { pump(outR, "stdout", &o.stdout, &o.mu, logf) })
	o.readers.Go(func() { pump(errR, "stderr", &o.stderr, &o.mu, logf) })
	return o
}

// drain waits until both streams are read to their end, after first
// (when not nil) is closed. Every process of the job is dead by then, so
// only one that escaped the job's tree (say, one handed to systemd) could
// still hold a pipe: after drainTimeout the pipes, and extra, are closed
// under it.
func (o *output) drain(first <-chan struct{}, extra ...*os.File) {
	if first != nil {
		o.readers.Add(1)
		go func() { <-first; o.readers.Done() }()
	}
	drivers.Drain(&o.readers, drainTimeout, func() { closeFiles(append(extra, o.files...)...) })
}

// result is what a job that ran left: the supervisor's final report, the
// captured output, and whether the driver stopped it (a stop counts only
// when the harness was still running). wall stands in for a duration the
// supervisor did not measure.
func (o *output) result(final *shim.Status, reason int, wall time.Duration) drivers.Result {
	res := drivers.Result{
		ExitCode:   final.ExitCode,
		Duration:   final.Duration,
		Stdout:     o.stdout.Head(),
		StdoutTail: o.stdout.Tail(),
		StderrTail: o.stderr.Tail(),
		TimedOut:   reason == stopTimeout && final.Terminated,
		Cancelled:  reason == stopCancel && final.Terminated,
	}
	if res.Duration <= 0 {
		res.Duration = wall
	}
	return res
}

// pump copies one output stream of the job into c and to logf, a chunk at
// a time as it arrives. logf gets its own copy of each chunk, under mu so
// that it is never called from two goroutines at once.
func pump(r *os.File, stream string, c *drivers.Capture, mu *sync.Mutex, logf func(string, []byte)) {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			c.Add(buf[:n])
			if logf != nil {
				chunk := bytes.Clone(buf[:n])
				mu.Lock()
				logf(stream, chunk)
				mu.Unlock()
			}
		}
		if err != nil {
			return
		}
	}
}

// Stop reasons of a job, as the driver asked for them.
const (
	stopNone = iota
	stopTimeout
	stopCancel
)

// stopper decides when a running job is stopped: at its timeout, or when
// the caller cancels. A stop sends the job's supervisor its terminate once;
// overdue fires when the supervisor has not ended the job within its kill
// grace and some slack, for the caller to kill harder. The follow loop
// selects on timeout, done and overdue.
type stopper struct {
	timeout, overdue <-chan time.Time
	done             <-chan struct{}
	reason           int // why the job was stopped; stopNone while it was not
	grace            time.Duration
	signal           func()
	timer            *time.Timer
}

// newStopper follows ctx and timeout (none when 0); signal asks the
// supervisor to terminate the job. Release it with stop.
func newStopper(ctx context.Context, timeout, killGrace time.Duration, signal func()) *stopper {
	s := &stopper{done: ctx.Done(), grace: killGrace + supervisorSlack, signal: signal}
	if timeout > 0 {
		s.timer = time.NewTimer(timeout)
		s.timeout = s.timer.C
	}
	return s
}

// timedOut and cancelled are the follow loop's answers to timeout and done.
func (s *stopper) timedOut() { s.terminate(stopTimeout) }
func (s *stopper) cancelled() {
	s.done = nil
	s.terminate(stopCancel)
}

// terminate stops the job for why, once: later stops keep the first reason.
func (s *stopper) terminate(why int) {
	if s.reason != stopNone {
		return
	}
	s.reason = why
	s.signal()
	s.overdue = time.After(s.grace)
}

// stop releases the timer.
func (s *stopper) stop() {
	if s.timer != nil {
		s.timer.Stop()
	}
}
