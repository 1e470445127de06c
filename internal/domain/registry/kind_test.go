package registry

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"svc/internal/platform/derrors"
)

func TestParseKind(t *testing.T) {
	for _, k := range Kinds() {
		got, err := ParseKind(string(k))
		if err != nil || got != k {
			t.Errorf("ParseKind(%q) = %q, %v", k, got, err)
		}
	}
	for _, bad := range []string{"", "Dataset", "harness_template", "_shared"} {
		if _, err := ParseKind(bad); !errors.Is(err, derrors.ErrInvalid) {
			t.Errorf("ParseKind(%q) = %v, want ErrInvalid", bad, err)
		}
	}
	if len(Kinds()) != 6 {
		t.Errorf("Kinds() = %v", Kinds())
	}
}

// TestJudgeJSON: code outside this package can use encoding/json on a
// stored judge directly, with the same strictness.
func TestJudgeJSON(t *testing.T) {
	for _, name := range []string{"judge-code", "judge-model", "judge-harness"} {
		s := mustParse(t, name, false)
		var j JudgeSpec
		if err := json.Unmarshal(s.Canonical(), &j); err != nil {
			t.Fatalf("%s: json.Unmarshal: %v", name, err)
		}
		if diff := cmp.Diff(s.Judge(), &j); diff != "" {
			t.Errorf("%s: (-Parse +json.Unmarshal):\n%s", name, diff)
		}
	}
	var j JudgeSpec
	if err := json.Unmarshal([]byte(`{"kind":"code","id":"a","version":"1","language":"python","code":"x","rubric":"r"}`), &j); err == nil {
		t.Error("json.Unmarshal accepted a member of another kind")
	}
	if err := json.Unmarshal([]byte(`{"kind":"llm"}`), &j); !errors.Is(err, derrors.ErrInvalid) {
		t.Errorf("unknown kind: %v", err)
	}
	if _, err := json.Marshal(JudgeSpec{Kind: JudgeCode}); err == nil {
		t.Error("json.Marshal of a code judge without its fields succeeded")
	}
}

func TestGraderKeepsItsParams(t *testing.T) {
	d := mustParse(t, "dataset", true).Dataset()
	g := d.Cases[0].Graders[0]
	want := Grader{ID: "contains", Params: map[string]any{"kind": "file_contains", "path": "README.md", "value": "Hello"}}
	if diff := cmp.Diff(want, g); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestEvalCaseValidate(t *testing.T) {
	c := EvalCase{ID: "c1", Task: "do it", Resources: &Resources{}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Resources != nil {
		t.Error("empty resources kept")
	}
	cpu := -1
	bad := EvalCase{Task: "x", Resources: &Resources{CPU: &cpu}}
	err := bad.Validate()
	wantProblem(t, err, "id", "required")
	wantProblem(t, err, "resources.cpu", "between 0")
}
