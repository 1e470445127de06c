package bench

import (
	"fmt"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"svc/internal/domain/eval"
	"svc/store/records"
)

const (
	benchCases       = 2000
	benchConcurrency = 64
)

// BenchmarkScorecard2000 runs one batch of 2,000 cases at concurrency 64
// per iteration, through the API, Temporal's embedded server, the worker
// and the local driver, with a harness that does nothing (/bin/true) and no
// graders (each case is graded by its exit code). Each iteration submits a
// fresh scorecard over the same dataset and stops the clock when the
// workflow chain has completed (the batch is terminal and aggregated).
//
// Metrics, over all iterations:
//
//	cases/s           cases / wall time
//	overhead-ms/case  (wall time - Σ harness durations / concurrency) / cases
//	harness-ms/case   mean result.process.durationMs of the child runs
//	events/chain-run  mean history length of the workflow's runs
//	chain-runs        workflow runs per batch (continue-as-new every 250 items)
//	queue-ms/case     mean RunCase schedule-to-start time (Temporal's queue)
//	runcase-ms/case   mean RunCase start-to-close time (the activity's work)
//
// Run it with -benchtime 1x: an iteration is tens of seconds.
func BenchmarkScorecard2000(b *testing.B) {
	for _, backend := range []string{"sqlite", "postgres"} {
		b.Run(backend, func(b *testing.B) { benchScorecard(b, backend) })
	}
}

func benchScorecard(b *testing.B, backend string) {
	s := newStack(b, backend)
	s.harness(b, "noop", "1", "/bin/true")
	s.dataset(b, "big", benchCases)
	body := fmt.Sprintf(`{"dataset":{"id":"big","version":"1.0.0"},"harness":{"id":"noop","version":"1"},"concurrency":%d}`, benchConcurrency)

	var wall time.Duration
	var harnessMs int64
	var h historyStats
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		var q eval.Scorecard
		s.call(b, "POST", "/scorecards", body, 202, &q)
		// Get follows the chain through every continue-as-new and returns
		// once the last run, which ends with FinishScorecard, has closed.
		if err := s.tc.GetWorkflow(b.Context(), q.ID, "").Get(b.Context(), nil); err != nil {
			b.Fatalf("batch %s: %v", q.ID, err)
		}
		wall += time.Since(start)

		b.StopTimer()
		harnessMs += s.check(b, q.ID)
		h.add(s.history(b, q.ID))
		b.StartTimer()
	}
	cases := float64(benchCases * b.N)
	b.ReportMetric(cases/wall.Seconds(), "cases/s")
	b.ReportMetric((float64(wall.Milliseconds())-float64(harnessMs)/benchConcurrency)/cases, "overhead-ms/case")
	b.ReportMetric(float64(harnessMs)/cases, "harness-ms/case")
	b.ReportMetric(float64(h.events)/float64(h.runs), "events/chain-run")
	b.ReportMetric(float64(h.runs)/float64(b.N), "chain-runs")
	b.ReportMetric(h.queued.Seconds()*1000/float64(h.cases), "queue-ms/case")
	b.ReportMetric(h.running.Seconds()*1000/float64(h.cases), "runcase-ms/case")
}

// check fails b unless batch id succeeded with every case run and passed,
// and returns the sum of the child runs' harness durations in ms.
func (s *stack) check(b *testing.B, id string) int64 {
	b.Helper()
	ctx := b.Context()
	sc, row, err := records.LoadScorecard(ctx, s.store, s.Workspace, id)
	if err != nil {
		b.Fatal(err)
	}
	// Every case activity reads and decodes this record.
	b.Logf("scorecard record: %d bytes", len(row.Doc))
	if sc.Status != eval.ScorecardSucceeded {
		b.Fatalf("batch %s ended %s: %+v", id, sc.Status, sc.Error)
	}
	children, err := records.ListChildren(ctx, s.store, s.Workspace, id)
	if err != nil {
		b.Fatal(err)
	}
	if len(children) != benchCases {
		b.Fatalf("batch %s has %d child runs, want %d", id, len(children), benchCases)
	}
	var ms int64
	for _, r := range children {
		if r.Status != eval.StatusSucceeded || r.Result == nil || !r.Result.Pass || r.Result.Process == nil {
			b.Fatalf("child %s (case %s) ended %s: %+v", r.ID, r.CaseID, r.Status, r.Error)
		}
		ms += r.Result.Process.DurationMs
	}
	return ms
}

// historyStats is what the workflow histories of batches say.
type historyStats struct {
	runs, events, cases int64
	// queued and running sum the RunCase activities' schedule-to-start
	// and start-to-close times.
	queued, running time.Duration
}

func (h *historyStats) add(o historyStats) {
	h.runs += o.runs
	h.events += o.events
	h.cases += o.cases
	h.queued += o.queued
	h.running += o.running
}

// history walks workflow id's continue-as-new chain from its first run and
// sums its runs' history lengths and RunCase timings.
func (s *stack) history(b *testing.B, id string) historyStats {
	b.Helper()
	ctx := b.Context()
	d, err := s.tc.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		b.Fatal(err)
	}
	var h historyStats
	var lengths []int64
	runID := d.GetWorkflowExecutionInfo().GetFirstRunId()
	for runID != "" {
		h.runs++
		lengths = append(lengths, 0)
		scheduled := map[int64]time.Time{} // RunCase's scheduled event id -> time
		started := map[int64]time.Time{}
		it := s.tc.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		runID = ""
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				b.Fatal(err)
			}
			h.events++
			lengths[len(lengths)-1]++
			at := ev.GetEventTime().AsTime()
			switch ev.GetEventType() {
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
				if ev.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName() == "RunCase" {
					scheduled[ev.GetEventId()] = at
				}
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
				if t, ok := scheduled[ev.GetActivityTaskStartedEventAttributes().GetScheduledEventId()]; ok {
					started[ev.GetActivityTaskStartedEventAttributes().GetScheduledEventId()] = at
					h.queued += at.Sub(t)
				}
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
				if t, ok := started[ev.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()]; ok {
					h.running += at.Sub(t)
					h.cases++
				}
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
				runID = ev.GetWorkflowExecutionContinuedAsNewEventAttributes().GetNewExecutionRunId()
			}
		}
	}
	b.Logf("history lengths of the chain's runs: %v", lengths)
	return h
}
