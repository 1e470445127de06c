package api_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"svc/internal/platform/config"
)

// A custom evidence slot of a judge's template is bound from the case's
// text artifact of that name, fetched through the address guard; the
// screenshot input is reported beside the placeholders.
func TestJudgePreviewBindsArtifacts(t *testing.T) {
	e := newEnv(t, withConfig(func(c *config.Config) { c.WebhookAllow = "127.0.0.1" }))
	a := e.tenant(t, "evidence")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("build passed: 12 tests"))
	}))
	t.Cleanup(srv.Close)
	spec := `{"kind":"model","id":"q","version":"1.0.0","model":"grader","rubric":"r","inputs":["trace","screenshot"],
		"promptTemplate":"Log: {build_log}\nOther: {other}\n{verdict_instruction}"}`
	trace := `[{"kind":"artifact","name":"build.log","role":"build_log","ref":"` + srv.URL + `/log","mediaType":"text/plain"}]`
	res := e.do(t, http.MethodPost, "/judges/preview", `{"spec":`+spec+`,"evidence":{"source":"B","prompt":"p","trace":`+trace+`}}`, bearer(a.key))
	want(t, res, http.StatusOK, "preview")
	var got struct {
		Judge, Kind, Source, Template string
		Effective, Coverage           json.RawMessage
		EvidenceStatus                json.RawMessage
		Prompt                        string
		Warnings                      []string
		Placeholders                  []struct {
			Name               string
			Present, Truncated bool
			Custom, Attachment bool
			Chars              int
		}
	}
	res.JSON(t, &got)
	if !strings.HasPrefix(got.Prompt, "Log: build passed: 12 tests\nOther: {other}\n") {
		t.Errorf("prompt = %q, want {build_log} bound from the artifact and {other} verbatim", got.Prompt)
	}
	warnings := strings.Join(got.Warnings, "\n")
	if !strings.Contains(warnings, "{other}") || !strings.Contains(warnings, "screenshot") {
		t.Errorf("warnings = %q, want the unbound {other} and the missing screenshot", warnings)
	}
	var shot bool
	for _, p := range got.Placeholders {
		shot = shot || (p.Name == "screenshot" && p.Attachment && !p.Present)
	}
	if !shot {
		t.Errorf("placeholders = %+v, want the screenshot attachment, absent", got.Placeholders)
	}
}
