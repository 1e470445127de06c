package api_test

import (
	"net/http"
	"strings"
	"testing"
)

const previewJudge = `{"kind":"model","id":"helpful","version":"1.0.0","model":"grader","rubric":"Is the answer right?",
 "criteria":[{"id":"correct","description":"the sum is right"}],"requires":[{"kind":"final_answer"},{"kind":"tool_call","name":"search"}]}`

func TestJudgePreviewSourceB(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "preview")
	body := `{"spec":` + previewJudge + `,"evidence":{"source":"B","prompt":"What is 17*23?","trace":[{"kind":"message","role":"assistant","content":"391"}]}}`
	res := e.do(t, http.MethodPost, "/judges/preview", body, bearer(a.key))
	want(t, res, http.StatusOK, "POST /judges/preview")
	var got struct {
		Judge, Kind  string
		Source       string
		Effective    map[string]any
		Prompt       string
		Template     string
		Placeholders []struct {
			Name      string
			Present   bool
			Chars     int
			Truncated bool
			Custom    bool
		}
		Warnings []string
		Coverage struct {
			Satisfied, Missing []map[string]any
			Warnings           []string
		}
		EvidenceStatus struct{ Trace, Snapshot string }
		RunID          string
	}
	res.JSON(t, &got)
	if got.EvidenceStatus.Trace != "complete" || got.EvidenceStatus.Snapshot != "complete" {
		t.Errorf("evidenceStatus of a pasted trace = %+v, want complete", got.EvidenceStatus)
	}
	for _, s := range []string{"What is 17*23?", "Is the answer right?", "- correct (weight 1): the sum is right", `"content":"391"`, "Score every criterion: correct."} {
		if !strings.Contains(got.Prompt, s) {
			t.Errorf("prompt lacks %q:\n%s", s, got.Prompt)
		}
	}
	if got.Template != "default" || len(got.Placeholders) != 8 {
		t.Errorf("template %q with %d placeholders, want default with 8", got.Template, len(got.Placeholders))
	}
	if len(got.Coverage.Satisfied) != 1 || len(got.Coverage.Missing) != 1 || got.Coverage.Missing[0]["name"] != "search" {
		t.Errorf("coverage = %+v, want final_answer satisfied and tool_call search missing", got.Coverage)
	}

	// A custom template: an unbound slot stays verbatim and warns.
	custom := strings.Replace(previewJudge, `"rubric":`, `"promptTemplate":"Q: {task}\nA: {final_answer}\nDiff: {diff}\n{verdict_instruction}","rubric":`, 1)
	res = e.do(t, http.MethodPost, "/judges/preview", `{"spec":`+custom+`,"evidence":{"source":"B","prompt":"p","trace":[]}}`, bearer(a.key))
	want(t, res, http.StatusOK, "custom template")
	res.JSON(t, &got)
	if !strings.Contains(got.Prompt, "Diff: {diff}\n") || len(got.Warnings) != 1 || !strings.Contains(got.Warnings[0], "{diff}") {
		t.Errorf("custom template: prompt %q warnings %q, want {diff} verbatim and one warning", got.Prompt, got.Warnings)
	}
}

func TestJudgePreviewErrors(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "preview")
	spec := `"spec":` + previewJudge
	for _, c := range []struct {
		name, body string
		status     int
		says       string
	}{
		{"no judge", `{"evidence":{"source":"B","trace":[]}}`, 400, "spec or judge"},
		{"both", `{` + spec + `,"judge":{"id":"x","version":"1"},"evidence":{"source":"B","trace":[]}}`, 400, "not both"},
		{"source C without harness", `{` + spec + `,"evidence":{"source":"C","case":{"id":"c","task":"t"}}}`, 400, "evidence.harness"},
		{"source C without case", `{` + spec + `,"evidence":{"source":"C","harness":{"id":"h","version":"1"}}}`, 400, "evidence.case"},
		{"source C with runId", `{` + spec + `,"evidence":{"source":"C","runId":"r","harness":{"id":"h"},"case":{"id":"c"}}}`, 400, "source A"},
		{"source C waiting too long", `{` + spec + `,"evidence":{"source":"C","harness":{"id":"h"},"case":{"id":"c"},"waitSec":3600}}`, 400, "waitSec"},
		{"source C harness unknown", `{` + spec + `,"evidence":{"source":"C","harness":{"id":"nope","version":"1.0.0"},"case":{"id":"c","task":"t"}}}`, 404, ""},
		{"C fields on B", `{` + spec + `,"evidence":{"source":"B","trace":[],"harness":{"id":"h"}}}`, 400, "belong to source C"},
		{"no source", `{` + spec + `,"evidence":{}}`, 400, "evidence.source"},
		{"A without run", `{` + spec + `,"evidence":{"source":"A"}}`, 400, "runId"},
		{"B without trace", `{` + spec + `,"evidence":{"source":"B","prompt":"p"}}`, 400, "trace"},
		{"bad event", `{` + spec + `,"evidence":{"source":"B","trace":[{"kind":""}]}}`, 400, "trace[0]"},
		{"bad spec", `{"spec":{"kind":"model","id":"x"},"evidence":{"source":"B","trace":[]}}`, 400, "version"},
		{"unknown run", `{` + spec + `,"evidence":{"source":"A","runId":"run-nope"}}`, 404, ""},
		{"unknown judge", `{"judge":{"id":"nope","version":"latest"},"evidence":{"source":"B","trace":[]}}`, 404, ""},
		{"unknown rubric", `{` + spec + `,"rubric":{"id":"nope","version":"1.0.0"},"evidence":{"source":"B","trace":[]}}`, 404, ""},
	} {
		res := e.do(t, http.MethodPost, "/judges/preview", c.body, bearer(a.key))
		want(t, res, c.status, c.name)
		if !strings.Contains(string(res.Body), c.says) {
			t.Errorf("%s: body %s does not say %q", c.name, res.Body, c.says)
		}
	}
}
