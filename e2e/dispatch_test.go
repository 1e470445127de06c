package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"svc/internal/domain/eval"
)

// TestBatchThatDispatchedNothingFails: a harness whose command does not
// exist cannot start any case; the batch ends failed (phase dispatch) with
// the reason, not succeeded, and `svc scorecard run --wait` exits 1.
func TestBatchThatDispatchedNothingFails(t *testing.T) {
	dir := t.TempDir()
	svc := start(t, devEnv(filepath.Join(dir, "data")), true, "dev")
	harness := map[string]any{"id": "ghost", "version": "1.0.0", "kind": "process", "command": []string{"/nonexistent/agent.py"}}
	if code := call(t, "POST", svc.URL+"/harnesses", harness, nil); code != 201 {
		t.Fatalf("POST /harnesses = %d, want 201", code)
	}
	var cases []map[string]any
	for i := 1; i <= 3; i++ {
		cases = append(cases, map[string]any{"id": fmt.Sprintf("d%d", i), "task": "say ok", "expected": "ok",
			"graders": []map[string]any{{"id": "exact"}}})
	}
	if code := call(t, "POST", svc.URL+"/datasets", map[string]any{"id": "nodispatch", "version": "1.0.0", "cases": cases}, nil); code != 201 {
		t.Fatalf("POST /datasets = %d, want 201", code)
	}
	out, errOut, code := runCLI(t, svc.URL, "scorecard", "run", "--dataset", "nodispatch@1.0.0", "--harness", "ghost@1.0.0",
		"--concurrency", "3", "--wait", "--json")
	if code != 1 {
		t.Fatalf("svc scorecard run --wait exit %d, want 1 (a failed batch)\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	var sc eval.Scorecard
	if err := json.Unmarshal([]byte(out), &sc); err != nil {
		t.Fatalf("svc scorecard run --json printed %q: %v", out, err)
	}
	if sc.Status != eval.ScorecardFailed || sc.Error == nil || sc.Error.Phase != eval.PhaseDispatch {
		t.Fatalf("batch ended %s with error %+v, want failed in phase dispatch", sc.Status, sc.Error)
	}
	if !strings.Contains(sc.Error.Message, "no case could be dispatched (3 of 3 case runs)") || !strings.Contains(sc.Error.Message, "/nonexistent/agent.py") {
		t.Errorf("error message %q does not say that no case could be dispatched and why", sc.Error.Message)
	}
	if p := sc.Progress; p.Done != 3 || p.Failed != 3 || p.DispatchErrors != 3 {
		t.Errorf("progress %+v, want 3 done, 3 failed, 3 dispatch errors", p)
	}
	// Spec §2.3: a failed batch keeps its partial scorecard: the detail
	// read still has a row for each case, saying why it failed.
	var detail eval.Scorecard
	if code := call(t, "GET", svc.URL+"/scorecards/"+sc.ID, nil, &detail); code != 200 {
		t.Fatalf("GET /scorecards/%s = %d", sc.ID, code)
	}
	if len(detail.Scorecard) != 3 {
		t.Fatalf("the failed batch's detail has %d case rows, want 3", len(detail.Scorecard))
	}
	for _, row := range detail.Scorecard {
		if row.CasePass || row.Status != eval.StatusFailed {
			t.Errorf("case %s: status %s, casePass %v; want failed", row.CaseID, row.Status, row.CasePass)
		}
	}
}
