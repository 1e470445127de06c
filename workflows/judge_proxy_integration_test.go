package workflows_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"svc/internal/domain/eval"
	"svc/internal/service/models"
	"svc/internal/testing/judgetest"
	"svc/store"
)

// proxyKey is the model server's key: the code judge must never see it.
const proxyKey = "sk-proxy-loopback-NEVER-IN-A-JUDGE-5151"

// modelJudge asks its model through the proxy, with a stock client's
// variables, whether the answer is right; it also reports whether the real
// key is anywhere in its environment.
const modelJudge = `import json, os, sys, urllib.request
inp = json.load(open(sys.argv[1]))
ans = (inp.get("evidence") or {}).get("finalAnswer", "")
body = json.dumps({"model": os.environ["SVC_JUDGE_MODEL"], "messages": [{"role": "user", "content": "Is this right? " + ans}]}).encode()
req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", data=body,
    headers={"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"], "Content-Type": "application/json"})
try:
    out = json.load(urllib.request.urlopen(req, timeout=20))
except Exception as e:
    print(json.dumps({"metric": "judge", "value": 0, "pass": False, "detail": "skipped: the model call failed: " + str(e)}))
    sys.exit(0)
said = out["choices"][0]["message"]["content"].strip()
print(json.dumps([{"metric": "judge", "value": 1 if said == "yes" else 0, "pass": said == "yes", "detail": "the model said " + said},
                  {"metric": "key-in-env", "value": 1 if any("NEVER-IN-A-JUDGE" in v for v in os.environ.values()) else 0},
                  {"metric": "proxy-token", "value": 1 if os.environ["OPENAI_API_KEY"].startswith("jpt_") else 0}]))
`

// A code judge with a model binding calls its model through the control
// plane's run-scoped proxy: the model server gets the real key, the judge
// only a token that is revoked when it ends; tokens and cost are recorded
// per judge; a binding the workspace lacks is the judge's skip score.
func TestCodeJudgeCallsModelThroughProxy(t *testing.T) {
	s := newStack(t, "sqlite")
	srv := judgetest.New(t, func(p string) (int, string) {
		if strings.HasSuffix(p, "? right") {
			return http.StatusOK, "yes"
		}
		return http.StatusOK, "no"
	})
	s.harness(t, "answerer", "1.0.0", answerScript, nil)
	s.dataset(t, "qa", "even1", "odd1")
	s.call(t, "PUT", "/secrets/openai-key", `{"value":"`+proxyKey+`","allowedHosts":["127.0.0.1"]}`, 204, nil)
	s.call(t, "PUT", "/workspace/models/grader", `{"provider":"openai","baseUrl":"`+srv.BaseURL()+`","model":"gpt-test","keySecret":"openai-key","inputUsdPerMTok":1,"outputUsdPerMTok":2}`, 204, nil)
	for id, model := range map[string]string{"asker": "grader", "orphan": "nope"} {
		b, _ := json.Marshal(map[string]any{"id": id, "version": "1", "kind": "code", "language": "python", "code": modelJudge,
			"timeoutSec": 30, "model": map[string]any{"ref": model}})
		s.call(t, "POST", "/judges", string(b), 201, nil)
	}

	var q eval.Scorecard
	s.call(t, "POST", "/scorecards", `{"dataset":{"id":"qa","version":"1.0.0"},"harness":{"id":"answerer","version":"1.0.0"},"judges":[{"id":"asker"},{"id":"orphan"}]}`, 202, &q)
	sc := s.waitBatch(t, q.ID)
	if sc.Status != eval.ScorecardSucceeded {
		t.Fatalf("batch ended %s: %+v", sc.Status, sc.Error)
	}
	for key, runID := range sc.CaseRuns {
		var run eval.Run
		s.call(t, "GET", "/runs/"+runID, "", 200, &run)
		by := map[string]eval.Score{}
		for _, x := range run.Result.Scores {
			by[x.Metric] = x
		}
		right := strings.HasPrefix(key, "even")
		if got := by["judge:asker"]; got.Pass == nil || *got.Pass != right {
			t.Errorf("case %s: judge:asker = %+v, want pass %v from the model", key, got, right)
		}
		if by["judge:asker:key-in-env"].Value != 0 || by["judge:asker:proxy-token"].Value != 1 {
			t.Errorf("case %s: the judge saw the key in its environment, or no proxy token: %+v", key, run.Result.Scores)
		}
		if got := by["judge:orphan"]; !strings.HasPrefix(got.Detail, `skipped: the workspace declares no model "nope"`) {
			t.Errorf("case %s: judge:orphan = %+v, want the missing binding's skip", key, got)
		}
		b, _ := json.Marshal(run)
		if strings.Contains(string(b), proxyKey) || strings.Contains(string(b), "jpt_") {
			t.Errorf("run %s holds the key or a proxy token", runID)
		}
	}
	recv := srv.Received()
	if len(recv) != 2 {
		t.Fatalf("the model server received %d calls, want 2", len(recv))
	}
	for _, r := range recv {
		if r.Authorization != "Bearer "+proxyKey || r.Model != "gpt-test" {
			t.Errorf("the model server got Authorization %q for model %q", r.Authorization, r.Model)
		}
	}
	evs, err := s.store.ListEvents(t.Context(), store.EventFilter{Workspace: s.ws, Type: "judge.model_call"})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 {
		t.Fatalf("%d judge.model_call events, want 2", len(evs))
	}
	for _, ev := range evs {
		var d map[string]any
		_ = json.Unmarshal(ev.Data, &d)
		if d["judge"] != "asker" || d["inputTokens"] != float64(812) || d["costUsd"] == nil {
			t.Errorf("event %s", ev.Data)
		}
	}
	// Every token was revoked when its judge ended.
	if es, err := s.store.ListEntities(t.Context(), models.ProxyTokenKind, []string{s.ws}); err != nil || len(es) != 0 {
		t.Errorf("live proxy tokens after the batch: %d (%v), want none", len(es), err)
	}
}
