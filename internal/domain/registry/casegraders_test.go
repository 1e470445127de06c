package registry

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCaseGraders: the lenient read keeps every case and grader at its
// position, whatever else of the document Parse would refuse.
func TestCaseGraders(t *testing.T) {
	for _, tc := range []struct {
		name string
		doc  string
		want []EvalCase
	}{
		{"not JSON", `{"cases":[`, nil},
		{"no cases", `{"id":"d","version":"1"}`, []EvalCase{}},
		{"cases not a list", `{"cases":{"a":1}}`, nil},
		{"positions kept", `{"id":"d","unknown":true,"cases":[
			"not a case",
			{"id":7,"graders":[{"id":"a"}]},
			{"id":"c3","task":42,"graders":[{"id":1},"x",null,{"id":"calls","kind":"tool_calls","mx":0}]},
			{"id":"c4","graders":"nope"}]}`,
			[]EvalCase{
				{},
				{Graders: []Grader{{ID: "a"}}},
				{ID: "c3", Graders: []Grader{{}, {}, {}, {ID: "calls", Params: map[string]any{"kind": "tool_calls", "mx": json.Number("0")}}}},
				{},
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := CaseGraders([]byte(tc.doc))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("CaseGraders (-want +got):\n%s", diff)
			}
		})
	}
}
