package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"svc/internal/domain/eval"
	"svc/internal/testing/testwait"
)

// Ingest through the real binary (issue 29, items 1, 2 and 5): traces
// pushed or pulled without a dataset, answers pulled back from the ledger,
// and spans that wait on the OTLP door before they are sealed.

// TestIngestWithoutDatasetEachTraceIsACase: spec §4.5, "with no dataset
// and no harness, each trace becomes its own case". A push ingest and a
// pull ingest from the ledger (source svc), both with neither dataset nor
// harness, succeed with one case per trace, on SQLite (`svc dev`) and on
// PostgreSQL (`svc serve` + `svc worker`).
func TestIngestWithoutDatasetEachTraceIsACase(t *testing.T) {
	onBothStores(t, nil, ingestEachTraceIsACase)
}

func ingestEachTraceIsACase(t *testing.T, url string) {
	answer := func(s string) []map[string]any {
		return []map[string]any{
			{"kind": "tool_call", "name": "lookup", "input": map[string]any{"q": s}},
			{"kind": "message", "role": "assistant", "content": s},
		}
	}
	push := map[string]any{"traces": []map[string]any{
		{"caseId": "first", "trace": answer("one")},
		{"trace": answer("two")},
		{"trace": answer("three")},
	}}
	var queued eval.Scorecard
	if code := call(t, "POST", url+"/scorecards/ingest", push, &queued); code != 202 {
		t.Fatalf("POST /scorecards/ingest = %d %+v, want 202", code, queued)
	}
	pushed := waitScorecard(t, url, queued.ID)
	checkTraceCases(t, pushed, "first", "trace-1", "trace-2")

	// Each pushed trace is sealed in the ledger under its child run:
	// pulled back from there (source svc), each is again its own case,
	// named by its runId.
	var runs []map[string]any
	var ids []string
	for _, row := range pushed.Scorecard {
		runs = append(runs, map[string]any{"runId": row.RunID})
		ids = append(ids, row.RunID)
	}
	pullReq := map[string]any{"source": map[string]any{"name": "svc"}, "runs": runs}
	if code := call(t, "POST", url+"/scorecards/ingest/pull", pullReq, &queued); code != 202 {
		t.Fatalf("POST /scorecards/ingest/pull = %d %+v, want 202", code, queued)
	}
	checkTraceCases(t, waitScorecard(t, url, queued.ID), ids...)
}

// checkTraceCases checks that sc, an ingest without a dataset, succeeded
// with exactly the cases want (of the _traces dataset and harness), each a
// child run that succeeded.
func checkTraceCases(t *testing.T, sc eval.Scorecard, want ...string) {
	t.Helper()
	if sc.Status != eval.ScorecardSucceeded || sc.Error != nil {
		t.Fatalf("scorecard %s is %s (error %+v, steps %+v), want succeeded", sc.ID, sc.Status, sc.Error, sc.Steps)
	}
	if sc.Dataset.ID != eval.IDTraces || sc.Harness.ID != eval.IDTraces {
		t.Errorf("dataset %s, harness %s; want both %s", sc.Dataset, sc.Harness, eval.IDTraces)
	}
	var got []string
	for _, row := range sc.Scorecard {
		got = append(got, row.CaseID)
		if row.Status != eval.StatusSucceeded {
			t.Errorf("case %s: run %s is %s (%+v), want succeeded", row.CaseID, row.RunID, row.Status, row.Error)
		}
	}
	slices.Sort(got)
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		t.Errorf("cases = %v, want one per trace: %v", got, want)
	}
	if sc.Progress.Total != len(want) {
		t.Errorf("progress %+v, want %d cases", sc.Progress, len(want))
	}
}

// TestPullFromSvcKeepsTheAnswer: an agent's spans sent to POST /v1/traces
// with its final answer in the root span's output.value (as docs/traces.md
// shows), pulled from the ledger (source svc) against a dataset with an
// exact grader: the right answer passes, the wrong one fails, and each
// case's evidence holds the answer the agent gave.
func TestPullFromSvcKeepsTheAnswer(t *testing.T) {
	onBothStores(t, []string{"SVC_INGEST_IDLE_WINDOW=1s"}, pullFromSvcKeepsTheAnswer)
}

func pullFromSvcKeepsTheAnswer(t *testing.T, url string) {
	cases := []map[string]any{
		{"id": "sum", "task": "What is 2+2?", "expected": "4", "graders": []map[string]any{{"id": "exact"}}},
		{"id": "sum-again", "task": "What is 2+2?", "expected": "4", "graders": []map[string]any{{"id": "exact"}}},
	}
	if code := call(t, "POST", url+"/datasets", map[string]any{"id": "qa", "version": "1.0.0", "cases": cases}, nil); code != 201 {
		t.Fatalf("POST /datasets = %d, want 201", code)
	}
	sendAgentSpans(t, url, "agent-right", "4")
	sendAgentSpans(t, url, "agent-wrong", "5")

	pullReq := map[string]any{
		"dataset": map[string]any{"id": "qa", "version": "1.0.0"},
		"source":  map[string]any{"name": "svc"},
		"runs":    []map[string]any{{"caseId": "sum", "runId": "agent-right"}, {"caseId": "sum-again", "runId": "agent-wrong"}},
	}
	var queued eval.Scorecard
	if code := call(t, "POST", url+"/scorecards/ingest/pull", pullReq, &queued); code != 202 {
		t.Fatalf("POST /scorecards/ingest/pull = %d %+v, want 202", code, queued)
	}
	sc := waitScorecard(t, url, queued.ID)
	if sc.Status != eval.ScorecardSucceeded {
		t.Fatalf("scorecard is %s (error %+v, steps %+v), want succeeded", sc.Status, sc.Error, sc.Steps)
	}
	want := map[string]struct {
		answer string
		pass   bool
	}{"sum": {"4", true}, "sum-again": {"5", false}}
	for _, row := range sc.Scorecard {
		w, ok := want[row.CaseID]
		if !ok {
			t.Errorf("unexpected case %s", row.CaseID)
			continue
		}
		exact := -1
		for i, s := range row.Scores {
			if s.GraderID == "exact" && s.Pass != nil {
				exact = i
			}
		}
		if exact < 0 || *row.Scores[exact].Pass != w.pass || row.CasePass != w.pass {
			t.Errorf("case %s: casePass %v, scores %+v; want the exact grader to say %v", row.CaseID, row.CasePass, row.Scores, w.pass)
		}
		var run eval.Run
		if code := call(t, "GET", url+"/runs/"+row.RunID, nil, &run); code != 200 || run.Result == nil || run.Result.Evidence == nil {
			t.Fatalf("GET /runs/%s = %d %+v, want a result with evidence", row.RunID, code, run)
		}
		if got := run.Result.Evidence.FinalAnswer; got != w.answer {
			t.Errorf("case %s: evidence.finalAnswer = %q, want %q (the root span's output.value)", row.CaseID, got, w.answer)
		}
	}
	if len(sc.Scorecard) != len(want) {
		t.Errorf("%d case rows, want %d", len(sc.Scorecard), len(want))
	}
}

// TestPendingSpansAreVisible: right after spans reach the OTLP door, their
// trajectory is not sealed yet. GET /trajectories/:id says so (404 with
// details.pending and details.sealsAt, the end of the idle window), and a
// pull from the ledger says on its timeline what it waits for and until
// when, then pulls the trajectory once it is sealed; from then on the
// trajectory reads normally.
func TestPendingSpansAreVisible(t *testing.T) {
	onBothStores(t, []string{"SVC_INGEST_IDLE_WINDOW=" + pendingWindow.String()}, pendingSpansAreVisible)
}

// pendingWindow is TestPendingSpansAreVisible's idle window.
const pendingWindow = 8 * time.Second

func pendingSpansAreVisible(t *testing.T, url string) {
	const window = pendingWindow
	sent := time.Now()
	sendAgentSpans(t, url, "slow-agent", "4")

	var body struct {
		Error struct {
			Code    string         `json:"code"`
			Message string         `json:"message"`
			Details map[string]any `json:"details"`
		} `json:"error"`
	}
	if code := call(t, "GET", url+"/trajectories/slow-agent", nil, &body); code != 404 {
		t.Fatalf("GET /trajectories/slow-agent right after the spans = %d %+v, want 404 (not sealed yet)", code, body)
	}
	e := body.Error
	if e.Code != "NOT_FOUND" || !strings.Contains(e.Message, "not sealed yet") || e.Details["pending"] != true || e.Details["spans"] != float64(2) {
		t.Errorf("error = %+v; want NOT_FOUND saying the 2 spans are not sealed yet, with details.pending", e)
	}
	sealsAt, err := time.Parse(time.RFC3339Nano, fmt.Sprint(e.Details["sealsAt"]))
	if err != nil || sealsAt.Before(sent.Add(window-time.Second)) || sealsAt.After(time.Now().Add(window+time.Second)) {
		t.Errorf("details.sealsAt = %v (%v); want about %s after the spans", e.Details["sealsAt"], err, window)
	}
	mustContain(t, e.Message, sealsAt.UTC().Format(time.RFC3339))

	pullReq := map[string]any{"source": map[string]any{"name": "svc"}, "runs": []map[string]any{{"runId": "slow-agent"}}}
	var queued eval.Scorecard
	if code := call(t, "POST", url+"/scorecards/ingest/pull", pullReq, &queued); code != 202 {
		t.Fatalf("POST /scorecards/ingest/pull = %d %+v, want 202", code, queued)
	}
	// The pull waits, and says so while it does.
	step := testwait.UntilValue(t, window, "the pull's step naming the pending trajectory", func() (eval.Step, bool) {
		var sc eval.Scorecard
		call(t, "GET", url+"/scorecards/"+queued.ID, nil, &sc)
		for _, s := range sc.Steps {
			if s.CaseID == "slow-agent" && strings.Contains(s.Message, "waits for trajectory slow-agent") {
				return s, true
			}
		}
		return eval.Step{}, false
	})
	if time.Now().After(sealsAt) {
		t.Fatalf("the pull's step came after the trajectory was due to seal (%s): %+v", sealsAt, step)
	}
	mustContain(t, step.Message, "sealed at "+sealsAt.UTC().Format(time.RFC3339))

	sc := waitScorecard(t, url, queued.ID)
	if sc.Status != eval.ScorecardSucceeded || len(sc.Scorecard) != 1 || sc.Scorecard[0].Status != eval.StatusSucceeded {
		t.Fatalf("scorecard is %s with %+v (steps %+v), want succeeded with the one pulled case", sc.Status, sc.Scorecard, sc.Steps)
	}
	// The pull sealed it at the end of its idle window, without waiting
	// for the minute's sweep: it reads as any sealed trajectory.
	var traj struct {
		Meta struct {
			RunID      string `json:"runId"`
			Source     string `json:"source"`
			EventCount int    `json:"eventCount"`
			Sealed     bool   `json:"sealed"`
		} `json:"meta"`
		Events []eval.TraceEvent `json:"events"`
	}
	if code := call(t, "GET", url+"/trajectories/slow-agent", nil, &traj); code != 200 {
		t.Fatalf("GET /trajectories/slow-agent after the pull = %d, want 200", code)
	}
	if traj.Meta.Source != "otel" || traj.Meta.EventCount != 2 || !traj.Meta.Sealed || len(traj.Events) != 2 {
		t.Errorf("trajectory = %+v, want the 2 spans sealed with source otel", traj)
	}
}

// waitScorecard polls a batch until it ends and returns it.
func waitScorecard(t *testing.T, url, id string) eval.Scorecard {
	t.Helper()
	return testwait.UntilValue(t, 2*time.Minute, "scorecard "+id+" to end", func() (eval.Scorecard, bool) {
		var sc eval.Scorecard
		if code := call(t, "GET", url+"/scorecards/"+id, nil, &sc); code != 200 {
			return sc, false
		}
		switch sc.Status {
		case eval.ScorecardQueued, eval.ScorecardRunning:
			return sc, false
		}
		return sc, true
	})
}

// sendAgentSpans sends an agent's two spans to the OTLP door as OTLP
// JSON, under svc.run_id runID: the root span invoke_agent, whose
// output.value is the final answer (docs/traces.md), and a chat span
// inside it.
func sendAgentSpans(t *testing.T, url, runID, answer string) {
	t.Helper()
	traceID, root, chat := randomHex(t, 16), randomHex(t, 8), randomHex(t, 8)
	t0 := time.Now().Add(-3 * time.Second).UnixNano()
	ns := func(d time.Duration) string { return fmt.Sprint(t0 + int64(d)) }
	attr := func(k string, v any) map[string]any {
		switch v := v.(type) {
		case int:
			return map[string]any{"key": k, "value": map[string]any{"intValue": fmt.Sprint(v)}}
		default:
			return map[string]any{"key": k, "value": map[string]any{"stringValue": fmt.Sprint(v)}}
		}
	}
	export := map[string]any{"resourceSpans": []map[string]any{{
		"resource": map[string]any{"attributes": []map[string]any{attr("svc.run_id", runID), attr("service.name", "qa-agent")}},
		"scopeSpans": []map[string]any{{"spans": []map[string]any{
			{
				"traceId": traceID, "spanId": chat, "parentSpanId": root, "name": "chat gpt-4o",
				"startTimeUnixNano": ns(time.Second), "endTimeUnixNano": ns(2 * time.Second),
				"attributes": []map[string]any{attr("gen_ai.operation.name", "chat"), attr("gen_ai.request.model", "gpt-4o"),
					attr("gen_ai.usage.input_tokens", 812), attr("gen_ai.usage.output_tokens", 4), attr("gen_ai.completion", "let me add them")},
			},
			{
				"traceId": traceID, "spanId": root, "name": "invoke_agent",
				"startTimeUnixNano": ns(0), "endTimeUnixNano": ns(3 * time.Second),
				"attributes": []map[string]any{attr("output.value", answer)},
			},
		}}},
	}}}
	var resp map[string]any
	if code := call(t, "POST", url+"/v1/traces", export, &resp); code != 200 || len(resp) != 0 {
		t.Fatalf("POST /v1/traces = %d %v, want 200 {} (every span accepted)", code, resp)
	}
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
