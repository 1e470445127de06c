package manifest

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/internal/domain/registry"
)

func TestJudgeClosure(t *testing.T) {
	r := Resolver{
		Model: func(name string) string {
			if name == "grader" {
				return "grader@0123456789abcdef"
			}
			return ""
		},
		Rubric: func(ref registry.Ref) string {
			if ref.ID == "tone" {
				return "tone@1.2.0"
			}
			return ""
		},
		Agent: func(ref registry.Ref) string {
			if ref.ID == "critic" {
				return "critic@3.0.0"
			}
			return ""
		},
	}
	tests := []struct {
		name, spec string
		r          Resolver
		want       map[string]string
	}{
		{"code judge without a model",
			`{"kind":"code","id":"j","version":"1","language":"python","code":"print(1)"}`, r,
			map[string]string{"model": "none"}},
		{"code judge with a declared model and a runtime",
			`{"kind":"code","id":"j","version":"1","language":"python","code":"print(1)","model":{"ref":"grader"},"runtime":"local-rt"}`, r,
			map[string]string{"model": "grader@0123456789abcdef", "runtime": "local-rt"}},
		{"code judge with an undeclared model",
			`{"kind":"code","id":"j","version":"1","language":"python","code":"print(1)","model":{"ref":"other"}}`, r,
			map[string]string{"model": "unresolved"}},
		{"model judge with a rubric reference",
			`{"kind":"model","id":"j","version":"1","model":"grader","rubric":{"id":"tone","version":"latest"}}`, r,
			map[string]string{"model": "grader@0123456789abcdef", "rubric": "tone@1.2.0"}},
		{"model judge with an inline rubric and no resolver",
			`{"kind":"model","id":"j","version":"1","model":"grader","rubric":"Is it right?"}`, Resolver{},
			map[string]string{"model": "unresolved"}},
		{"model judge with an unknown rubric",
			`{"kind":"model","id":"j","version":"1","model":"grader","rubric":{"id":"gone","version":"1.0.0"}}`, r,
			map[string]string{"model": "grader@0123456789abcdef", "rubric": "unresolved"}},
		{"harness judge",
			`{"kind":"harness","id":"j","version":"1","harness":{"id":"critic","version":"latest"}}`, r,
			map[string]string{"agent": "critic@3.0.0"}},
		{"harness judge whose agent is gone",
			`{"kind":"harness","id":"j","version":"1","harness":{"id":"gone","version":"1.0.0"}}`, r,
			map[string]string{"agent": "unresolved"}},
	}
	for _, tt := range tests {
		spec, err := registry.Parse(registry.Judge, []byte(tt.spec), false)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if diff := cmp.Diff(tt.want, JudgeClosure(spec.Judge(), tt.r)); diff != "" {
			t.Errorf("%s: closure (-want +got):\n%s", tt.name, diff)
		}
	}
}

// A seal of a version-2 manifest is compared with the closure computed
// now: a model binding replaced since the seal is drift, named.
func TestVerifyJudgeClosureDrift(t *testing.T) {
	spec, err := registry.Parse(registry.Judge, []byte(judgeJSON), false)
	if err != nil {
		t.Fatal(err)
	}
	in := fixture(t)
	in.Judges = []Judge{{Spec: spec, Closure: JudgeClosure(spec.Judge(), Resolver{Model: func(string) string { return "default@aaaa" }})}}
	m, err := Seal(in, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	in.Judges = []Judge{{Spec: spec, Closure: JudgeClosure(spec.Judge(), Resolver{Model: func(string) string { return "default@bbbb" }})}}
	for _, f := range Verify(m, in).Facets {
		if f.Facet == "judge:helpful" && (f.Status != FacetDrifted || f.Detail != "closure model: default@aaaa -> default@bbbb") {
			t.Errorf("judge facet = %s %q, want drifted naming the model binding", f.Status, f.Detail)
		}
	}
}
