package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"svc/internal/domain/registry"
	"svc/internal/platform/config"
	"svc/internal/testing/judgetest"
	"svc/store"
)

// tryKey is the model server's key: it must reach the server's
// Authorization header and no answer.
const tryKey = "sk-try-loopback-NEVER-ANSWERED-4242"

const tryModelJudge = `{"kind":"model","id":"quality","version":"1.0.0","model":"grader","rubric":"Is the answer right?",
 "criteria":[{"id":"correct","description":"the sum is right"}],"passThreshold":0.5}`

const tryEvidence = `"evidence":{"source":"B","prompt":"What is 17*23?","trace":[{"kind":"message","role":"assistant","content":"391"}]}`

// registerLegacyJudge stores a legacy judge spec in ws as an existing one
// is stored: legacy kinds cannot be registered through the API.
func (e *testEnv) registerLegacyJudge(t *testing.T, ws, raw string) {
	t.Helper()
	spec, err := registry.Parse(registry.Judge, []byte(raw), false)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.store.RegisterVersion(t.Context(), store.EntityVersion{Kind: string(registry.Judge), Owner: ws, ID: spec.ID(),
		Version: spec.Version(), Digest: spec.Digest(), Spec: spec.Canonical(), CreatedAt: time.Now().UTC()}, "", nil); err != nil {
		t.Fatal(err)
	}
}

func init() {
	setup := func(t *testing.T, e *testEnv, a tenant) map[string]string {
		e.registerLegacyJudge(t, a.ws, tryModelJudge)
		return map[string]string{"id": "quality"}
	}
	snap := func(t *testing.T, e *testEnv, a tenant, _ map[string]string) any {
		res := e.do(t, http.MethodGet, "/judges/quality/versions/1.0.0", "", bearer(a.key))
		want(t, res, http.StatusOK, "GET the judge")
		return string(res.Body)
	}
	registerCrossTenant("POST /judges/:id/try", crossTenantFixture{Setup: setup, Snapshot: snap, Body: `{` + tryEvidence + `}`})
}

type tryAnswer struct {
	Judge, Kind, Source, Model string
	Skipped                    bool
	Scores                     []struct {
		GraderID string
		Metric   string
		Value    float64
		Pass     *bool
		Detail   string
	}
	Usage *struct{ InputTokens, OutputTokens int64 }
}

// A model judge tried inline calls the workspace's binding once, with the
// prompt the preview shows, and answers its completed scores; the key goes
// to the server and into no answer.
func TestJudgeTryModelInline(t *testing.T) {
	e := newEnv(t, withConfig(func(c *config.Config) { c.WebhookAllow = "127.0.0.1" }))
	a := e.tenant(t, "try")
	srv := judgetest.New(t, func(p string) (int, string) {
		return http.StatusOK, `{"score": 1, "pass": true, "reason": "391 is right", "criteria": {"correct": {"score": 1}}}`
	})
	e.putSecret(t, a.key, "openai-key", tryKey, []string{"127.0.0.1"})
	want(t, e.do(t, http.MethodPut, "/workspace/models/grader", `{"provider":"openai","baseUrl":"`+srv.BaseURL()+`","model":"gpt-test","keySecret":"openai-key"}`, bearer(a.key)),
		http.StatusNoContent, "PUT /workspace/models/grader")

	res := e.do(t, http.MethodPost, "/judges/try", `{"spec":`+tryModelJudge+`,`+tryEvidence+`}`, bearer(a.key))
	want(t, res, http.StatusOK, "POST /judges/try")
	if strings.Contains(string(res.Body), tryKey) {
		t.Fatalf("the answer holds the model key: %s", res.Body)
	}
	var got tryAnswer
	res.JSON(t, &got)
	if got.Skipped || got.Model != "grader" || len(got.Scores) != 2 || got.Usage == nil {
		t.Fatalf("answer = %s, want two scores, not skipped, with usage", res.Body)
	}
	byMetric := map[string]float64{}
	for _, s := range got.Scores {
		byMetric[s.Metric] = s.Value
	}
	if byMetric["judge:quality"] != 1 || byMetric["judge:quality:correct"] != 1 {
		t.Errorf("scores = %+v, want judge:quality 1 and judge:quality:correct 1", got.Scores)
	}
	recv := srv.Received()
	if len(recv) != 1 || recv[0].Authorization != "Bearer "+tryKey || recv[0].Model != "gpt-test" {
		t.Fatalf("the server received %d calls (%+v), want one with the key", len(recv), recv)
	}

	// The preview renders exactly what the try sent.
	res = e.do(t, http.MethodPost, "/judges/preview", `{"spec":`+tryModelJudge+`,`+tryEvidence+`}`, bearer(a.key))
	want(t, res, http.StatusOK, "POST /judges/preview")
	var pv map[string]any
	res.JSON(t, &pv)
	if pv["prompt"] != recv[0].Prompt {
		t.Errorf("the preview's prompt differs from the prompt sent:\npreview %q\nsent    %q", pv["prompt"], recv[0].Prompt)
	}

	// The registered judge by its path, at latest.
	e.registerLegacyJudge(t, a.ws, tryModelJudge)
	res = e.do(t, http.MethodPost, "/judges/quality/try", `{`+tryEvidence+`}`, bearer(a.key))
	want(t, res, http.StatusOK, "POST /judges/quality/try")
	res.JSON(t, &got)
	if got.Judge != "quality@1.0.0" || got.Skipped {
		t.Errorf("answer = %s, want quality@1.0.0 judged", res.Body)
	}
}

// Judge problems are skip scores, never HTTP errors: a model server that
// fails, an undeclared model, a key not stored.
func TestJudgeTryModelSkips(t *testing.T) {
	e := newEnv(t, withConfig(func(c *config.Config) { c.WebhookAllow = "127.0.0.1" }))
	a := e.tenant(t, "try")
	srv := judgetest.New(t, func(string) (int, string) { return http.StatusTooManyRequests, "" })
	try := func(name, spec, says string) {
		t.Helper()
		res := e.do(t, http.MethodPost, "/judges/try", `{"spec":`+spec+`,`+tryEvidence+`}`, bearer(a.key))
		want(t, res, http.StatusOK, name)
		var got tryAnswer
		res.JSON(t, &got)
		if !got.Skipped || len(got.Scores) != 1 || !strings.HasPrefix(got.Scores[0].Detail, "skipped: ") || !strings.Contains(got.Scores[0].Detail, says) {
			t.Errorf("%s: answer %s, want one skip score saying %q", name, res.Body, says)
		}
		if strings.Contains(string(res.Body), tryKey) {
			t.Errorf("%s: the answer holds the key", name)
		}
	}
	try("no binding", tryModelJudge, "declares no model")
	want(t, e.do(t, http.MethodPut, "/workspace/models/grader", `{"provider":"openai","baseUrl":"`+srv.BaseURL()+`","model":"gpt-test","keySecret":"openai-key"}`, bearer(a.key)),
		http.StatusNoContent, "PUT /workspace/models/grader")
	try("no key", tryModelJudge, "not in the workspace secret store")
	e.putSecret(t, a.key, "openai-key", tryKey, []string{"127.0.0.1"})
	try("server failing", tryModelJudge, "answered HTTP 429")
	try("harness judge", `{"kind":"harness","id":"critic","version":"1.0.0","harness":{"id":"h","version":"1.0.0"}}`, "the judge's harness h@1.0.0 is not registered")
	try("rubric gone", strings.Replace(tryModelJudge, `"rubric":"Is the answer right?"`, `"rubric":{"id":"gone","version":"1.0.0"}`, 1), "rubric gone@1.0.0")
}

func TestJudgeTryErrors(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "try")
	code := `{"kind":"code","id":"cj","version":"1.0.0","language":"python","code":"print(1)"}`
	for _, c := range []struct {
		name, path, body string
		status           int
		says             string
	}{
		{"no judge", "/judges/try", `{` + tryEvidence + `}`, 400, "spec or judge"},
		{"version on /judges/try", "/judges/try", `{"version":"1",` + tryEvidence + `}`, 400, "version"},
		{"spec on /judges/:id/try", "/judges/quality/try", `{"spec":` + code + `,` + tryEvidence + `}`, 400, "in the path"},
		{"source C without harness", "/judges/try", `{"spec":` + code + `,"evidence":{"source":"C","case":{"id":"c"}}}`, 400, "evidence.harness"},
		{"code judge over a pasted trace without runtime", "/judges/try", `{"spec":` + code + `,` + tryEvidence + `}`, 400, "placement"},
		{"code judge on an unknown runtime", "/judges/try", `{"spec":` + strings.Replace(code, `"code":`, `"runtime":"nope","code":`, 1) + `,` + tryEvidence + `}`, 404, "POST /runtimes"},
		{"rubric on a code judge", "/judges/try", `{"spec":` + code + `,"rubric":"x",` + tryEvidence + `}`, 400, "no rubric"},
		{"unknown judge", "/judges/nope/try", `{` + tryEvidence + `}`, 404, ""},
		{"unknown run", "/judges/try", `{"spec":` + code + `,"evidence":{"source":"A","runId":"run-nope"}}`, 404, ""},
	} {
		res := e.do(t, http.MethodPost, c.path, c.body, bearer(a.key))
		want(t, res, c.status, c.name)
		if !strings.Contains(string(res.Body), c.says) {
			t.Errorf("%s: body %s does not say %q", c.name, res.Body, c.says)
		}
	}
}
