package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"svc/internal/domain/eval"
	"svc/internal/testing/judgetest"
	"svc/internal/testing/testwait"
)

// meteredHarness asks its bound model through the control plane's model
// proxy with the run-scoped token of its secrets file (docs/judges.md),
// reports nothing of the call's cost itself, and answers what the model
// said.
const meteredHarness = `exec /usr/bin/python3 - <<'PY'
import json, os, urllib.request
tok = json.load(open(os.environ["SVC_SECRETS_FILE"]))["SVC_MODEL_TOKEN"]
case = json.load(open(os.environ["SVC_CASE_FILE"]))
body = json.dumps({"messages": [{"role": "user", "content": case["task"]}]}).encode()
req = urllib.request.Request(os.environ["SVC_MODEL_BASE_URL"] + "/chat/completions", data=body,
    headers={"Authorization": "Bearer " + tok, "Content-Type": "application/json"})
out = json.load(urllib.request.urlopen(req, timeout=30))
print(out["choices"][0]["message"]["content"])
PY
`

// TestUsdGraderSeesMeteredCost (issue 29, item 3): a harness bound to a
// model calls it through the model proxy; the proxy meters the call at
// the binding's prices (812 input and 64 output tokens at $0.01 and $0.02
// per million: $0.0000094), and the usd grader reads that cost: a max
// below it fails the run, a max above it passes. Before the fix the
// metered cost reached usage.costUsd only after grading, so a run that
// cost $0.000009 passed max 0.000001.
// It runs on SQLite (`svc dev`) and on PostgreSQL (`svc serve` + `svc
// worker`).
func TestUsdGraderSeesMeteredCost(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		// A fixed port: svc dev gives jobs the model proxy's address below it.
		port := freePort(t)
		svc := start(t, devEnv(t.TempDir(), "SVC_ADDR=127.0.0.1:"+port, "SVC_WEBHOOK_ALLOW=127.0.0.1"), true, "dev")
		usdSeesMeteredCost(t, svc.URL)
	})
	t.Run("postgres", func(t *testing.T) {
		usdSeesMeteredCost(t, pgStack(t, "SVC_WEBHOOK_ALLOW=127.0.0.1"))
	})
}

func usdSeesMeteredCost(t *testing.T, url string) {
	scripts := jobDir(t)
	model := judgetest.New(t, func(prompt string) (int, string) { return http.StatusOK, "answer to " + prompt })

	script := filepath.Join(scripts, "metered.sh")
	if err := os.WriteFile(script, []byte(meteredHarness), 0o755); err != nil {
		t.Fatal(err)
	}
	harness := map[string]any{"id": "metered", "version": "1.0.0", "kind": "process", "command": []string{"/bin/sh", script},
		"model": map[string]any{"ref": "agentmodel"}}
	if code := call(t, "POST", url+"/harnesses", harness, nil); code != 201 {
		t.Fatalf("POST /harnesses = %d, want 201", code)
	}
	if code := call(t, "PUT", url+"/secrets/agent-key", map[string]any{"value": "sk-e2e-metered-0123456789", "allowedHosts": []string{"127.0.0.1"}}, nil); code != 204 {
		t.Fatalf("PUT /secrets/agent-key = %d, want 204", code)
	}
	binding := map[string]any{"provider": "openai", "baseUrl": model.BaseURL(), "model": "gpt-e2e", "keySecret": "agent-key",
		"inputUsdPerMTok": 0.01, "outputUsdPerMTok": 0.02}
	if code := call(t, "PUT", url+"/workspace/models/agentmodel", binding, nil); code != 204 {
		t.Fatalf("PUT /workspace/models/agentmodel = %d, want 204", code)
	}

	const cost = 812*0.01/1e6 + 64*0.02/1e6
	runWithMax := func(max float64) eval.Run {
		t.Helper()
		body := map[string]any{"harness": map[string]string{"id": "metered", "version": "1.0.0"},
			"case": map[string]any{"id": "budget", "task": "plan the trip", "timeoutSec": 60,
				"graders": []map[string]any{{"id": "budget", "kind": "usd", "max": max}}}}
		var run eval.Run
		if code := call(t, "POST", url+"/runs", body, &run); code != 202 {
			t.Fatalf("POST /runs = %d, want 202", code)
		}
		id := run.ID
		testwait.Until(t, 2*time.Minute, "run "+id+" to end", func() bool {
			if code := call(t, "GET", url+"/runs/"+id, nil, &run); code != 200 {
				t.Fatalf("GET /runs/%s = %d", id, code)
			}
			return run.Status.Terminal()
		})
		if run.Result == nil || run.Result.Evidence == nil || run.Result.Evidence.FinalAnswer != "answer to plan the trip" {
			t.Fatalf("run %s ended %s without the model's answer: result %+v, error %+v", id, run.Status, run.Result, run.Error)
		}
		if run.Usage == nil || run.Usage.CostUSD < cost*0.99 || run.Usage.CostUSD > cost*1.01 {
			t.Fatalf("run %s usage %+v, want costUsd %.7f metered by the proxy", id, run.Usage, cost)
		}
		return run
	}
	score := func(run eval.Run) eval.Score {
		t.Helper()
		for _, s := range run.Result.Scores {
			if s.GraderID == "budget" {
				return s
			}
		}
		t.Fatalf("run %s has no budget score: %+v", run.ID, run.Result.Scores)
		return eval.Score{}
	}

	over := runWithMax(0.000001)
	if s := score(over); s.Pass == nil || *s.Pass || s.Value < cost*0.99 || !strings.Contains(s.Detail, "over the max $1e-06") {
		t.Errorf("usd max 0.000001 on a $%.7f run: score %+v, want a failure saying the cost is over the max", cost, s)
	}
	if over.Result.Pass {
		t.Errorf("run %s passed although its metered cost $%.7f is over its max 0.000001", over.ID, cost)
	}

	under := runWithMax(0.0001)
	if s := score(under); s.Pass == nil || !*s.Pass || s.Value < cost*0.99 {
		t.Errorf("usd max 0.0001 on a $%.7f run: score %+v, want a pass measuring the cost", cost, s)
	}
	if !under.Result.Pass || under.Status != eval.StatusSucceeded {
		t.Errorf("run %s ended %s, pass %v; want succeeded and passed under its max", under.ID, under.Status, under.Result.Pass)
	}
	if got := len(model.Received()); got != 2 {
		t.Errorf("the model server received %d calls, want one a run", got)
	}
}

// answerHarness answers each case's expected answer from its case file;
// the wrong one answers "not <expected>". Both exit 0.
const answerHarness = `exec /usr/bin/python3 -c '
import json, os
c = json.load(open(os.environ["SVC_CASE_FILE"]))
print(%s + str(c["expected"]))
'
`

// TestExpectedWithoutGraderIsCompared (issue 29, item 4): a CSV dataset
// with an expected column and no graders, pushed with `svc dataset push`
// and run with `svc scorecard run --wait`: push says which default grades
// the cases; wrong answers fail (scored by the exact grader, naming both
// answers) and right answers pass; the gate between the two exits 1 for
// the wrong harness and 0 for the right one. Before the fix the wrong
// answers passed 3 of 3 on their exit code alone.
// It runs on SQLite (`svc dev`) and on PostgreSQL (`svc serve` + `svc
// worker`).
func TestExpectedWithoutGraderIsCompared(t *testing.T) {
	onBothStores(t, nil, expectedIsCompared)
}

func expectedIsCompared(t *testing.T, url string) {
	dir, scripts := t.TempDir(), jobDir(t)
	cli := func(args ...string) (string, string, int) {
		t.Helper()
		return runCLI(t, url, args...)
	}

	for name, prefix := range map[string]string{"right": `""`, "wrong": `"not "`} {
		script := filepath.Join(scripts, name+".sh")
		if err := os.WriteFile(script, fmt.Appendf(nil, answerHarness, prefix), 0o755); err != nil {
			t.Fatal(err)
		}
		h := map[string]any{"id": name, "version": "1.0.0", "kind": "process", "command": []string{"/bin/sh", script}}
		if code := call(t, "POST", url+"/harnesses", h, nil); code != 201 {
			t.Fatalf("POST /harnesses %s = %d, want 201", name, code)
		}
	}
	csv := filepath.Join(dir, "cases.csv")
	if err := os.WriteFile(csv, []byte("id,task,expected\nadd,What is 2+2?,4\ncapital,What is the capital of France?,Paris\nmul,What is 17 * 23?,391\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := cli("dataset", "push", csv, "--version", "1.0.0")
	if code != 0 {
		t.Fatalf("svc dataset push exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	for _, want := range []string{"dataset cases@1.0.0 registered (3 cases",
		"3 cases have an expected answer and no graders (add, capital, mul): each is graded by exit_code and the default exact grader"} {
		if !strings.Contains(out, want) {
			t.Errorf("svc dataset push does not say %q:\n%s", want, out)
		}
	}

	batch := func(harness string) eval.Scorecard {
		t.Helper()
		out, errOut, code := cli("scorecard", "run", "--dataset", "cases@1.0.0", "--harness", harness,
			"--trials", "3", "--concurrency", "6", "--wait", "--json")
		// The batch succeeds either way: failing cases are verdicts, not
		// a failure of the batch (docs/cli.md); the gate reads them.
		if code != 0 {
			t.Fatalf("svc scorecard run --harness %s exit %d, want 0\nstdout: %s\nstderr: %s", harness, code, out, errOut)
		}
		var sc eval.Scorecard
		if err := json.Unmarshal([]byte(out), &sc); err != nil {
			t.Fatalf("svc scorecard run --json printed %q: %v", out, err)
		}
		if sc.Status != eval.ScorecardSucceeded || sc.Progress.Done != 9 {
			t.Fatalf("batch %s ended %s with progress %+v, want succeeded with 9 done", sc.ID, sc.Status, sc.Progress)
		}
		if harness == "wrong@1.0.0" {
			mustContain(t, errOut, fmt.Sprintf("%s: 9 of 9 case-trials failed", sc.ID))
		} else if strings.Contains(errOut, "case-trials failed") {
			t.Errorf("the right harness's batch reports failures:\n%s", errOut)
		}
		return sc
	}
	right := batch("right@1.0.0")
	if p := right.Progress; p.Passed != 9 || p.Failed != 0 {
		t.Errorf("right answers: progress %+v, want 9 passed", p)
	}
	wrong := batch("wrong@1.0.0")
	if p := wrong.Progress; p.Passed != 0 || p.Failed != 9 {
		t.Errorf("wrong answers: progress %+v, want 9 failed (they were never compared before)", p)
	}

	// Each failing case names the grader that compared and both answers.
	out, errOut, code = cli("scorecard", "show", wrong.ID, "--failed", "--format", "csv")
	if code != 0 {
		t.Fatalf("svc scorecard show exit %d\nstderr: %s", code, errOut)
	}
	for _, want := range []string{`add,FFF,0/3,no,exact,"expected ""4"", got ""not 4"""`, `capital,FFF,0/3,no,exact,"expected ""Paris"", got ""not Paris"""`,
		`mul,FFF,0/3,no,exact,"expected ""391"", got ""not 391"""`} {
		mustContain(t, out, want)
	}
	id, ok := wrong.CaseRuns["mul#0"]
	if !ok {
		t.Fatalf("batch %s has no run of case mul, trial 0: %v", wrong.ID, wrong.CaseRuns)
	}
	var run eval.Run
	if code := call(t, "GET", url+"/runs/"+id, nil, &run); code != 200 || run.Result == nil {
		t.Fatalf("GET /runs/%s = %d", id, code)
	}
	var ids []string
	for _, s := range run.Result.Scores {
		ids = append(ids, s.GraderID)
	}
	if strings.Join(ids, ",") != "exit_code,exact" || run.Result.Pass {
		t.Errorf("run %s scores %v pass %v, want exit_code and a failing exact", id, ids, run.Result.Pass)
	}

	// The gate blocks the wrong harness against the right one, and lets
	// an A/A pair of the right one through.
	if out, errOut, code := cli("gate", "--baseline", right.ID, "--candidate", wrong.ID); code != 1 {
		t.Errorf("svc gate right -> wrong exit %d, want 1\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	again := batch("right@1.0.0")
	if out, errOut, code := cli("gate", "--baseline", right.ID, "--candidate", again.ID); code != 0 {
		t.Errorf("svc gate right -> right exit %d, want 0\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	// The manifest seals the default answer grader, and still verifies.
	if out, errOut, code := cli("verify", wrong.ID); code != 0 {
		t.Errorf("svc verify %s exit %d, want 0\nstdout: %s\nstderr: %s", wrong.ID, code, out, errOut)
	}
}
