package workflows_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/encoding/protojson"

	"svc/internal/domain/eval"
	"svc/internal/integrations/webhooks"
	"svc/internal/platform/config"
	"svc/internal/service/runs"
	"svc/internal/testing/stacktest"
	"svc/internal/testing/testwait"
	"svc/store"
	"svc/store/pgtest"
)

// End to end through Temporal's real server (embedded), the real API on
// loopback, the local driver running real shell harnesses, and a webhook
// receiver that verifies signatures.

func TestMain(m *testing.M) { pgtest.Main(m) }

// updateHistories rewrites the committed histories that replay_test.go
// replays: go test ./workflows/ -run TestRun -update-histories
var updateHistories = flag.Bool("update-histories", false, "write the histories of the end-to-end runs to testdata/histories")

// saveHistory writes workflow id's history to testdata/histories/name.json
// when -update-histories is set.
func saveHistory(t *testing.T, c client.Client, id, name string) {
	t.Helper()
	if !*updateHistories {
		return
	}
	var events []*historypb.HistoryEvent
	it := c.GetWorkflowHistory(t.Context(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, ev)
	}
	b, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(&historypb.History{Events: events})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "histories", name+".json")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s (%d events)", path, len(events))
}

const taskQueue = "it"

// stack is one running service: Temporal, a worker, the API.
type stack struct {
	st     *stacktest.Stack
	url    string
	store  store.Store
	tc     client.Client
	hooks  *receiver
	apiKey string
	ws     string
	tmp    string
}

// receiver is a webhook endpoint on loopback that records what it gets.
type receiver struct {
	mu   sync.Mutex
	got  []delivery
	fail int // answer 503 to this many requests first
	srv  *httptest.Server
}

type delivery struct {
	header http.Header
	body   []byte
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.got = append(r.got, delivery{req.Header.Clone(), body})
		if r.fail > 0 {
			r.fail--
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

type stackOpt func(*config.Config)

func newStack(t *testing.T, backend string, opts ...stackOpt) *stack {
	t.Helper()
	hooks := newReceiver(t)
	st := stacktest.New(t, stacktest.Options{Backend: backend, TaskQueue: taskQueue, Host: "test-worker", Level: slog.LevelWarn,
		Config: func(cfg *config.Config) {
			cfg.WebhookAllow = "127.0.0.1"
			cfg.WebhookAttempts = 4
			for _, o := range opts {
				o(cfg)
			}
		}})
	return &stack{st: st, url: st.URL, store: st.Store, tc: st.Client, hooks: hooks, apiKey: st.APIKey, ws: st.Workspace, tmp: st.Tmp}
}

// call sends a request with the stack's key; see stacktest.Stack.Call.
func (s *stack) call(t *testing.T, method, path, body string, want int, out any, hdr ...string) []byte {
	t.Helper()
	return s.st.Call(t, method, path, body, want, out, hdr...)
}

// script writes an executable shell harness into the stack's temp dir and
// registers it as harness id@version.
func (s *stack) harness(t *testing.T, id, version, body string, extra map[string]any) {
	t.Helper()
	path := filepath.Join(s.tmp, id+"-"+version+".sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	spec := map[string]any{"id": id, "version": version, "kind": "process", "command": []string{"/bin/sh", path}}
	for k, v := range extra {
		spec[k] = v
	}
	b, _ := json.Marshal(spec)
	s.call(t, "POST", "/harnesses", string(b), 201, nil)
}

// wait polls GET /runs/:id until the run is terminal.
func (s *stack) wait(t *testing.T, id string) eval.Run {
	t.Helper()
	var run eval.Run
	testwait.UntilValue(t, 2*time.Minute, "run "+id+" to end", func() (eval.Status, bool) {
		run = eval.Run{}
		s.call(t, "GET", "/runs/"+id, "", 200, &run)
		return run.Status, run.Status.Terminal()
	})
	return run
}

// agentScript is a harness that reads its case, writes one trace event of
// every kind, and answers on stdout.
const agentScript = `set -eu
test -f "$SVC_CASE_FILE"
grep -q '"id":"sum"' "$SVC_CASE_FILE"
echo "working on $SVC_RUN_ID" >&2
cat >> "$SVC_TRACE_FILE" <<'EOF'
{"kind":"llm_call","model":"m-1","inputTokens":120,"outputTokens":8,"costUsd":0.002}
{"kind":"tool_call","name":"calculator","input":{"expr":"2+2"},"output":4}
{"kind":"span","name":"plan","attributes":{"step":1}}
{"kind":"artifact","name":"notes.txt","ref":"file://notes.txt","mediaType":"text/plain","role":"output"}
{"kind":"message","role":"assistant","content":"4"}
EOF
echo 4
`

func TestRunEndToEnd(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			s := newStack(t, backend)
			s.harness(t, "agent", "1.0.0", agentScript, nil)
			s.harness(t, "agent", "1.2.0", agentScript, nil)

			body := fmt.Sprintf(`{"harness":{"id":"agent","version":"latest"},"webhookUrl":%q,
				"case":{"id":"sum","task":"What is 2+2?","expected":"4","timeoutSec":60,
					"graders":[{"id":"exact"},{"id":"has4","kind":"contains","value":"4"},{"id":"tool_calls","min":1},{"id":"usd","max":0.01},{"id":"span","name":"plan"}]}}`,
				s.hooks.srv.URL+"/hook")
			var queued eval.Run
			s.call(t, "POST", "/runs", body, 202, &queued)
			if queued.Status != eval.StatusQueued || queued.ID == "" {
				t.Fatalf("submit answered %+v, want a queued run", queued)
			}
			run := s.wait(t, queued.ID)
			if run.Status != eval.StatusSucceeded {
				t.Fatalf("run ended %s: %+v", run.Status, run.Error)
			}
			if run.Harness.Version != "1.2.0" {
				t.Errorf("latest resolved to %s at dispatch, want 1.2.0", run.Harness)
			}
			r := run.Result
			if r == nil || !r.Pass || r.Harness != "agent@1.2.0" {
				t.Fatalf("result %+v", r)
			}
			kinds := map[string]bool{}
			for _, e := range r.Trace {
				kinds[e.Kind] = true
			}
			for _, k := range []string{"llm_call", "tool_call", "span", "artifact", "message"} {
				if !kinds[k] {
					t.Errorf("trace lacks a %s event: %+v", k, r.Trace)
				}
			}
			if len(r.Scores) != 5 {
				t.Errorf("scores %+v, want 5", r.Scores)
			}
			for _, sc := range r.Scores {
				if sc.Pass == nil || !*sc.Pass {
					t.Errorf("score %+v did not pass", sc)
				}
			}
			if r.Snapshot == nil || r.Snapshot.Kind != "prompt" || r.Snapshot.Output != "4" || r.Snapshot.Prompt != "What is 2+2?" {
				t.Errorf("snapshot %+v", r.Snapshot)
			}
			if r.Execution == nil || r.Execution.Driver != "local" || r.Execution.OS != "linux" || r.Execution.OSResolved != "defaulted" || r.Execution.Runtime != "local" {
				t.Errorf("execution %+v", r.Execution)
			}
			if r.Provenance == nil || r.Provenance.Attestation != "managed" || !strings.HasPrefix(r.Provenance.HarnessDigest, "sha256:") {
				t.Errorf("provenance %+v", r.Provenance)
			}
			if r.Usage == nil || r.Usage.CostUSD != 0.002 || r.Usage.InputTokens != 120 || r.Usage.ToolCalls != 1 {
				t.Errorf("usage %+v", r.Usage)
			}
			if !r.TraceSealed || r.TraceRef != "trajectory:"+run.ID || r.EvidenceVersion != eval.EvidenceVersion {
				t.Errorf("seal fields: sealed %v ref %q era %d", r.TraceSealed, r.TraceRef, r.EvidenceVersion)
			}
			if r.Evidence == nil || r.Evidence.FinalAnswer != "4" || len(r.Evidence.Artifacts) != 1 {
				t.Errorf("evidence %+v", r.Evidence)
			}

			var tr runs.TrajectoryView
			s.call(t, "GET", "/runs/"+run.ID+"/trajectory", "", 200, &tr)
			if tr.Meta.Source != "svc" || !tr.Meta.Sealed || tr.Meta.EventCount != len(r.Trace) {
				t.Errorf("trajectory meta %+v", tr.Meta)
			}
			var logs runs.Logs
			s.call(t, "GET", "/runs/"+run.ID+"/logs", "", 200, &logs)
			var all strings.Builder
			for _, c := range logs.Chunks {
				all.WriteString(c.Data)
			}
			if logs.Live || !strings.Contains(all.String(), "working on "+run.ID) || !strings.Contains(all.String(), "4") {
				t.Errorf("logs %+v", logs)
			}

			// The webhook: one delivery, signed with the workspace secret.
			testwait.Until(t, time.Minute, "the webhook delivery", func() bool { return len(s.hooks.deliveries()) == 1 })
			var secret runs.WebhookSecret
			s.call(t, "GET", "/workspace/webhook-secret", "", 200, &secret)
			d := s.hooks.deliveries()[0]
			if err := webhooks.Verify(secret.Secret, d.header, d.body, time.Now(), 0); err != nil {
				t.Errorf("webhook signature: %v", err)
			}
			if got := d.header.Get("webhook-id"); got != "msg_"+run.ID {
				t.Errorf("webhook-id %q, want msg_%s", got, run.ID)
			}
			var posted eval.Run
			if err := json.Unmarshal(d.body, &posted); err != nil || posted.ID != run.ID || posted.Status != eval.StatusSucceeded {
				t.Errorf("webhook body: %v %+v", err, posted)
			}
			var attempts []store.WebhookDelivery
			testwait.Until(t, time.Minute, "the delivery record", func() bool {
				s.call(t, "GET", "/runs/"+run.ID+"/webhook-deliveries", "", 200, &attempts)
				return len(attempts) == 1
			})
			if attempts[0].Status != 204 || attempts[0].Attempt != 1 {
				t.Errorf("delivery record %+v", attempts[0])
			}

			if backend == "sqlite" {
				saveHistory(t, s.tc, run.ID, "run_succeeded_webhook")
			}
			var feed []store.Notification
			s.call(t, "GET", "/notifications?unread=1", "", 200, &feed)
			if len(feed) != 1 || feed[0].Kind != eval.NotifyRunCompleted || feed[0].ID != "run_completed:"+run.ID {
				t.Errorf("notifications %+v", feed)
			}
		})
	}
}

// A harness that fails, and a case that cannot be dispatched, end as
// failed runs with an error event and a pass:false score, and notify.
func TestRunFailures(t *testing.T) {
	s := newStack(t, "sqlite")
	s.harness(t, "crash", "1", "echo 'model quota exhausted' >&2\nexit 3\n", nil)
	s.harness(t, "needs-key", "1", "echo should-not-run\n", map[string]any{"secretEnv": map[string]string{"API_TOKEN": "model-key"}})

	for _, tc := range []struct {
		harness, code, detail string
	}{
		{"crash", eval.CodeExit, "exited with code 3: model quota exhausted"},
		{"needs-key", eval.CodeDispatch, `secret "model-key"`},
	} {
		var q eval.Run
		s.call(t, "POST", "/runs", fmt.Sprintf(`{"harness":{"id":%q,"version":"1"},"case":{"id":"c","task":"t"}}`, tc.harness), 202, &q)
		run := s.wait(t, q.ID)
		if run.Status != eval.StatusFailed || run.Error == nil || run.Error.Code != tc.code || !strings.Contains(run.Error.Message, tc.detail) {
			t.Errorf("%s: status %s error %+v, want failed %s mentioning %q", tc.harness, run.Status, run.Error, tc.code, tc.detail)
			continue
		}
		r := run.Result
		var sawError, sawFail bool
		for _, e := range r.Trace {
			sawError = sawError || e.Kind == eval.EventError
		}
		for _, sc := range r.Scores {
			sawFail = sawFail || (sc.Pass != nil && !*sc.Pass && strings.Contains(sc.Detail, tc.detail))
		}
		if !sawError || !sawFail || r.Pass {
			t.Errorf("%s: result lacks the error event or the failing score: %+v", tc.harness, r)
		}
		saveHistory(t, s.tc, run.ID, "run_failed_"+tc.harness)
		if tc.code == eval.CodeDispatch && r.Execution != nil {
			t.Errorf("%s: execution %+v recorded for a case that never ran", tc.harness, r.Execution)
		}
	}
	// The notification follows the terminal record, from the next activity.
	var feed []store.Notification
	testwait.Until(t, time.Minute, "two notifications", func() bool {
		feed = nil
		s.call(t, "GET", "/notifications", "", 200, &feed)
		return len(feed) >= 2
	})
	if len(feed) != 2 || feed[0].Kind != eval.NotifyRunFailed || feed[1].Kind != eval.NotifyRunFailed {
		t.Errorf("notifications %+v, want two run_failed", feed)
	}
}

// Secrets reach the harness in a file, never in its environment; the
// service's own environment does not leak into the job either.
func TestRunSecretsStayOutOfEnvironment(t *testing.T) {
	t.Setenv("SVC_TEST_SERVICE_ONLY", "leak")
	s := newStack(t, "sqlite")
	s.call(t, "PUT", "/secrets/model-key", `{"value":"s3cr3t-value"}`, 204, nil)
	s.harness(t, "keyed", "1", `set -eu
if env | grep -q 's3cr3t-value'; then echo "secret in env"; exit 1; fi
if env | grep -q 'SVC_TEST_SERVICE_ONLY'; then echo "service env leaked"; exit 1; fi
grep -q '"API_TOKEN":"s3cr3t-value"' "$SVC_SECRETS_FILE"
echo ok
`, map[string]any{"secretEnv": map[string]string{"API_TOKEN": "model-key"}})
	var q eval.Run
	s.call(t, "POST", "/runs", `{"harness":{"id":"keyed","version":"1"},"case":{"id":"c","task":"t","graders":[{"id":"exact","value":"ok"}]}}`, 202, &q)
	run := s.wait(t, q.ID)
	if run.Status != eval.StatusSucceeded || !run.Result.Pass {
		t.Fatalf("run %s: %+v %+v", run.Status, run.Error, run.Result.Process)
	}
	b := s.call(t, "GET", "/runs/"+run.ID+"/logs", "", 200, nil)
	if strings.Contains(string(b), "s3cr3t-value") {
		t.Errorf("the secret reached the logs")
	}
}

// The budget: past SVC_TENANT_RUNS a submit is 402 and creates nothing.
func TestRunBudget(t *testing.T) {
	s := newStack(t, "sqlite", func(c *config.Config) { c.TenantRuns = 2 })
	s.harness(t, "quick", "1", "echo done\n", nil)
	submit := `{"harness":{"id":"quick","version":"1"},"case":{"id":"c","task":"t"}}`
	for range 2 {
		s.call(t, "POST", "/runs", submit, 202, nil)
	}
	b := s.call(t, "POST", "/runs", submit, 402, nil)
	if !strings.Contains(string(b), "BUDGET_EXCEEDED") || !strings.Contains(string(b), "SVC_TENANT_RUNS") {
		t.Errorf("402 body %s", b)
	}
	var list []eval.Run
	s.call(t, "GET", "/runs", "", 200, &list)
	if len(list) != 2 {
		t.Errorf("%d runs exist after a refused submit, want 2", len(list))
	}
}

// treeScript starts two grandchildren that would sleep for ever, records
// every pid, then waits.
func treeScript(pidFile string) string {
	return fmt.Sprintf(`sleep 1000 &
echo $! >> %[1]s
sh -c 'sleep 1000 & echo $! >> %[1]s; wait' &
echo $! >> %[1]s
echo $$ >> %[1]s
echo started >&2
wait
`, pidFile)
}

func readPids(t *testing.T, path string) []int {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			pids = append(pids, n)
		}
	}
	return pids
}

func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	// A zombie is dead for our purpose: its stat state is Z.
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	if i := strings.LastIndexByte(string(b), ')'); i >= 0 && i+2 < len(b) {
		return b[i+2] != 'Z'
	}
	return true
}

// Timeout and cancel both kill the whole process tree of the harness.
func TestRunTimeoutAndCancelKillTree(t *testing.T) {
	s := newStack(t, "sqlite")
	for _, tc := range []struct {
		name string
		code string
		body string
	}{
		{"timeout", eval.CodeTimeout, `{"harness":{"id":"tree-timeout","version":"1"},"case":{"id":"c","task":"t","timeoutSec":1}}`},
		{"cancel", eval.CodeCancelled, `{"harness":{"id":"tree-cancel","version":"1"},"case":{"id":"c","task":"t"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pidFile := filepath.Join(s.tmp, tc.name+".pids")
			s.harness(t, "tree-"+tc.name, "1", treeScript(pidFile), nil)
			var q eval.Run
			s.call(t, "POST", "/runs", tc.body, 202, &q)
			testwait.Until(t, time.Minute, "the harness tree to start", func() bool { return len(readPids(t, pidFile)) == 4 })
			pids := readPids(t, pidFile)
			if tc.name == "cancel" {
				if err := s.tc.CancelWorkflow(t.Context(), q.ID, ""); err != nil {
					t.Fatal(err)
				}
			}
			run := s.wait(t, q.ID)
			if run.Status != eval.StatusFailed || run.Error == nil || run.Error.Code != tc.code {
				t.Fatalf("run %s error %+v, want failed %s", run.Status, run.Error, tc.code)
			}
			saveHistory(t, s.tc, run.ID, "run_"+tc.name)
			testwait.Until(t, time.Minute, "every process of the tree to be gone", func() bool {
				for _, p := range pids {
					if alive(p) {
						return false
					}
				}
				return true
			})
		})
	}
}
