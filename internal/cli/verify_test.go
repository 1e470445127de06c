package cli

import (
	"net/http"
	"strings"
	"testing"

	"svc/internal/client"
	"svc/internal/domain/manifest"
)

// TestVerify: 0 when every facet matches, 1 on any drift, missing or
// unverifiable facet (or none at all), 2 on errors; the table names each
// facet and, where it does not match, both digests.
func TestVerify(t *testing.T) {
	stamped := "sha256:" + strings.Repeat("ab", 32)
	current := "sha256:" + strings.Repeat("cd", 32)
	match := manifest.FacetResult{Facet: "dataset", Status: manifest.FacetMatch, Stamped: stamped, Current: stamped}
	for _, tc := range []struct {
		name    string
		status  int
		answer  any
		args    []string
		want    int
		golden  string
		wantOut string
		wantErr string
	}{
		{"verified", 200, manifest.Verification{Verified: true, IdentityVersion: 2, Facets: []manifest.FacetResult{
			match, {Facet: "harness", Status: manifest.FacetMatch, Stamped: current, Current: current}}},
			[]string{"sc_1"}, exitOK, "verify_ok.golden", "", ""},
		{"drift", 200, manifest.Verification{IdentityVersion: 2, Facets: []manifest.FacetResult{
			match,
			{Facet: "case:login-1", Status: manifest.FacetDrifted, Stamped: stamped, Current: current},
			{Facet: "judge:tone", Status: manifest.FacetMissing, Stamped: stamped, Detail: "the judge no longer resolves"},
			{Facet: "harness:model", Status: manifest.FacetUnverifiable, Current: current, Detail: "not sealed"}}},
			[]string{"sc_1"}, exitVerdict, "verify_drift.golden", "", ""},
		{"nothing sealed", 200, manifest.Verification{Facets: []manifest.FacetResult{}}, []string{"sc_1"}, exitVerdict, "", "NOT VERIFIED: scorecard sc_1", ""},
		{"json after the id", 200, manifest.Verification{Verified: true, Facets: []manifest.FacetResult{match}}, []string{"sc_1", "--json"}, exitOK, "", `{"verified":true,`, ""},
		{"unknown scorecard", 404, map[string]any{"error": map[string]string{"code": "NOT_FOUND", "message": "scorecard sc_1 not found", "requestId": "req-9"}},
			[]string{"sc_1"}, exitProblem, "", "", "svc verify: scorecard sc_1 not found (request req-9)\n"},
		{"no id", 0, nil, nil, exitProblem, "", "", "want exactly one scorecard id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			routes := map[string]http.HandlerFunc{}
			if tc.status != 0 {
				routes["POST /scorecards/sc_1/verify-manifest"] = answer(tc.status, tc.answer)
			}
			api := newFakeAPI(t, routes)
			out, errOut, code := invocation{env: map[string]string{client.EnvURL: api.srv.URL}}.run(t, "verify", RunVerify, tc.args...)
			if code != tc.want {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.want, out, errOut)
			}
			if tc.golden != "" {
				golden(t, tc.golden, out)
			}
			if !strings.HasPrefix(out, tc.wantOut) {
				t.Errorf("stdout %q, want it to start %q", out, tc.wantOut)
			}
			if !strings.Contains(errOut, tc.wantErr) {
				t.Errorf("stderr %q lacks %q", errOut, tc.wantErr)
			}
		})
	}
}
