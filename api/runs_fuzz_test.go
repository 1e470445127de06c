package api_test

import (
	"context"
	"net/http"
	"testing"

	"svc/api"
)

// acceptStarter starts nothing: the fuzzer checks decoding and validation
// of the run routes, so a valid submit must reach the store and answer 202
// rather than the 503 of a missing orchestrator. The workflow path is
// tested with Temporal's real server in package workflows.
type acceptStarter struct{}

func (acceptStarter) StartRun(context.Context, string, string) error { return nil }

func FuzzRunBodies(f *testing.F) {
	e := newEnv(f, withServerOptions(func(o *api.Options) { o.Starter = acceptStarter{} }))
	if res := e.do(f, http.MethodPost, "/harnesses", `{"id":"fz","version":"1.0.0","kind":"process","command":["true"]}`); res.Status != http.StatusCreated {
		f.Fatalf("seeding the harness: %d %s", res.Status, res.Body)
	}
	routes := []fuzzRoute{
		{method: http.MethodPost, path: "/runs"},
		{method: http.MethodPost, path: "/notifications/read"},
	}
	seeds := []string{
		`{"harness":{"id":"fz","version":"latest"},"case":{"id":"c","task":"t"}}`,
		`{"harness":{"id":"fz","version":"1.0.0"},"case":{"id":"c","task":{"prompt":"p"},"graders":[{"id":"exact","value":"4"},{"id":"r","kind":"regex","pattern":"^a"}],"timeoutSec":5}}`,
		`{"harness":{"id":"fz","version":"1.0.0"},"case":{"id":"c","task":"t","env":{"kind":"repo","source":{"files":{"a.txt":"x"}}}},"webhookUrl":"https://example.com/h"}`,
		`{"harness":{"id":"fz","version":"1.0.0"},"case":{"id":"c","task":"t"},"runtime":"nope"}`,
		`{"ids":["a","b"]}`, `{"all":true}`, `{"ids":[],"all":false}`,
		``, `null`, `[]`, `{}`, `{"harness":null}`, `{"case":{"id":"\ud800"}}`, "{\"case\":{\"id\":\"\xff\"}}", `{} {}`,
	}
	for i, s := range seeds {
		f.Add(uint8(i%len(routes)), []byte(s))
		f.Add(uint8((i+1)%len(routes)), []byte(s))
	}
	fuzzBodies(f, e, routes)
}
