package activities_test

import (
	"testing"

	"svc/activities"
	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
)

func TestHarnessJudgeRuntime(t *testing.T) {
	judge := func(rt string) *registry.JudgeSpec {
		return &registry.JudgeSpec{Kind: registry.JudgeHarness, ID: "hj", Harness: &registry.HarnessJudge{Runtime: rt}}
	}
	placed := &registry.EvalCase{ID: "c", Placement: &registry.Placement{Target: "from-case"}}
	for _, tc := range []struct {
		name   string
		j      *registry.JudgeSpec
		source eval.Run
		want   string
	}{
		{"the judge's runtime wins", judge("gpu"), eval.Run{Runtime: "cluster", Case: placed}, "gpu"},
		{"else the source run's", judge(""), eval.Run{Runtime: "cluster", Case: placed}, "cluster"},
		{"else the case's placement", judge(""), eval.Run{Case: placed}, "from-case"},
		{"else local", judge(""), eval.Run{}, ""},
	} {
		if got := activities.HarnessJudgeRuntime(tc.j, tc.source); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

// The judging run's id is the same for the same judging, and differs when
// anything it runs differs.
func TestHarnessJudgeRunID(t *testing.T) {
	base := []string{"ws", "run_1", "hj", "grader@1.0.0", "", "prompt"}
	id := func(p []string) string { return activities.HarnessJudgeRunID(p[0], p[1], p[2], p[3], p[4], p[5]) }
	want := id(base)
	if id(append([]string(nil), base...)) != want {
		t.Fatal("the same judging has two ids")
	}
	for i := range base {
		p := append([]string(nil), base...)
		p[i] += "x"
		if id(p) == want {
			t.Errorf("changing argument %d keeps the id", i)
		}
	}
}
