package api_test

import (
	"strings"
	"testing"

	"svc/api/apitest"
)

// FuzzPathID sends arbitrary path ids to every route of the live table that
// takes one (picked by the fuzzed byte; every parameter of the route gets
// the id), through the real handler on a real SQLite store, as the dev
// principal (an admin). No id may cause a 5xx or a panic; every error is
// the one JSON error shape; every answer is one the OpenAPI document allows.
func FuzzPathID(f *testing.F) {
	e := newEnv(f)
	routes := idRoutes(f, e)
	h := e.srv.Handler()
	for i, s := range []string{
		"r-1", "", " ", ".", "..", "a/b", "%", "%zz", "a\x00b", "\x1b[31m", "\xff\xfe", "\u202e",
		strings.Repeat("a", 512), strings.Repeat("a", 513), strings.Repeat("é", 300), "latest", "1.0.0", "dev",
	} {
		f.Add(uint8(i), s)
	}
	f.Fuzz(func(t *testing.T, which uint8, id string) {
		r := routes[int(which)%len(routes)]
		path := r.path
		for _, p := range r.params {
			path = idRoute{path: path}.with(p, id)
		}
		var body []byte
		if r.body != "" {
			body = []byte(r.body)
		}
		req, res := fuzzServe(t, h, fuzzRoute{method: r.method, path: path, hs: r.hs}, body)
		if res.Status >= 400 {
			if info := res.ErrorInfo(t); info.Code == "" || info.Message == "" || len(info.Message) > 4096 {
				t.Fatalf("%s %s: status %d with an error of an empty code or message, or one over 4 KiB: %s", r.method, path, res.Status, res.Body)
			}
		}
		apitest.ValidateResponse(t, req, res)
	})
}
