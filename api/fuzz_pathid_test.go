package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"svc/api"
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
		var body io.Reader
		if r.body != "" {
			body = strings.NewReader(r.body)
		}
		req := httptest.NewRequest(r.method, path, body)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		for _, hd := range r.hs {
			req.Header.Set(hd.name, hd.value)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		res := rec.Result()
		got, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode >= 500 {
			t.Fatalf("%s %s: status %d; body %s", r.method, path, res.StatusCode, got)
		}
		if res.StatusCode >= 400 {
			var b api.ErrorBody
			dec := json.NewDecoder(bytes.NewReader(got))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&b); err != nil || b.Error.Code == "" || b.Error.Message == "" {
				t.Fatalf("%s %s: status %d with a body that is not the error shape (%v): %s", r.method, path, res.StatusCode, err, got)
			}
			if len(b.Error.Message) > 4096 {
				t.Errorf("%s %s: a message of %d bytes", r.method, path, len(b.Error.Message))
			}
		}
		apitest.ValidateResponse(t, req, &apitest.Response{Status: res.StatusCode, Header: res.Header, Body: got})
	})
}
