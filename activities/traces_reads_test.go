package activities

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/store"
	"svc/store/sqlite/sqlitetest"
)

// gatedReads is a store whose coalesced reads block until released, and
// which records the groups of each read.
type gatedReads struct {
	store.TraceIngest // nil: only the methods below are called
	mu                sync.Mutex
	rounds            [][]string
	alone             []string
	started           chan struct{} // a coalesced read began
	release           chan struct{} // lets the first coalesced read finish
	fail              bool
}

func (g *gatedReads) ListPendingSpansOf(ctx context.Context, refs []store.PendingGroupRef) (map[store.PendingGroupRef][]store.PendingSpan, error) {
	g.mu.Lock()
	var names []string
	for _, r := range refs {
		names = append(names, r.Group)
	}
	g.rounds = append(g.rounds, names)
	first := len(g.rounds) == 1
	g.mu.Unlock()
	if first {
		g.started <- struct{}{}
		<-g.release
	}
	if g.fail {
		return nil, errors.New("the database is gone")
	}
	out := map[store.PendingGroupRef][]store.PendingSpan{}
	for _, r := range refs {
		if r.Group != "quiet" && r.Group[len(r.Group)-1]%2 == 0 {
			out[r] = []store.PendingSpan{{Workspace: r.Workspace, Group: r.Group, Key: "k-" + r.Group}}
		}
	}
	return out, nil
}

func (g *gatedReads) ListPendingSpans(ctx context.Context, workspace, group string) ([]store.PendingSpan, error) {
	g.mu.Lock()
	g.alone = append(g.alone, group)
	g.mu.Unlock()
	return []store.PendingSpan{{Workspace: workspace, Group: group, Key: "alone-" + group}}, nil
}

// queued waits until n reads wait in p's queue.
func queued(t *testing.T, p *pendingReads, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		p.mu.Lock()
		got := len(p.queue)
		p.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d reads queued, want %d", got, n)
		}
		time.Sleep(time.Millisecond) // polling a count: no signal to wait on
	}
}

// TestPendingReadsCoalesce: the first read runs at once, alone; the reads
// arriving while it runs are answered together by the next statement, each
// with its own group's spans (or none).
func TestPendingReadsCoalesce(t *testing.T) {
	g := &gatedReads{started: make(chan struct{}, 1), release: make(chan struct{})}
	var p pendingReads
	ctx := t.Context()
	type answer struct {
		keys []string
		err  error
	}
	answers := make([]answer, 11)
	read := func(i int, group string) {
		spans, err := p.read(ctx, g, store.PendingGroupRef{Workspace: "acme", Group: group})
		var keys []string
		for _, s := range spans {
			keys = append(keys, s.Key)
		}
		answers[i] = answer{keys, err}
	}
	var wg sync.WaitGroup
	wg.Go(func() { read(0, "quiet") })
	<-g.started // the first read is under way, alone
	for i := 1; i <= 10; i++ {
		wg.Go(func() { read(i, fmt.Sprintf("run-%d", i)) })
	}
	queued(t, &p, 10)
	close(g.release)
	wg.Wait()

	want := [][]string{{"quiet"}, {"run-1", "run-2", "run-3", "run-4", "run-5", "run-6", "run-7", "run-8", "run-9", "run-10"}}
	if diff := cmp.Diff(want, g.rounds, cmp.Transformer("sorted", func(in []string) map[string]bool {
		m := map[string]bool{}
		for _, s := range in {
			m[s] = true
		}
		return m
	})); diff != "" {
		t.Errorf("statements (-want +got):\n%s", diff)
	}
	for i, a := range answers {
		var want []string
		if i > 0 && i%2 == 0 {
			want = []string{fmt.Sprintf("k-run-%d", i)}
		}
		if a.err != nil || !cmp.Equal(want, a.keys) {
			t.Errorf("read %d = %v, %v; want %v", i, a.keys, a.err, want)
		}
	}
	if p.leading || len(p.queue) != 0 {
		t.Errorf("after the reads: leading %v, %d queued; want the queue idle", p.leading, len(p.queue))
	}
}

// TestPendingReadsFailedRoundReadsAlone: when a coalesced read fails, each
// of its runs reads its own spans, so one failure fails no neighbour.
func TestPendingReadsFailedRoundReadsAlone(t *testing.T) {
	g := &gatedReads{started: make(chan struct{}, 1), release: make(chan struct{}), fail: true}
	var p pendingReads
	close(g.release)
	var wg sync.WaitGroup
	got := make([][]store.PendingSpan, 4)
	errs := make([]error, 4)
	for i := range 4 {
		wg.Go(func() {
			got[i], errs[i] = p.read(t.Context(), g, store.PendingGroupRef{Workspace: "acme", Group: fmt.Sprintf("run-%d", i)})
		})
	}
	wg.Wait()
	for i := range 4 {
		if errs[i] != nil || len(got[i]) != 1 || got[i][0].Key != fmt.Sprintf("alone-run-%d", i) {
			t.Errorf("read %d = %+v, %v; want its own read", i, got[i], errs[i])
		}
	}
}

// TestPendingReadsOnTheStore: many runs finishing at once on a real store
// each get their own spans.
func TestPendingReadsOnTheStore(t *testing.T) {
	st := sqlitetest.New(t)
	ctx := t.Context()
	for i := range 40 {
		if i%3 != 0 {
			continue
		}
		var spans []store.PendingSpan
		for k := range i%5 + 1 {
			spans = append(spans, store.PendingSpan{Workspace: "acme", Group: fmt.Sprintf("run-%d", i), Key: fmt.Sprintf("t/%d", k),
				StartUnixNano: int64(10 - k), Event: []byte(fmt.Sprintf(`{"kind":"span","name":"s%d"}`, k))})
		}
		if _, err := st.AddPendingSpans(ctx, spans); err != nil {
			t.Fatal(err)
		}
	}
	var p pendingReads
	var wg sync.WaitGroup
	got := make([][]store.PendingSpan, 40)
	errs := make([]error, 40)
	for i := range 40 {
		wg.Go(func() {
			got[i], errs[i] = p.read(ctx, st, store.PendingGroupRef{Workspace: "acme", Group: fmt.Sprintf("run-%d", i)})
		})
	}
	wg.Wait()
	for i := range 40 {
		want := 0
		if i%3 == 0 {
			want = i%5 + 1
		}
		if errs[i] != nil || len(got[i]) != want {
			t.Errorf("run-%d: %d spans, %v; want %d", i, len(got[i]), errs[i], want)
			continue
		}
		for j, s := range got[i] {
			if s.Group != fmt.Sprintf("run-%d", i) || (j > 0 && s.StartUnixNano < got[i][j-1].StartUnixNano) {
				t.Errorf("run-%d: span %d is %+v (another run's, or out of order)", i, j, s)
			}
		}
	}
}
