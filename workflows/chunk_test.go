package workflows

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"svc/activities"
	"svc/internal/domain/flows"
)

func TestLaneWidths(t *testing.T) {
	for _, tc := range []struct {
		window int
		want   []int
	}{
		{0, []int{1}}, {1, []int{1}}, {2, []int{1, 1}}, {3, []int{2, 1}}, {16, []int{8, 8}},
		{17, []int{9, 8}}, {33, []int{11, 11, 11}}, {64, []int{16, 16, 16, 16}}, {100, []int{15, 15, 14, 14, 14, 14, 14}},
	} {
		got := laneWidths(tc.window)
		sum := 0
		for _, w := range got {
			sum += w
			if w > maxLaneWidth || w < 1 {
				t.Errorf("window %d: lane of width %d", tc.window, w)
			}
		}
		if len(got) != len(tc.want) || sum != max(1, tc.window) {
			t.Errorf("laneWidths(%d) = %v, want %v", tc.window, got, tc.want)
		}
	}
	if n := chunkedItemsPerRun(64, fixedChunks); n != 300*64 {
		t.Errorf("chunkedItemsPerRun(64, fixed) = %d, want %d", n, 300*64)
	}
	if n := chunkedItemsPerRun(64, guidedChunks); n != 300*16*16 {
		t.Errorf("chunkedItemsPerRun(64, guided) = %d, want %d", n, 300*16*16)
	}
}

// The chunked path: every (case, trial) in exactly one chunk, the chunks in
// flight never wider together than the window, judging passed on, then
// the aggregate.
func TestScorecardWorkflowChunks(t *testing.T) {
	env := newChunkEnv(t)
	var mu sync.Mutex
	width, peak, chunks := 0, 0, 0
	seen := map[string]int{}
	env.OnActivity(a.StartScorecard, mock.Anything, batch).Return(nil).Once()
	env.OnActivity(a.CasePage, mock.Anything, mock.Anything).Return(pages(700))
	env.OnActivity(a.RunCases, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.CaseChunk) (activities.ChunkResult, error) {
		mu.Lock()
		defer mu.Unlock()
		chunks++
		if !in.Judged || in.ScorecardRef != batch {
			t.Errorf("chunk %+v lost the batch's settings", in)
		}
		if len(in.Items) > chunkRounds*in.Concurrency {
			t.Errorf("chunk of %d items at width %d", len(in.Items), in.Concurrency)
		}
		for _, it := range in.Items {
			seen[it.CaseID+"#"+itoa(it.Trial)]++
		}
		return activities.ChunkResult{Succeeded: len(in.Items)}, nil
	}).After(time.Second)
	widths := map[string]int{}
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, args converter.EncodedValues) {
		var in activities.CaseChunk
		if info.ActivityType.Name != "RunCases" || args.Get(&in) != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		widths[info.ActivityID] = in.Concurrency
		width += in.Concurrency
		peak = max(peak, width)
	})
	env.SetOnActivityCompletedListener(func(info *activity.Info, _ converter.EncodedValue, _ error) {
		mu.Lock()
		defer mu.Unlock()
		width -= widths[info.ActivityID]
		delete(widths, info.ActivityID)
	})
	env.OnActivity(a.FinishScorecard, mock.Anything, activities.FinishInput{ScorecardRef: batch}).Return(nil).Once()
	env.ExecuteWorkflow(ScorecardWorkflow, flows.ScorecardInput{Workspace: "ws", ScorecardID: "sc_1", Total: 1400, Trials: 2, Concurrency: 40, Judged: true})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1400 {
		t.Errorf("ran %d distinct items, want 1400", len(seen))
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("%s ran %d times", k, n)
		}
	}
	if peak != 40 {
		t.Errorf("peak width in flight %d, want the window of 40", peak)
	}
	if chunks > 1400/4 {
		t.Errorf("%d chunks for 1,400 items", chunks)
	}
	env.AssertExpectations(t)
}

// A chunk that fails for good fails the batch in its phase; what finished
// is kept by the aggregate.
func TestScorecardWorkflowChunkFailures(t *testing.T) {
	for _, tc := range []struct {
		name  string
		err   error
		phase string
	}{
		{"dispatch", errors.New("store unreachable"), "dispatch"},
		{"judges", temporal.NewApplicationError("judging case c1 failed", string(flows.JudgesPhase)), "judges"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newChunkEnv(t)
			env.OnActivity(a.StartScorecard, mock.Anything, batch).Return(nil).Once()
			env.OnActivity(a.CasePage, mock.Anything, mock.Anything).Return(pages(30))
			env.OnActivity(a.RunCases, mock.Anything, mock.MatchedBy(func(in activities.CaseChunk) bool { return in.Items[0].CaseID == "c0" })).Return(activities.ChunkResult{}, tc.err)
			env.OnActivity(a.RunCases, mock.Anything, mock.Anything).Return(activities.ChunkResult{}, nil)
			env.OnActivity(a.FinishScorecard, mock.Anything, mock.MatchedBy(func(in activities.FinishInput) bool {
				return in.Phase == tc.phase && !in.Cancelled && in.Message != ""
			})).Return(nil).Once()
			env.ExecuteWorkflow(ScorecardWorkflow, flows.ScorecardInput{Workspace: "ws", ScorecardID: "sc_1", Total: 30, Trials: 1, Concurrency: 4, Judged: true})
			if err := env.GetWorkflowError(); err != nil {
				t.Fatal(err)
			}
			env.AssertExpectations(t)
		})
	}
}

// A chain run starts at most ItemsPerRun items, then continues as new.
func TestScorecardWorkflowChunksContinueAsNew(t *testing.T) {
	env := newChunkEnv(t)
	env.OnActivity(a.StartScorecard, mock.Anything, batch).Return(nil).Once()
	env.OnActivity(a.CasePage, mock.Anything, mock.Anything).Return(pages(10))
	env.OnActivity(a.RunCases, mock.Anything, mock.Anything).Return(activities.ChunkResult{}, nil)
	env.ExecuteWorkflow(ScorecardWorkflow, flows.ScorecardInput{Workspace: "ws", ScorecardID: "sc_1", Total: 10, Trials: 1, Concurrency: 4, ItemsPerRun: 5})
	var next flows.ScorecardInput
	if err := env.GetWorkflowError(); !isContinueAsNew(err, &next) || next.Next != 5 || !next.Started {
		t.Fatalf("continue-as-new error %v with input %+v, want Next 5 and Started", err, next)
	}
}

// Cancel: no further chunk starts and the aggregate records the cancel.
func TestScorecardWorkflowChunksCancel(t *testing.T) {
	env := newChunkEnv(t)
	started := 0
	env.OnActivity(a.StartScorecard, mock.Anything, batch).Return(nil).Once()
	env.OnActivity(a.CasePage, mock.Anything, mock.Anything).Return(pages(500))
	env.OnActivity(a.RunCases, mock.Anything, mock.Anything).Return(func(context.Context, activities.CaseChunk) (activities.ChunkResult, error) {
		started++
		return activities.ChunkResult{}, nil
	}).After(time.Hour)
	env.OnActivity(a.FinishScorecard, mock.Anything, activities.FinishInput{ScorecardRef: batch, Cancelled: true}).Return(nil).Once()
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Minute)
	env.ExecuteWorkflow(ScorecardWorkflow, flows.ScorecardInput{Workspace: "ws", ScorecardID: "sc_1", Total: 500, Trials: 1, Concurrency: 8})
	if !env.IsWorkflowCompleted() {
		t.Fatal("not completed after cancel")
	}
	if started > 2 {
		t.Errorf("%d chunks started, want at most the 2 lanes", started)
	}
	env.AssertExpectations(t)
}

// TestGuidedChunk: whole rounds of the lane, an even share of what is
// left, at most chunkRounds rounds; and lanes that take chunks as they
// free up start every item once and end within a round of each other.
func TestGuidedChunk(t *testing.T) {
	for _, tc := range []struct{ left, lanes, w, want int }{
		{2000, 4, 16, 256}, // 16 rounds
		{976, 4, 16, 256},
		{720, 4, 16, 192}, // 180 rounded up to 12 rounds
		{100, 4, 16, 32},
		{10, 4, 16, 10}, // what is left
		{17, 2, 16, 16},
		{5, 1, 1, 5}, // one lane: all that is left, up to chunkRounds
	} {
		if got := guidedChunk(tc.left, tc.lanes, tc.w); got != tc.want {
			t.Errorf("guidedChunk(%d, %d, %d) = %d, want %d", tc.left, tc.lanes, tc.w, got, tc.want)
		}
	}
	// Four lanes of 16 over 2,000 items of equal length: each lane takes
	// the next chunk when its last one ends.
	lanes := laneWidths(64)
	busy := make([]int, len(lanes)) // rounds each lane has run
	left, chunks := 2000, 0
	for left > 0 {
		l := 0
		for i := range busy {
			if busy[i] < busy[l] {
				l = i
			}
		}
		n := guidedChunk(left, len(lanes), lanes[l])
		busy[l] += (n + lanes[l] - 1) / lanes[l]
		left -= n
		chunks++
	}
	if lo, hi := slices.Min(busy), slices.Max(busy); hi-lo > 1 || hi > 32 {
		t.Errorf("lanes ran %v rounds; want 32 at most, within one of each other", busy)
	}
	if chunks > 20 {
		t.Errorf("%d chunks for 2,000 items in 4 lanes", chunks)
	}
}

// A chunk whose attempts all end with their worker's death runs again in
// a fresh activity, and the batch succeeds; one that keeps killing its
// workers fails the batch after maxChunksLost in a row.
func TestScorecardWorkflowChunkWorkerGone(t *testing.T) {
	gone := temporal.NewApplicationError("the worker running this attempt is gone", string(flows.WorkerGone))
	for _, tc := range []struct {
		name     string
		failures int // attempts of the c0 chunk that fail
		succeeds bool
	}{
		{"once too often", 7, true}, // 5 attempts, then a fresh activity's 2 more
		{"always", 1 << 20, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newChunkEnv(t)
			var mu sync.Mutex
			calls := 0
			seen := map[string]int{}
			env.OnActivity(a.StartScorecard, mock.Anything, batch).Return(nil).Once()
			env.OnActivity(a.CasePage, mock.Anything, mock.Anything).Return(pages(30))
			env.OnActivity(a.RunCases, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.CaseChunk) (activities.ChunkResult, error) {
				mu.Lock()
				defer mu.Unlock()
				if in.Items[0].CaseID == "c0" {
					if calls++; calls <= tc.failures {
						return activities.ChunkResult{}, gone
					}
				}
				for _, it := range in.Items {
					seen[it.CaseID]++
				}
				return activities.ChunkResult{Succeeded: len(in.Items)}, nil
			})
			env.OnActivity(a.FinishScorecard, mock.Anything, mock.MatchedBy(func(in activities.FinishInput) bool {
				return (in.Phase == "") == tc.succeeds
			})).Return(nil).Once()
			env.ExecuteWorkflow(ScorecardWorkflow, flows.ScorecardInput{Workspace: "ws", ScorecardID: "sc_1", Total: 30, Trials: 1, Concurrency: 4})
			if err := env.GetWorkflowError(); err != nil {
				t.Fatal(err)
			}
			if tc.succeeds && len(seen) != 30 {
				t.Errorf("ran %d distinct cases, want 30", len(seen))
			}
			if !tc.succeeds && calls != 5*(maxChunksLost+1) {
				t.Errorf("the lost chunk ran %d attempts, want %d", calls, 5*(maxChunksLost+1))
			}
			env.AssertExpectations(t)
		})
	}
}
