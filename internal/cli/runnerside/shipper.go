// Package runnerside is the self-hosted runner's side of the runner
// protocol (runnerwire), what `svc runner` does with a job's output before
// it leaves the machine: LogShipper posts its log while it runs, MaskResult
// masks what it left. The service's side is internal/service/runners.
package runnerside

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
	"unicode/utf8"

	"svc/internal/domain/redact"
	"svc/internal/domain/runnerwire"
	"svc/internal/platform/derrors"
)

// ShipperOptions configure a LogShipper.
type ShipperOptions struct {
	// Secrets are the job's secret values: masked before a byte leaves
	// the runner (package redact, as the worker masks a local job's).
	Secrets []string
	// Post sends one batch of chunks (POST /runner/jobs/:id/logs). An
	// error wrapping derrors.ErrConflict or ErrNotFound means the lease
	// no longer holds the job: the shipper stops and calls Lost. Any
	// other error is retried with the same chunks.
	Post func(ctx context.Context, chunks []runnerwire.LogChunk) error
	// Lost is called once when Post says the lease is lost; may be nil.
	Lost func(err error)
	// Every is how often the chunks written meanwhile are posted; 0 means
	// 500ms.
	Every  time.Duration
	Logger *slog.Logger
}

// maxChunk bounds the data merged into one chunk.
const maxChunk = 64 << 10

// LogShipper posts a job's output to the API while the job runs: its
// Write is the job's drivers.Job.Log. Chunks are numbered per lease from
// 1 in the order they were written, and posted in that order, each batch
// retried until it is stored (the API skips a seq it has), so a chunk is
// never lost to a failed post nor stored twice. Past runnerwire.MaxJobLog
// bytes one system chunk says the output was cut and the rest is dropped.
type LogShipper struct {
	o    ShipperOptions
	mask *redact.Masker

	mu      sync.Mutex
	streams map[string]*redact.Stream
	order   []string
	open    []runnerwire.LogChunk // written, not numbered yet (merged per stream)
	pending []runnerwire.LogChunk // numbered, not stored yet, in seq order
	seq     int64
	bytes   int
	capped  bool
	lost    bool

	ship sync.Mutex // one post at a time, in order
}

// NewLogShipper returns a LogShipper.
func NewLogShipper(o ShipperOptions) *LogShipper {
	if o.Every <= 0 {
		o.Every = 500 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &LogShipper{o: o, mask: redact.New(o.Secrets), streams: map[string]*redact.Stream{}}
}

// Write takes a chunk of the job's stream (stdout or stderr), masks it and
// queues it for the next post.
func (s *LogShipper) Write(stream string, p []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.streams[stream]
	if !ok {
		st = s.mask.Stream(func(b []byte) { s.add(stream, b) })
		s.streams[stream] = st
		s.order = append(s.order, stream)
	}
	_, _ = st.Write(p)
}

// add queues masked bytes; s.mu is held.
func (s *LogShipper) add(stream string, b []byte) {
	if s.capped || s.lost || len(b) == 0 {
		return
	}
	if s.bytes+len(b) > runnerwire.MaxJobLog {
		s.capped = true
		s.open = append(s.open, runnerwire.LogChunk{Stream: "system",
			Data: fmt.Appendf(nil, "svc runner: the job wrote more than %d bytes of output; the rest is not kept (its result keeps its final answer and the tails of its output)\n", runnerwire.MaxJobLog)})
		return
	}
	s.bytes += len(b)
	if n := len(s.open); n > 0 && s.open[n-1].Stream == stream && len(s.open[n-1].Data)+len(b) <= maxChunk {
		s.open[n-1].Data = append(s.open[n-1].Data, b...)
		return
	}
	s.open = append(s.open, runnerwire.LogChunk{Stream: stream, Data: append([]byte(nil), b...)})
}

// Run posts what was written every ShipperOptions.Every until ctx ends.
func (s *LogShipper) Run(ctx context.Context) {
	t := time.NewTicker(s.o.Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := s.Flush(ctx, false); err != nil && !s.Lost() {
			s.o.Logger.Warn("runner: posting the job's output failed; trying again", "err", err)
		}
	}
}

// Lost reports whether a post found the lease lost.
func (s *LogShipper) Lost() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lost
}

// Flush posts everything written so far, in batches within the API's
// bounds; final also emits what the masks hold back (the job has ended).
// It stops at the first failed post, keeping its chunks for the next.
func (s *LogShipper) Flush(ctx context.Context, final bool) error {
	s.ship.Lock()
	defer s.ship.Unlock()
	s.mu.Lock()
	if final {
		for _, name := range s.order {
			s.streams[name].Flush()
		}
	}
	for _, c := range s.open {
		s.seq++
		c.Seq = s.seq
		s.pending = append(s.pending, c)
	}
	s.open = nil
	s.mu.Unlock()
	for {
		s.mu.Lock()
		if s.lost {
			s.mu.Unlock()
			return derrors.Conflictf("the lease no longer holds the job")
		}
		batch := nextBatch(s.pending)
		s.mu.Unlock()
		if len(batch) == 0 {
			return nil
		}
		err := s.o.Post(ctx, batch)
		if errors.Is(err, derrors.ErrConflict) || errors.Is(err, derrors.ErrNotFound) {
			s.mu.Lock()
			first := !s.lost
			s.lost, s.pending = true, nil
			s.mu.Unlock()
			if first && s.o.Lost != nil {
				s.o.Lost(err)
			}
			return err
		}
		if err != nil {
			return err
		}
		s.mu.Lock()
		s.pending = s.pending[len(batch):]
		s.mu.Unlock()
	}
}

// Close posts the rest of the output once the job has ended, retrying a
// failed post up to attempts times with a growing pause; what is still
// not stored then is dropped (the result keeps the output's tails).
func (s *LogShipper) Close(ctx context.Context, attempts int) error {
	pause := 200 * time.Millisecond
	var err error
	for i := 0; i < attempts; i++ {
		if err = s.Flush(ctx, true); err == nil || s.Lost() {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
		pause *= 2
	}
	return err
}

// nextBatch is the head of pending that one post may carry.
func nextBatch(pending []runnerwire.LogChunk) []runnerwire.LogChunk {
	size := 0
	for i, c := range pending {
		if i == runnerwire.MaxLogBatchChunks || i > 0 && size+len(c.Data) > runnerwire.MaxLogBatchBytes {
			return pending[:i]
		}
		size += len(c.Data)
	}
	return pending
}

// MaskResult masks secrets in what a job left before it leaves the
// runner: stdout, the tails and the trace, as the worker masks a local
// job's (a head or tail cut at its cap has its cut half masked too).
func MaskResult(secrets []string, r runnerwire.Result, maxStdout, maxTrace, tail int) runnerwire.Result {
	m := redact.New(secrets)
	if m.Empty() {
		return r
	}
	full := func(n, limit int) bool { return n >= limit-(utf8.UTFMax-1) }
	r.Stdout = m.Clipped(r.Stdout, false, full(len(r.Stdout), maxStdout))
	r.StdoutTail = m.Clipped(r.StdoutTail, full(len(r.StdoutTail), tail), false)
	r.StderrTail = m.Clipped(r.StderrTail, full(len(r.StderrTail), tail), false)
	r.Trace = m.Clipped(r.Trace, false, full(len(r.Trace), maxTrace))
	r.Error = m.String(r.Error)
	return r
}
