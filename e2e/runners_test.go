package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"svc/internal/domain/eval"
	"svc/internal/domain/flows"
	"svc/internal/service/runs"
	"svc/internal/testing/testwait"
	"svc/store"
)

// runnerHarness writes its case id to the cases file when it starts, works
// for a while, and answers "ok".
const runnerHarness = `set -eu
id=$(grep -o '"id":"[^"]*"' "$SVC_CASE_FILE" | head -n1 | cut -d'"' -f4)
echo "$id" >> %[1]q
sleep %[2]s
echo ok
`

// runnerHeartbeat is the runners' heartbeat interval in this test: a
// cancel must reach a runner within it.
const runnerHeartbeat = time.Second

// TestRunnersEndToEnd is issue 15's runner figure: two `svc runner`
// processes on loopback run a 200-case scorecard on a runner runtime; one
// is SIGKILLed while it holds jobs; the batch still ends with exactly 200
// canonical runs, each stamped self_reported, the dead runner's jobs run
// again by the survivor once their leases run out. Then a second batch is
// cancelled while the survivor runs its jobs, and the cancel reaches the
// survivor within one heartbeat.
func TestRunnersEndToEnd(t *testing.T) {
	const batchCases = 200
	dataDir, marks := t.TempDir(), t.TempDir()
	svc := start(t, devEnv(dataDir, "SVC_LOCAL_ISOLATION=none"), true, "dev")

	var key struct {
		RunnerKey string `json:"runnerKey"`
	}
	if code := call(t, "POST", svc.URL+"/runner-keys", map[string]string{"label": "e2e"}, &key); code != 201 || !strings.HasPrefix(key.RunnerKey, "rnr_") {
		t.Fatalf("POST /runner-keys = %d %+v, want 201 with an rnr_ key", code, key)
	}
	// A runner key opens the runner routes only.
	if code := call(t, "GET", svc.URL+"/runs", nil, nil, "Authorization", "Bearer "+key.RunnerKey); code != 403 {
		t.Errorf("GET /runs with a runner key = %d, want 403", code)
	}
	runtime := map[string]any{"id": "own-boxes", "version": "1", "kind": "runner"}
	if code := call(t, "POST", svc.URL+"/runtimes", runtime, nil); code != 201 {
		t.Fatalf("POST /runtimes = %d, want 201", code)
	}
	casesFile := filepath.Join(marks, "cases")
	for name, pause := range map[string]string{"quick": "0.2", "slow": "60"} {
		script := filepath.Join(marks, name+".sh")
		if err := os.WriteFile(script, fmt.Appendf(nil, runnerHarness, casesFile, pause), 0o755); err != nil {
			t.Fatal(err)
		}
		h := map[string]any{"id": name, "version": "1.0.0", "kind": "process", "command": []string{"/bin/sh", script}}
		if code := call(t, "POST", svc.URL+"/harnesses", h, nil); code != 201 {
			t.Fatalf("POST /harnesses %s = %d, want 201", name, code)
		}
	}
	dataset := func(id string, n int) {
		cases := make([]map[string]any, 0, n)
		for i := range n {
			cases = append(cases, map[string]any{"id": fmt.Sprintf("%s%04d", id, i), "task": "say ok", "expected": "ok",
				"graders": []map[string]any{{"id": "exact"}}})
		}
		if code := call(t, "POST", svc.URL+"/datasets", map[string]any{"id": id, "version": "1.0.0", "cases": cases}, nil); code != 201 {
			t.Fatalf("POST /datasets %s = %d, want 201", id, code)
		}
	}
	dataset("many", batchCases)
	dataset("stop", 8)

	runner := func(name string) *proc {
		env := []string{"SVC_RUNNER_KEY=" + key.RunnerKey, "SVC_DATA_DIR=" + t.TempDir(), "SVC_LOCAL_ISOLATION=none"}
		p := start(t, env, false, "runner", "--url", svc.URL, "--workers", "4", "--heartbeat", runnerHeartbeat.String(), "--name", name)
		testwait.Until(t, time.Minute, name+" to start", func() bool { return strings.Contains(p.Stdout(), "workers leasing") })
		return p
	}
	a, b := runner("runner-a"), runner("runner-b")

	submit := func(ds, harness string, concurrency int) string {
		var sc eval.Scorecard
		body := map[string]any{"dataset": map[string]string{"id": ds, "version": "1.0.0"}, "harness": map[string]string{"id": harness, "version": "1.0.0"},
			"runtime": "own-boxes", "concurrency": concurrency}
		if code := call(t, "POST", svc.URL+"/scorecards", body, &sc); code != 202 || sc.ID == "" {
			t.Fatalf("POST /scorecards = %d %+v, want 202 with an id", code, sc)
		}
		return sc.ID
	}
	read := func(id string) eval.Scorecard {
		var sc eval.Scorecard
		if code := call(t, "GET", svc.URL+"/scorecards/"+id, nil, &sc); code != 200 {
			t.Fatalf("GET /scorecards/%s = %d", id, code)
		}
		return sc
	}
	jobs := func() []store.RunnerJob {
		var js []store.RunnerJob
		if code := call(t, "GET", svc.URL+"/runner-jobs", nil, &js); code != 200 {
			t.Fatalf("GET /runner-jobs = %d", code)
		}
		return js
	}
	heldBy := func(name, scorecard string) int {
		n := 0
		for _, j := range jobs() {
			if j.State == store.RunnerJobLeased && strings.HasSuffix(j.Runner, "/"+name) && (scorecard == "" || j.ScorecardID == scorecard) {
				n++
			}
		}
		return n
	}

	// The 200-case batch, at a concurrency above the runners' 8 workers.
	submitted := time.Now()
	id := submit("many", "quick", 16)
	// Effective parallelism is min(concurrency, runner workers): at most 8
	// jobs leased at once, the batch's other dispatched cases queued.
	maxLeased, maxQueued := 0, 0
	testwait.Until(t, 3*time.Minute, "60 cases done with runner-a holding a job", func() bool {
		sc := read(id)
		if eval.ScorecardTerminal(sc.Status) {
			t.Fatalf("batch ended %s before runner-a could be killed", sc.Status)
		}
		leased, queued := 0, 0
		for _, j := range jobs() {
			switch j.State {
			case store.RunnerJobLeased:
				leased++
			case store.RunnerJobQueued:
				queued++
			}
		}
		maxLeased, maxQueued = max(maxLeased, leased), max(maxQueued, queued)
		return sc.Progress.Done >= 60 && heldBy("runner-a", id) > 0
	})
	t.Logf("before the kill: at most %d jobs leased and %d queued at once (8 runner workers, concurrency 16)", maxLeased, maxQueued)
	if maxLeased > 8 {
		t.Errorf("%d jobs leased at once, want at most the runners' 8 workers", maxLeased)
	}
	held := heldBy("runner-a", id)
	a.signal(syscall.SIGKILL)
	a.wait(time.Minute)
	killed := time.Now()
	t.Logf("runner-a SIGKILLed holding %d jobs, %d cases done after %s", held, read(id).Progress.Done, killed.Sub(submitted).Round(time.Millisecond))

	var sc eval.Scorecard
	testwait.Until(t, 5*time.Minute, "the batch to end", func() bool {
		sc = read(id)
		return eval.ScorecardTerminal(sc.Status) && sc.FinishedAt != nil
	})
	t.Logf("batch %s %s after %s (%s after the kill)", id, sc.Status, time.Since(submitted).Round(time.Millisecond), time.Since(killed).Round(time.Millisecond))
	if sc.Status != eval.ScorecardSucceeded || sc.Error != nil {
		t.Fatalf("batch ended %s with error %+v, want succeeded", sc.Status, sc.Error)
	}
	if p := sc.Progress; p.Total != batchCases || p.Done != batchCases || p.Passed != batchCases {
		t.Errorf("progress %+v, want %d total, done and passed", p, batchCases)
	}
	children := listChildren(t, svc.URL, id)
	canonical := map[string]string{}
	for _, c := range children {
		key := fmt.Sprintf("%s#%d", c.CaseID, c.Trial)
		if c.Canonical == nil || !*c.Canonical {
			t.Errorf("child %s (%s) is not canonical", c.ID, key)
			continue
		}
		if prev, dup := canonical[key]; dup {
			t.Errorf("two canonical children for %s: %s and %s", key, prev, c.ID)
		}
		canonical[key] = c.ID
		if c.Status != eval.StatusSucceeded || c.Result == nil || !c.Result.Pass {
			t.Errorf("child %s (%s) ended %s, want succeeded and passing", c.ID, key, c.Status)
		}
	}
	if len(children) != batchCases || len(canonical) != batchCases {
		t.Errorf("%d children, %d canonical; want exactly %d of each", len(children), len(canonical), batchCases)
	}
	// Runs a runner executed are the runner's word, not the service's.
	for _, c := range children[:min(len(children), 10)] {
		var run eval.Run
		if code := call(t, "GET", svc.URL+"/runs/"+c.ID, nil, &run); code != 200 {
			t.Fatalf("GET /runs/%s = %d", c.ID, code)
		}
		if run.Result == nil || run.Result.Provenance == nil || run.Result.Provenance.Attestation != eval.AttestationSelfReported {
			t.Errorf("run %s provenance %+v, want attestation self_reported", c.ID, run.Result.Provenance)
		}
	}
	// The dead runner's jobs started twice: once on it, once on runner-b.
	starts := readCaseStarts(t, casesFile)
	again := 0
	for i := range batchCases {
		if starts[fmt.Sprintf("many%04d", i)] > 1 {
			again++
		}
	}
	t.Logf("%d cases started more than once (runner-a held %d jobs when killed)", again, held)
	if again == 0 {
		// runner-a was killed between leasing its jobs and starting their
		// harnesses. They were run again all the same: the batch could
		// not have ended with every case done otherwise.
		t.Logf("no case started twice: runner-a was killed before the harnesses of its %d jobs started", held)
	}
	if js := jobs(); len(js) != 0 {
		t.Errorf("GET /runner-jobs after the batch = %+v, want no open job", js)
	}

	// A cancel reaches the surviving runner within one heartbeat.
	stopID := submit("stop", "slow", 4)
	testwait.Until(t, time.Minute, "runner-b to hold the slow batch's jobs", func() bool { return heldBy("runner-b", stopID) == 4 })
	// The driver view shows who holds the batch's jobs.
	var view flows.DriverView
	if code := call(t, "GET", svc.URL+"/ops/driver/batch/"+stopID, nil, &view); code != 200 {
		t.Fatalf("GET /ops/driver/batch/%s = %d", stopID, code)
	}
	if len(view.RunnerJobs) != 4 {
		t.Errorf("/ops/driver shows runner jobs %+v, want the 4 runner-b holds", view.RunnerJobs)
	}
	for _, j := range view.RunnerJobs {
		if j.State != store.RunnerJobLeased || !strings.HasSuffix(j.Runner, "/runner-b") || j.Cancelled {
			t.Errorf("/ops/driver runner job %+v, want leased by runner-b and not cancelled", j)
		}
	}
	before := strings.Count(b.Stderr(), "the service cancelled the job")
	var cancelled eval.Scorecard
	asked := time.Now()
	if code := call(t, "POST", svc.URL+"/scorecards/"+stopID+"/cancel", nil, &cancelled); code != 200 && code != 202 {
		t.Fatalf("POST /scorecards/%s/cancel = %d", stopID, code)
	}
	answered := time.Since(asked)
	// Polled every 10 ms, so the figure is the cancel's, not the poll's.
	var reached time.Duration
	for strings.Count(b.Stderr(), "the service cancelled the job") <= before {
		if time.Since(asked) > 30*time.Second {
			t.Fatalf("the cancel did not reach runner-b within 30 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	reached = time.Since(asked)
	t.Logf("cancel: answered after %s; runner-b told after %s (heartbeat %s)", answered.Round(time.Millisecond), reached.Round(time.Millisecond), runnerHeartbeat)
	// One heartbeat, plus the round trip and the log line being read.
	if reached > runnerHeartbeat+500*time.Millisecond {
		t.Errorf("the cancel reached runner-b after %s, want within one heartbeat (%s)", reached, runnerHeartbeat)
	}
	testwait.Until(t, time.Minute, "every job of the cancelled batch to be killed and dropped", func() bool { return len(jobs()) == 0 })
	stopped := read(stopID)
	if stopped.Status != eval.ScorecardCancelled {
		t.Errorf("the cancelled batch is %s, want cancelled", stopped.Status)
	}
	// The detail read's timeline says the runners were told.
	told := false
	for _, st := range stopped.Steps {
		told = told || strings.Contains(st.Message, "4 self-hosted runner jobs")
	}
	if !told {
		t.Errorf("the cancelled batch's steps %+v do not say its 4 runner jobs were told to stop", stopped.Steps)
	}
}

// instrumentedRunnerHarness prints a line holding its secret and some
// progress (a masked stream holds back the bytes that may begin a secret
// until more come, for a runner's job as for a local one), waits for
// the go file, then exports two GenAI spans to the OTLP door it was given
// (OTEL_EXPORTER_OTLP_ENDPOINT, with the run-scoped Authorization header
// from its secrets file, as a harness exporting its secrets file's entries
// would hand them to an OpenTelemetry SDK; here with curl, as the local
// driver's instrumented harness test does), writes one trace event and
// answers. It says so if the token is in its environment.
const instrumentedRunnerHarness = `set -eu
secret=$(sed -n 's/.*"API_TOKEN":"\([^"]*\)".*/\1/p' "$SVC_SECRETS_FILE")
echo "step one: the token is $secret"
if env | grep -q rjt_; then echo "RUN TOKEN IN THE ENVIRONMENT"; fi
i=0; while [ $i -lt 200 ]; do echo "progress $i"; i=$((i+1)); done
while [ ! -e %[1]q ]; do sleep 0.05; done
headers=$(sed -n 's/.*"OTEL_EXPORTER_OTLP_HEADERS":"\([^"]*\)".*/\1/p' "$SVC_SECRETS_FILE")
authz=$(printf %%s "$headers" | sed 's/^Authorization=//; s/%%20/ /')
rid=$(printf %%s "$OTEL_RESOURCE_ATTRIBUTES" | tr ',' '\n' | sed -n 's/^svc.run_id=//p')
now=$(date +%%s)
body='{"resourceSpans":[{"resource":{"attributes":[{"key":"svc.run_id","value":{"stringValue":"'$rid'"}}]},"scopeSpans":[{"spans":[
 {"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","name":"chat","startTimeUnixNano":"'$now'000000000","endTimeUnixNano":"'$now'500000000",
  "attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"chat"}},{"key":"gen_ai.request.model","value":{"stringValue":"m1"}},
  {"key":"gen_ai.usage.input_tokens","value":{"intValue":"40"}},{"key":"gen_ai.usage.output_tokens","value":{"intValue":"2"}}]},
 {"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b175","name":"execute_tool","startTimeUnixNano":"'$now'600000000","endTimeUnixNano":"'$now'700000000",
  "attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"execute_tool"}},{"key":"gen_ai.tool.name","value":{"stringValue":"search"}}]}
]}]}]}'
curl -sS --fail -X POST -H 'Content-Type: application/json' -H "Authorization: $authz" --data "$body" "$OTEL_EXPORTER_OTLP_ENDPOINT/v1/traces" >/dev/null
printf '{"kind":"message","role":"assistant","content":"done"}\n' >> "$SVC_TRACE_FILE"
echo done
`

// TestRunnersStreamLogsAndLandSpans: a runner's job's output reaches the
// run's log (GET /runs/:id/logs) while the job still runs, with its secret
// masked, each line once; and the spans its instrumented harness exports
// to the control plane's OTLP door with the job's run-scoped token (never
// in its environment) land in the run's sealed trajectory.
func TestRunnersStreamLogsAndLandSpans(t *testing.T) {
	const secret = "e2e-s3cret-value-0042"
	dataDir, marks := t.TempDir(), jobDir(t)
	svc := start(t, devEnv(dataDir, "SVC_LOCAL_ISOLATION=none"), true, "dev")
	var key struct {
		RunnerKey string `json:"runnerKey"`
	}
	if code := call(t, "POST", svc.URL+"/runner-keys", map[string]string{"label": "e2e"}, &key); code != 201 {
		t.Fatalf("POST /runner-keys = %d", code)
	}
	if code := call(t, "POST", svc.URL+"/runtimes", map[string]any{"id": "own-boxes", "version": "1", "kind": "runner"}, nil); code != 201 {
		t.Fatalf("POST /runtimes = %d, want 201", code)
	}
	if code := call(t, "PUT", svc.URL+"/secrets/api-token", map[string]any{"value": secret}, nil); code != 204 {
		t.Fatalf("PUT /secrets/api-token = %d, want 204", code)
	}
	goFile := filepath.Join(marks, "go")
	script := filepath.Join(marks, "instrumented.sh")
	if err := os.WriteFile(script, fmt.Appendf(nil, instrumentedRunnerHarness, goFile), 0o755); err != nil {
		t.Fatal(err)
	}
	h := map[string]any{"id": "instrumented", "version": "1.0.0", "kind": "process", "command": []string{"/bin/sh", script},
		"secretEnv": map[string]string{"API_TOKEN": "api-token"}}
	if code := call(t, "POST", svc.URL+"/harnesses", h, nil); code != 201 {
		t.Fatalf("POST /harnesses = %d, want 201", code)
	}
	env := []string{"SVC_RUNNER_KEY=" + key.RunnerKey, "SVC_DATA_DIR=" + t.TempDir(), "SVC_LOCAL_ISOLATION=none"}
	r := start(t, env, false, "runner", "--url", svc.URL, "--workers", "1", "--heartbeat", runnerHeartbeat.String(), "--name", "box")
	testwait.Until(t, time.Minute, "the runner to start", func() bool { return strings.Contains(r.Stdout(), "workers leasing") })

	var run eval.Run
	body := map[string]any{"harness": map[string]string{"id": "instrumented", "version": "1.0.0"}, "runtime": "own-boxes",
		"case": map[string]any{"id": "c1", "task": "search", "timeoutSec": 120, "graders": []map[string]any{{"id": "tool_calls"}}}}
	if code := call(t, "POST", svc.URL+"/runs", body, &run); code != 202 || run.ID == "" {
		t.Fatalf("POST /runs = %d %+v, want 202", code, run)
	}
	logs := func() string {
		var page struct {
			Chunks []store.RunLog `json:"chunks"`
		}
		if code := call(t, "GET", svc.URL+"/runs/"+run.ID+"/logs?limit=5000", nil, &page); code != 200 {
			t.Fatalf("GET /runs/%s/logs = %d", run.ID, code)
		}
		var b strings.Builder
		for _, c := range page.Chunks {
			b.WriteString(c.Data)
		}
		return b.String()
	}
	// The harness waits for the go file: its first line must be in the
	// run's log while it runs.
	submitted := time.Now()
	live := testwait.UntilValue(t, 2*time.Minute, "the job's first line in the run's log", func() (string, bool) {
		l := logs()
		return l, strings.Contains(l, "step one")
	})
	t.Logf("the job's first line reached GET /runs/:id/logs %s after the submit, while the job runs", time.Since(submitted).Round(time.Millisecond))
	var running eval.Run
	if code := call(t, "GET", svc.URL+"/runs/"+run.ID, nil, &running); code != 200 || running.Status.Terminal() {
		t.Fatalf("GET /runs/%s = %d, status %s; want it still running while its log is read", run.ID, code, running.Status)
	}
	if strings.Contains(live, secret) || !strings.Contains(live, "step one: the token is ***") {
		t.Errorf("live log %q, want the secret masked", live)
	}
	if err := os.WriteFile(goFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 2*time.Minute, "the run to end", func() bool {
		if code := call(t, "GET", svc.URL+"/runs/"+run.ID, nil, &run); code != 200 {
			t.Fatalf("GET /runs/%s = %d", run.ID, code)
		}
		return run.Status.Terminal()
	})
	if run.Status != eval.StatusSucceeded || run.Result == nil {
		t.Fatalf("run ended %s with result %+v, want succeeded", run.Status, run.Result)
	}
	final := logs()
	if strings.Contains(final, secret) || strings.Contains(final, "rjt_") || strings.Count(final, "step one") != 1 || !strings.Contains(final, "done") {
		t.Errorf("final log %q, want each line once, no secret and no run token", final)
	}
	if strings.Contains(final, "RUN TOKEN IN THE ENVIRONMENT") {
		t.Error("the run-scoped token was in the job's environment")
	}
	var tr runs.TrajectoryView
	if code := call(t, "GET", svc.URL+"/runs/"+run.ID+"/trajectory", nil, &tr); code != 200 {
		t.Fatalf("GET /runs/%s/trajectory = %d", run.ID, code)
	}
	var kinds []string
	for _, e := range tr.Events {
		kinds = append(kinds, e.Kind+":"+e.Name)
	}
	if !tr.Meta.Sealed || !slices.Contains(kinds, "llm_call:chat") || !slices.Contains(kinds, "tool_call:search") || !slices.Contains(kinds, "message:") {
		t.Errorf("sealed %v trajectory events %v, want the trace file's message and the two exported spans", tr.Meta.Sealed, kinds)
	}
	if u := run.Result.Usage; u == nil || u.InputTokens != 40 || u.ToolCalls != 1 {
		t.Errorf("result usage %+v, want the spans' 40 input tokens and 1 tool call", u)
	}
}
