package runnerside_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"svc/internal/cli/runnerside"
	"svc/internal/domain/runnerwire"
	"svc/internal/platform/derrors"
)

// postRecorder is a ShipperOptions.Post that keeps what it was sent; fail
// makes its next calls fail with the given errors, in order.
type postRecorder struct {
	mu    sync.Mutex
	got   []runnerwire.LogChunk
	posts int
	fail  []error
}

func (p *postRecorder) post(_ context.Context, chunks []runnerwire.LogChunk) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.posts++
	if len(p.fail) > 0 {
		err := p.fail[0]
		p.fail = p.fail[1:]
		if err != nil {
			return err
		}
	}
	if len(chunks) > runnerwire.MaxLogBatchChunks {
		return errors.New("too many chunks in one post")
	}
	for _, c := range chunks {
		// The API skips a seq it has.
		if n := len(p.got); n > 0 && c.Seq <= p.got[n-1].Seq {
			continue
		}
		p.got = append(p.got, runnerwire.LogChunk{Seq: c.Seq, Stream: c.Stream, Data: append([]byte(nil), c.Data...)})
	}
	return nil
}

func (p *postRecorder) text() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	for i, c := range p.got {
		if c.Seq != int64(i+1) {
			return "seq gap"
		}
		b.WriteString(c.Stream + ":" + string(c.Data))
	}
	return b.String()
}

// TestShipperMasksAndOrders: output is masked as the worker masks a local
// job's (a secret split across writes included), numbered from 1, merged
// per stream, and a failed post is retried with the same chunks.
func TestShipperMasksAndOrders(t *testing.T) {
	const secret = "s3cret-value-123456"
	var p postRecorder
	s := runnerside.NewLogShipper(runnerside.ShipperOptions{Secrets: []string{secret}, Post: p.post})
	s.Write("stdout", []byte("token=s3cret-"))
	s.Write("stdout", []byte("value-123456 done\n"))
	s.Write("stderr", []byte("oops\n"))
	p.fail = []error{errors.New("connection reset")}
	if err := s.Flush(t.Context(), true); err == nil {
		t.Fatal("Flush with a failing post = nil, want its error")
	}
	if err := s.Close(t.Context(), 3); err != nil {
		t.Fatal(err)
	}
	got := p.text()
	if strings.Contains(got, "s3cret") || !strings.Contains(got, "token=") || !strings.Contains(got, "done\n") || !strings.Contains(got, "stderr:oops\n") {
		t.Errorf("posted %q, want the output with the secret masked", got)
	}
}

// TestShipperBounds: a long output goes in posts within the API's bounds,
// and past MaxJobLog one system chunk says it was cut.
func TestShipperBounds(t *testing.T) {
	var p postRecorder
	s := runnerside.NewLogShipper(runnerside.ShipperOptions{Post: p.post})
	line := []byte(strings.Repeat("x", 1023) + "\n")
	for range runnerwire.MaxJobLog/len(line) + 100 {
		s.Write("stdout", line)
	}
	if err := s.Close(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, c := range p.got {
		total += len(c.Data)
	}
	last := p.got[len(p.got)-1]
	if last.Stream != "system" || !strings.Contains(string(last.Data), "the rest is not kept") {
		t.Errorf("last chunk %s %q, want a system chunk saying the output was cut", last.Stream, last.Data)
	}
	if total > runnerwire.MaxJobLog+1024 || p.posts < 2 {
		t.Errorf("%d bytes in %d posts, want at most %d in several", total, p.posts, runnerwire.MaxJobLog)
	}
	if p.text() == "seq gap" {
		t.Error("the chunks' seqs have a gap")
	}
}

// TestShipperLostLease: a post answered with a conflict stops the shipper
// and calls Lost once.
func TestShipperLostLease(t *testing.T) {
	var p postRecorder
	lost := 0
	s := runnerside.NewLogShipper(runnerside.ShipperOptions{Post: p.post, Lost: func(error) { lost++ }})
	s.Write("stdout", []byte("a"))
	p.fail = []error{derrors.Conflictf("lease lost")}
	if err := s.Flush(t.Context(), false); !errors.Is(err, derrors.ErrConflict) {
		t.Errorf("Flush = %v, want the conflict", err)
	}
	s.Write("stdout", []byte("b"))
	if err := s.Close(t.Context(), 3); !errors.Is(err, derrors.ErrConflict) || !s.Lost() || lost != 1 {
		t.Errorf("after the conflict: Close = %v, lost %v, Lost called %d times; want one conflict", err, s.Lost(), lost)
	}
	if len(p.got) != 0 {
		t.Errorf("posted %+v after a lost lease, want nothing", p.got)
	}
}

// TestMaskResult: what a job left is masked before it leaves the runner.
func TestMaskResult(t *testing.T) {
	const secret = "s3cret-value-123456"
	r := runnerside.MaskResult([]string{secret}, runnerwire.Result{Stdout: "a " + secret, StdoutTail: secret + " b", StderrTail: "e " + secret,
		Trace: `{"x":"` + secret + `"}`, Error: "failed with " + secret}, 1<<20, 1<<20, 4096)
	for name, v := range map[string]string{"stdout": r.Stdout, "stdoutTail": r.StdoutTail, "stderrTail": r.StderrTail, "trace": r.Trace, "error": r.Error} {
		if strings.Contains(v, "s3cret") {
			t.Errorf("%s %q still holds the secret", name, v)
		}
	}
}
