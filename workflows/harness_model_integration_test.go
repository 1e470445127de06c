package workflows_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"svc/internal/domain/eval"
	"svc/internal/service/models"
	"svc/internal/service/runners"
	"svc/internal/service/runs"
	"svc/internal/testing/judgetest"
	"svc/internal/testing/testwait"
	"svc/store"
)

// harnessModelKey is the model server's key: no harness job may see it.
const harnessModelKey = "sk-harness-loopback-NEVER-IN-A-JOB-7373"

// modelHarness reads its proxy token from its secrets file, asks the
// bound model through the proxy, and answers with what the model said. It
// also inspects its own environment, argv and every file of its work area
// and secrets file for the real key, and says on stderr what it found.
const modelHarness = `exec /usr/bin/python3 - <<'PY'
import json, os, sys, urllib.request
KEY = "NEVER-IN-A-JOB"
tok = json.load(open(os.environ["SVC_SECRETS_FILE"]))["SVC_MODEL_TOKEN"]
case = json.load(open(os.environ["SVC_CASE_FILE"]))
body = json.dumps({"model": "anything", "messages": [{"role": "user", "content": case["task"]}]}).encode()
req = urllib.request.Request(os.environ["SVC_MODEL_BASE_URL"] + "/chat/completions", data=body,
    headers={"Authorization": "Bearer " + tok, "Content-Type": "application/json"})
out = json.load(urllib.request.urlopen(req, timeout=20))
leaks = [k for k, v in os.environ.items() if KEY in v or tok in v]
if KEY.encode() in open("/proc/self/cmdline", "rb").read() or tok.encode() in open("/proc/self/cmdline", "rb").read():
    leaks.append("argv")
paths = [os.environ["SVC_SECRETS_FILE"], os.environ["SVC_CASE_FILE"]]
for root, _, files in os.walk(os.environ["SVC_WORK_DIR"]):
    paths += [os.path.join(root, f) for f in files]
for p in paths:
    if KEY.encode() in open(p, "rb").read():
        leaks.append(p)
sys.stderr.write("leaks=%s model=%s proxy-token=%s\n" % (json.dumps(leaks), os.environ.get("SVC_MODEL"), tok.startswith("jpt_")))
print(out["choices"][0]["message"]["content"])
PY
`

// A harness that declares model {ref} calls its binding through the
// control plane's proxy with a token minted for its attempt: the model
// server gets the real key, the job only the token (in its secrets file);
// the call's tokens and cost are recorded for the run and its cost is in
// the run's usage.costUsd; the token is revoked when the job ends; and
// the key is nowhere in the job's environment, argv or files, its logs or
// its records. On a managed target, a binding without its key is 400 at
// submit, naming the harness, the binding and what to set.
func TestHarnessCallsModelThroughProxy(t *testing.T) {
	s := newStack(t, "sqlite")
	srv := judgetest.New(t, func(p string) (int, string) { return http.StatusOK, "the model says: " + p })
	s.harness(t, "caller", "1", modelHarness, map[string]any{"model": map[string]any{"ref": "agentmodel"}})
	s.harness(t, "orphan", "1", "echo never\n", map[string]any{"model": map[string]any{"ref": "nope"}})

	// No binding yet: a managed target (the deployment's local runtime)
	// refuses the submit, and nothing is created.
	var refusal struct {
		Error struct{ Message string } `json:"error"`
	}
	s.call(t, "POST", "/runs", `{"harness":{"id":"caller","version":"1"},"case":{"id":"c","task":"say hi"}}`, 400, &refusal)
	for _, want := range []string{"caller@1", `"agentmodel"`, "PUT /workspace/models/agentmodel", "self-hosted"} {
		if !strings.Contains(refusal.Error.Message, want) {
			t.Errorf("the 400 does not say %q: %s", want, refusal.Error.Message)
		}
	}

	s.call(t, "PUT", "/secrets/agent-key", `{"value":"`+harnessModelKey+`","allowedHosts":["127.0.0.1"]}`, 204, nil)
	s.call(t, "PUT", "/workspace/models/agentmodel", `{"provider":"openai","baseUrl":"`+srv.BaseURL()+`","model":"gpt-agent","keySecret":"agent-key","inputUsdPerMTok":1000,"outputUsdPerMTok":2000}`, 204, nil)
	s.call(t, "POST", "/runs", `{"harness":{"id":"orphan","version":"1"},"case":{"id":"c","task":"t"}}`, 400, &refusal)
	if !strings.Contains(refusal.Error.Message, `"nope"`) || !strings.Contains(refusal.Error.Message, "PUT /workspace/models/nope") {
		t.Errorf("the 400 for a missing binding: %s", refusal.Error.Message)
	}

	var q eval.Run
	s.call(t, "POST", "/runs", `{"harness":{"id":"caller","version":"1"},"case":{"id":"c","task":"say hi","graders":[{"id":"exact","value":"the model says: say hi"}]}}`, 202, &q)
	run := s.wait(t, q.ID)
	if run.Status != eval.StatusSucceeded || run.Result == nil || run.Result.Evidence == nil {
		t.Fatalf("run ended %s: %+v", run.Status, run.Error)
	}
	if got := run.Result.Evidence.FinalAnswer; got != "the model says: say hi" {
		t.Errorf("final answer = %q, want the model's answer through the proxy", got)
	}
	// 812 input and 64 output tokens at $1000 and $2000 per million.
	if run.Usage == nil || run.Usage.CostUSD < 0.94 || run.Usage.CostUSD > 0.95 {
		t.Errorf("usage = %+v, want costUsd 0.94 from the proxied call", run.Usage)
	}
	recv := srv.Received()
	if len(recv) != 1 || recv[0].Authorization != "Bearer "+harnessModelKey || recv[0].Model != "gpt-agent" {
		t.Fatalf("the model server received %+v, want one call with the key and the bound model", recv)
	}

	var logs runs.Logs
	s.call(t, "GET", "/runs/"+run.ID+"/logs", "", 200, &logs)
	var all strings.Builder
	for _, c := range logs.Chunks {
		all.WriteString(c.Data)
	}
	if !strings.Contains(all.String(), "leaks=[] model=agentmodel proxy-token=True") {
		t.Errorf("the job found the key or the token in its environment, argv or files, or had no token: %q", all.String())
	}
	rec, _ := json.Marshal(run)
	for what, b := range map[string][]byte{"run record": rec, "logs": []byte(all.String())} {
		if strings.Contains(string(b), harnessModelKey) || strings.Contains(string(b), "jpt_") {
			t.Errorf("the %s holds the key or a proxy token", what)
		}
	}

	calls, err := s.store.ListEvents(t.Context(), store.EventFilter{Workspace: s.ws, Type: "harness.model_call"})
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 1 {
		t.Fatalf("%d harness.model_call events, want 1", len(calls))
	}
	var d map[string]any
	_ = json.Unmarshal(calls[0].Data, &d)
	if d["runId"] != run.ID || d["harness"] != "caller@1" || d["model"] != "agentmodel" || d["inputTokens"] != float64(812) || d["costUsd"] == nil {
		t.Errorf("harness.model_call = %s", calls[0].Data)
	}
	access, err := s.store.ListEvents(t.Context(), store.EventFilter{Workspace: s.ws, Type: models.EventHarnessModelAccess})
	if err != nil || len(access) != 1 || !strings.Contains(string(access[0].Data), `"granted":true`) {
		t.Errorf("harness.model_access events = %v (%v), want one granted", access, err)
	}
	for _, ev := range append(calls, access...) {
		if strings.Contains(string(ev.Data), harnessModelKey) || strings.Contains(string(ev.Data), "jpt_") {
			t.Errorf("event %s holds the key or the token", ev.Type)
		}
	}
	// The token was revoked when the job ended.
	if es, err := s.store.ListEntities(t.Context(), models.ProxyTokenKind, []string{s.ws}); err != nil || len(es) != 0 {
		t.Errorf("live proxy tokens after the run: %d (%v), want none", len(es), err)
	}
}

// On a self-hosted runner target the model-key rule relaxes (spec §7): a
// harness whose binding cannot be resolved is admitted, and its job ships
// without a token (recorded for the run); with the binding declared, the
// runner's job carries a token in its secrets, never in its environment,
// and the token opens the proxy.
func TestHarnessModelOnSelfHostedRunner(t *testing.T) {
	s := newStack(t, "sqlite")
	srv := judgetest.New(t, func(p string) (int, string) { return http.StatusOK, "ok: " + p })
	s.harness(t, "caller", "1", "echo unused\n", map[string]any{"model": map[string]any{"ref": "agentmodel"}})
	s.call(t, "POST", "/runtimes", `{"id":"box","version":"1","kind":"runner"}`, 201, nil)
	var k struct {
		RunnerKey string `json:"runnerKey"`
	}
	s.call(t, "POST", "/runner-keys", `{"label":"box"}`, 201, &k)

	lease := func(t *testing.T, runID string) runners.Lease {
		t.Helper()
		var l runners.Lease
		testwait.UntilValue(t, time.Minute, "a job of run "+runID+" to lease", func() (string, bool) {
			l = runners.Lease{}
			_, b := rawCall(t, s, "POST", "/runner/lease", `{"waitMs":1000,"runtime":"box"}`, k.RunnerKey)
			_ = json.Unmarshal(b, &l)
			return l.JobID, l.Job.RunID == runID
		})
		return l
	}

	// No binding: admitted, and the job ships without a token.
	var q eval.Run
	s.call(t, "POST", "/runs", `{"harness":{"id":"caller","version":"1"},"case":{"id":"c","task":"t"},"runtime":"box"}`, 202, &q)
	l := lease(t, q.ID)
	if _, ok := l.Job.Secrets[models.SecretModelToken]; ok || l.Job.Env[models.EnvHarnessModelBaseURL] != "" {
		t.Errorf("a job without a resolvable binding shipped model access: env %v, secrets %v", l.Job.Env, keys(l.Job.Secrets))
	}
	ev := accessEvent(t, s, q.ID)
	if ev["granted"] != false || ev["selfHosted"] != true || !strings.Contains(fmt.Sprint(ev["reason"]), "PUT /workspace/models/agentmodel") {
		t.Errorf("harness.model_access = %v, want not granted on a self-hosted target, saying why", ev)
	}
	complete(t, s, l, k.RunnerKey)

	// With the binding: the token rides in the secrets, and opens the proxy.
	s.call(t, "PUT", "/secrets/agent-key", `{"value":"`+harnessModelKey+`","allowedHosts":["127.0.0.1"]}`, 204, nil)
	s.call(t, "PUT", "/workspace/models/agentmodel", `{"provider":"openai","baseUrl":"`+srv.BaseURL()+`","model":"gpt-agent","keySecret":"agent-key"}`, 204, nil)
	s.call(t, "POST", "/runs", `{"harness":{"id":"caller","version":"1"},"case":{"id":"c","task":"t"},"runtime":"box"}`, 202, &q)
	l = lease(t, q.ID)
	tok := l.Job.Secrets[models.SecretModelToken]
	if !strings.HasPrefix(tok, "jpt_") || !strings.HasSuffix(l.Job.Env[models.EnvHarnessModelBaseURL], "/model-proxy/v1") || l.Job.Env[models.EnvHarnessModel] != "agentmodel" {
		t.Fatalf("the runner's job: env %v, secrets %v; want the proxy's address and a token", l.Job.Env, keys(l.Job.Secrets))
	}
	lj, _ := json.Marshal(l.Job)
	if strings.Contains(string(lj), harnessModelKey) {
		t.Error("the runner's job holds the key")
	}
	for _, v := range l.Job.Env {
		if strings.Contains(v, tok) {
			t.Error("the token is in the job's environment")
		}
	}
	var answer struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	st, b := rawCall(t, s, "POST", "/model-proxy/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}]}`, tok)
	if st != http.StatusOK || json.Unmarshal(b, &answer) != nil {
		t.Fatalf("the proxy with the runner job's token: %d %s", st, b)
	}
	if len(answer.Choices) != 1 || answer.Choices[0].Message.Content != "ok: hi" {
		t.Errorf("the proxy answered %+v", answer)
	}
	// When the job ends, its token no longer opens the proxy.
	complete(t, s, l, k.RunnerKey)
	s.wait(t, q.ID)
	if st, b := rawCall(t, s, "POST", "/model-proxy/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}]}`, tok); st != http.StatusUnauthorized {
		t.Errorf("the token after the job ended: %d %s, want 401", st, b)
	}
}

// complete posts a leased job's result (exit 0) as its runner would.
func complete(t *testing.T, s *stack, l runners.Lease, key string) {
	t.Helper()
	b, _ := json.Marshal(runners.Completion{LeaseID: l.LeaseID, Result: runners.Result{ExitCode: 0}})
	if st, body := rawCall(t, s, "POST", "/runner/jobs/"+l.JobID+"/result", string(b), key); st >= 300 {
		t.Fatalf("posting the result: %d %s", st, body)
	}
}

// rawCall sends a request with bearer token key and returns its status
// and body, whatever the status.
func rawCall(t *testing.T, s *stack, method, path, body, key string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, s.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

// accessEvent is the data of the harness.model_access event of run id.
func accessEvent(t *testing.T, s *stack, runID string) map[string]any {
	t.Helper()
	evs, err := s.store.ListEvents(t.Context(), store.EventFilter{Workspace: s.ws, Type: models.EventHarnessModelAccess})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		var d map[string]any
		_ = json.Unmarshal(ev.Data, &d)
		if d["runId"] == runID {
			return d
		}
	}
	t.Fatalf("no harness.model_access event for run %s", runID)
	return nil
}

// keys lists a map's keys, not its values.
func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A batch seals its harness's model closure (the binding's name@version):
// a managed batch whose binding cannot be resolved is 400 at submit;
// verify-manifest matches while the binding stands and reports the
// harness:model facet drifted once it is replaced.
func TestHarnessModelSealedInManifest(t *testing.T) {
	s := newStack(t, "sqlite")
	srv := judgetest.New(t, func(p string) (int, string) { return http.StatusOK, "right" })
	s.harness(t, "caller", "1", modelHarness, map[string]any{"model": map[string]any{"ref": "agentmodel"}})
	s.dataset(t, "qa", "c1")
	const submit = `{"dataset":{"id":"qa","version":"1.0.0"},"harness":{"id":"caller","version":"1"}}`
	s.call(t, "POST", "/scorecards", submit, 400, nil)

	s.call(t, "PUT", "/secrets/agent-key", `{"value":"`+harnessModelKey+`","allowedHosts":["127.0.0.1"]}`, 204, nil)
	put := func(model string) {
		s.call(t, "PUT", "/workspace/models/agentmodel", `{"provider":"openai","baseUrl":"`+srv.BaseURL()+`","model":"`+model+`","keySecret":"agent-key"}`, 204, nil)
	}
	put("gpt-agent")
	var q eval.Scorecard
	s.call(t, "POST", "/scorecards", submit, 202, &q)
	sc := s.waitBatch(t, q.ID)
	if sc.Status != eval.ScorecardSucceeded {
		t.Fatalf("batch ended %s: %+v", sc.Status, sc.Error)
	}
	facet := func() map[string]any {
		var v struct {
			Facets []map[string]any `json:"facets"`
		}
		s.call(t, "POST", "/scorecards/"+q.ID+"/verify-manifest", "", 200, &v)
		for _, f := range v.Facets {
			if f["facet"] == "harness:model" {
				return f
			}
		}
		t.Fatalf("no harness:model facet in %+v", v.Facets)
		return nil
	}
	if f := facet(); f["status"] != "match" {
		t.Errorf("harness:model = %v, want match", f)
	}
	put("gpt-agent-2")
	if f := facet(); f["status"] != "drifted" || !strings.Contains(fmt.Sprint(f["detail"]), `"agentmodel" resolves to agentmodel@`) {
		t.Errorf("harness:model after replacing the binding = %v, want drifted", f)
	}
}
