package api_test

import (
	"net/http"
	"testing"

	"svc/api"
)

// FuzzJudgeBodies: no body of POST /judges/preview or /judges/try (all
// three evidence sources, every judge kind) causes a 5xx.
func FuzzJudgeBodies(f *testing.F) {
	e := newEnv(f, withServerOptions(func(o *api.Options) { o.Starter = acceptStarter{} }))
	if res := e.do(f, http.MethodPost, "/harnesses", `{"id":"fz","version":"1.0.0","kind":"process","command":["true"]}`); res.Status != http.StatusCreated {
		f.Fatalf("seeding the harness: %d %s", res.Status, res.Body)
	}
	if res := e.do(f, http.MethodPost, "/judges", `{"id":"cj","version":"1.0.0","kind":"code","language":"python","code":"print(1)"}`); res.Status != http.StatusCreated {
		f.Fatalf("seeding the judge: %d %s", res.Status, res.Body)
	}
	routes := []fuzzRoute{
		{method: http.MethodPost, path: "/judges/preview"},
		{method: http.MethodPost, path: "/judges/try"},
		{method: http.MethodPost, path: "/judges/cj/try"},
	}
	model := `{"kind":"model","id":"q","version":"1.0.0","model":"grader","rubric":"r","inputs":["screenshot"],"promptTemplate":"{notes_md} {verdict_instruction}"}`
	harness := `{"kind":"harness","id":"h","version":"1.0.0","harness":{"id":"fz","version":"1.0.0"},"rubric":{"id":"nope","version":"1"}}`
	seeds := []string{
		`{"spec":` + model + `,"evidence":{"source":"B","prompt":"p","trace":[{"kind":"artifact","name":"notes.md","ref":"http://127.0.0.1:1/x"}]}}`,
		`{"spec":` + harness + `,"evidence":{"source":"B","prompt":"p","trace":[]}}`,
		`{"spec":` + model + `,"evidence":{"source":"C","harness":{"id":"fz","version":"1.0.0"},"case":{"id":"c","task":"t"},"waitSec":1}}`,
		`{"spec":` + model + `,"evidence":{"source":"C","harness":{"id":"fz"},"case":{"id":"c"},"runtime":"nope","waitSec":1}}`,
		`{"judge":{"id":"cj","version":"latest"},"evidence":{"source":"A","runId":"run_x"}}`,
		`{"version":"1.0.0","evidence":{"source":"C","harness":{"id":"nope"},"case":{"id":"c"}}}`,
		`{"evidence":{"source":"C","waitSec":-1}}`, `{"evidence":{"source":"D"}}`, `{"spec":null}`,
		``, `null`, `[]`, `{}`, `{"evidence":{"source":"\ud800"}}`, "{\"evidence\":{\"source\":\"\xff\"}}", `{} {}`,
	}
	for i, s := range seeds {
		f.Add(uint8(i%len(routes)), []byte(s))
		f.Add(uint8((i+1)%len(routes)), []byte(s))
	}
	fuzzBodies(f, e, routes)
}
