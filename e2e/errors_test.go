package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"svc/internal/testing/testwait"
)

// chainErrorBody is the one JSON error shape, as a client decodes it.
type chainErrorBody struct {
	Error struct {
		Code      string `json:"code"`
		Message   string `json:"message"`
		RequestID string `json:"requestId"`
	} `json:"error"`
}

// TestNoInternalChainInErrorBodies (issue 29, "one error family"): the
// typical refusals a user meets through the binary each answer a 4xx in the
// one error shape whose message names what was asked and what is wrong,
// never an internal call chain ("Store.GetTraceSource(ctx, ...)"); and a
// batch that fails in dispatch says why in its record's error and steps
// without one either ("activity error (type: RunCases, scheduledEventID:
// ...)", a store call). call checks every error body of the e2e suite with
// the same patterns; this test provokes the refusals on purpose.
func TestNoInternalChainInErrorBodies(t *testing.T) {
	dir := t.TempDir()
	svc := start(t, devEnv(filepath.Join(dir, "data")), true, "dev")

	// A harness that answers once the test creates jd/go: the batch below
	// runs its first chunk of cases while the test deletes its dataset.
	jd := jobDir(t)
	script := filepath.Join(jd, "agent.sh")
	gate := filepath.Join(jd, "go")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ni=0\nwhile [ ! -e "+gate+" ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done\necho ok\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	chainRegister(t, svc.URL, "/harnesses", map[string]any{"id": "gated", "version": "1.0.0", "kind": "process", "command": []string{"/bin/sh", script}})
	chainRegister(t, svc.URL, "/harnesses", map[string]any{"id": "ghost", "version": "1.0.0", "kind": "process", "command": []string{"/nonexistent/agent.py"}})
	chainRegister(t, svc.URL, "/datasets", chainDataset("small", 3))

	// First, a batch is needed for an id of another kind.
	ghost := chainSubmit(t, svc.URL, "small", "ghost", 3)

	tests := []struct {
		name, method, path string
		body               any
		want               int
	}{
		{"scorecard on an unknown dataset", "POST", "/scorecards",
			map[string]any{"dataset": chainRef("nosuch", "1.0.0"), "harness": chainRef("gated", "1.0.0")}, 404},
		{"scorecard on an unknown dataset version", "POST", "/scorecards",
			map[string]any{"dataset": chainRef("small", "9.9.9"), "harness": chainRef("gated", "1.0.0")}, 404},
		{"scorecard on an unknown harness", "POST", "/scorecards",
			map[string]any{"dataset": chainRef("small", "1.0.0"), "harness": chainRef("nosuch", "1.0.0")}, 404},
		{"scorecard with a bad version", "POST", "/scorecards",
			map[string]any{"dataset": chainRef("small", "one"), "harness": chainRef("gated", "1.0.0")}, 0},
		{"pull from an unknown trace source", "POST", "/scorecards/ingest/pull",
			map[string]any{"dataset": chainRef("small", "1.0.0"), "source": map[string]any{"name": "nosuch"},
				"runs": []map[string]any{{"caseId": "c01", "runId": "t1"}}}, 0},
		{"unknown trace source", "GET", "/workspace/trace-sources/nosuch", nil, 404},
		{"unknown dataset version", "GET", "/datasets/small/versions/9.9.9", nil, 404},
		{"bad dataset version", "GET", "/datasets/small/versions/not-a-version", nil, 0},
		{"delete latest", "DELETE", "/datasets/small/versions/latest", nil, 404},
		{"dataset registered again with other content", "POST", "/datasets", chainDataset("small", 2), 409},
		{"invalid dataset", "POST", "/datasets", map[string]any{"id": "Bad Id", "version": "1.0.0", "cases": []any{}}, 400},
		{"unknown harness", "GET", "/harnesses/nosuch", nil, 404},
		{"unknown run", "GET", "/runs/run_nosuch", nil, 404},
		{"a batch's id as a run id", "GET", "/runs/" + ghost, nil, 404},
		{"unknown scorecard", "GET", "/scorecards/sc_nosuch", nil, 404},
		{"cancel an unknown scorecard", "POST", "/scorecards/sc_nosuch/cancel", nil, 404},
		{"unknown trajectory", "GET", "/trajectories/nosuch", nil, 404},
		{"unknown team", "GET", "/teams/nosuch", nil, 404},
		{"unknown member", "GET", "/members/nosuch", nil, 404},
		{"add to an unknown team", "PUT", "/teams/nosuch/members/ann", map[string]any{}, 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body chainErrorBody
			code := call(t, tt.method, svc.URL+tt.path, tt.body, &body)
			if code < 400 || code > 499 || (tt.want != 0 && code != tt.want) {
				t.Fatalf("%s %s = %d %+v, want %d (a client's mistake is a 4xx)", tt.method, tt.path, code, body.Error, tt.want)
			}
			if body.Error.Code == "" || body.Error.Message == "" || body.Error.RequestID == "" {
				t.Errorf("%s %s: body %+v is not the one error shape with a message", tt.method, tt.path, body.Error)
			}
			for _, internal := range []string{"(ctx", "Store.", "sql: "} {
				if strings.Contains(body.Error.Message, internal) {
					t.Errorf("%s %s: message %q shows %q", tt.method, tt.path, body.Error.Message, internal)
				}
			}
		})
	}

	// A batch in which no case can start fails in dispatch; the record and
	// its children say why in words.
	rec := chainWaitEnd(t, svc.URL, ghost)
	if rec["status"] != "failed" {
		t.Fatalf("batch %s ended %v, want failed: %v", ghost, rec["status"], rec["error"])
	}
	noInternalChainInRecord(t, "batch "+ghost, rec)
	chainChildren(t, svc.URL, rec)

	// A batch whose dataset version is deleted while it runs: its second
	// chunk of cases cannot be read, and the batch fails in dispatch.
	chainRegister(t, svc.URL, "/datasets", chainDataset("doomed", 17))
	doomed := chainSubmit(t, svc.URL, "doomed", "gated", 1)
	testwait.Until(t, time.Minute, "the first case of "+doomed+" running", func() bool {
		var sc map[string]any
		call(t, "GET", svc.URL+"/scorecards/"+doomed, nil, &sc)
		p, _ := sc["progress"].(map[string]any)
		running, _ := p["running"].(float64)
		return running >= 1
	})
	if code := call(t, "DELETE", svc.URL+"/datasets/doomed/versions/1.0.0", nil, nil); code != 204 && code != 200 {
		t.Fatalf("DELETE /datasets/doomed/versions/1.0.0 = %d, want 204", code)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rec = chainWaitEnd(t, svc.URL, doomed)
	if rec["status"] != "failed" {
		t.Fatalf("batch %s ended %v, want failed once its dataset is gone: %v", doomed, rec["status"], rec["error"])
	}
	e, _ := rec["error"].(map[string]any)
	if msg, _ := e["message"].(string); !strings.Contains(msg, "doomed") {
		t.Errorf("batch %s error %v does not name the dataset it could not read", doomed, e)
	}
	noInternalChainInRecord(t, "batch "+doomed, rec)
	chainChildren(t, svc.URL, rec)
}

// chainDataset is a dataset spec id@1.0.0 of n cases c01, c02, ... answered
// "ok".
func chainDataset(id string, n int) map[string]any {
	var cases []map[string]any
	for i := 1; i <= n; i++ {
		cases = append(cases, map[string]any{"id": fmt.Sprintf("c%02d", i), "task": "say ok", "expected": "ok",
			"graders": []map[string]any{{"id": "exact"}}})
	}
	return map[string]any{"id": id, "version": "1.0.0", "cases": cases}
}

func chainRef(id, version string) map[string]any { return map[string]any{"id": id, "version": version} }

// chainRegister registers spec at path (201, or 200 when it is already).
func chainRegister(t *testing.T, url, path string, spec any) {
	t.Helper()
	if code := call(t, "POST", url+path, spec, nil); code != 201 && code != 200 {
		t.Fatalf("POST %s = %d, want 201", path, code)
	}
}

// chainSubmit starts a batch of dataset@1.0.0 on harness@1.0.0 and returns its
// id.
func chainSubmit(t *testing.T, url, dataset, harness string, concurrency int) string {
	t.Helper()
	var sc struct {
		ID string `json:"id"`
	}
	body := map[string]any{"dataset": chainRef(dataset, "1.0.0"), "harness": chainRef(harness, "1.0.0"), "concurrency": concurrency}
	if code := call(t, "POST", url+"/scorecards", body, &sc); code != 202 || sc.ID == "" {
		t.Fatalf("POST /scorecards = %d (id %q), want 202", code, sc.ID)
	}
	return sc.ID
}

// chainWaitEnd polls the batch id until it has ended and returns its
// record.
func chainWaitEnd(t *testing.T, url, id string) map[string]any {
	t.Helper()
	var rec map[string]any
	testwait.Until(t, 3*time.Minute, "batch "+id+" to end", func() bool {
		rec = nil
		call(t, "GET", url+"/scorecards/"+id, nil, &rec)
		switch rec["status"] {
		case "succeeded", "failed", "cancelled", "superseded":
			return true
		}
		return false
	})
	return rec
}

// chainChildren checks what a user reads of the batch's child runs.
func chainChildren(t *testing.T, url string, batch map[string]any) {
	t.Helper()
	ids, _ := batch["runIds"].([]any)
	for _, id := range ids {
		var run map[string]any
		if code := call(t, "GET", fmt.Sprintf("%s/runs/%v", url, id), nil, &run); code != 200 {
			t.Errorf("GET /runs/%v = %d, want 200", id, code)
			continue
		}
		noInternalChainInRecord(t, fmt.Sprintf("run %v", id), run)
	}
}
