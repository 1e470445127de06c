package api_test

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// FuzzRegistryBodies posts arbitrary bytes to every registry route that
// takes a JSON body, through the real handler on a real SQLite store, as
// the dev principal (an admin), so the body always reaches the handler. No
// input may cause a 5xx or a panic, and every answer must be one the
// OpenAPI document allows. POST /runtimes/probe is left out: a fuzzed
// runtime names arbitrary addresses, and a probe would dial them.
func FuzzRegistryBodies(f *testing.F) {
	e := newEnv(f)
	for _, s := range []struct{ path, spec string }{
		{"/datasets", datasetSpec("fz", "1.0.0")},
		{"/judges", judgeSpec("fz", "1.0.0")},
		{"/harness-templates", templateSpec},
		{"/harnesses", harnessSpec("fz", "1.0.0", "img:1")},
		{"/teams", `{"id":"fz"}`},
	} {
		if res := e.do(f, http.MethodPost, s.path, s.spec); res.Status != http.StatusCreated {
			f.Fatalf("seeding %s: %d %s", s.path, res.Status, res.Body)
		}
	}
	routes := []fuzzRoute{
		{method: http.MethodPost, path: "/datasets"},
		{method: http.MethodPost, path: "/datasets/validate"},
		{method: http.MethodPost, path: "/judges"},
		{method: http.MethodPost, path: "/judges/validate"},
		{method: http.MethodPost, path: "/rubrics"},
		{method: http.MethodPost, path: "/rubrics/validate"},
		{method: http.MethodPost, path: "/runtimes"},
		{method: http.MethodPost, path: "/runtimes/validate"},
		{method: http.MethodPost, path: "/harnesses"},
		{method: http.MethodPost, path: "/harness-templates"},
		{method: http.MethodPut, path: "/datasets/fz/versions/1.0.0/tags"},
		{method: http.MethodPut, path: "/harnesses/fz/versions/1.0.0/tags"},
		{method: http.MethodPost, path: "/datasets/fz/team"},
		{method: http.MethodPost, path: "/harnesses/fz/team"},
		{method: http.MethodPut, path: "/secrets/fz"},
		{method: http.MethodPost, path: "/datasets", hs: []header{{"x-svc-origin", `{"via":"ci"}`}}},
	}
	specs, _ := filepath.Glob("../internal/domain/registry/testdata/specs/*.json")
	seeds := []string{
		`[" a ","a",""]`, `{"teamId":"fz"}`, `{"teamId":null}`, `{"value":"v"}`,
		instanceSpec("fz-inst", "1.0.0", "img:2"), datasetSpec("fz", "1.0.0", "z"),
		``, `null`, `[]`, `{}`, `{"id":null}`, `{"id":"x","version":"1","cases":{}}`,
		`{"id":"\ud800","version":"1"}`, "{\"id\":\"\xff\"}", `{} {}`, `{"id":"a"`, `{"id":"a","version":"1e400"}`,
	}
	for _, p := range specs {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, string(b))
	}
	for i, s := range seeds {
		f.Add(uint8(i%len(routes)), []byte(s))
		f.Add(uint8((i+3)%len(routes)), []byte(s))
	}
	fuzzBodies(f, e, routes)
}
