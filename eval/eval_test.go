package eval

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestRunTrialAlwaysOnChildren(t *testing.T) {
	child, err := json.Marshal(Run{ID: "run_a", ParentScorecardID: "sc_1", CaseID: "c1", Trial: 0})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(child), `"trial":0`) {
		t.Errorf("a child of trial 0 encodes as %s, want a trial member", child)
	}
	top, err := json.Marshal(Run{ID: "run_b"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(top), `"trial"`) {
		t.Errorf("a top-level run encodes as %s, want no trial member", top)
	}
	var back Run
	if err := json.Unmarshal(child, &back); err != nil || back.ParentScorecardID != "sc_1" || back.CaseID != "c1" {
		t.Errorf("round trip: %+v, %v", back, err)
	}
}
