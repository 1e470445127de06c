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

// TestAudiences: who reads a record of each audience. A personal audience
// is its member's alone (no team reads it); a team's is its members' and,
// through AnyTeamAudience, admins' and machine credentials'; a subject
// spelled like a team audience reads nothing of the team's.
func TestAudiences(t *testing.T) {
	team := TeamAudience("secret")
	for _, tc := range []struct {
		audience, subject string
		teams             []string
		want              bool
	}{
		{"", "bob", nil, true},
		{"alice", "alice", nil, true},
		{"alice", "bob", []string{AnyTeamAudience}, false},
		{team, "alice", []string{team}, true},
		{team, "bob", []string{TeamAudience("other")}, false},
		{team, "admin", []string{AnyTeamAudience}, true},
		{team, team, nil, false},
	} {
		if got := VisibleTo(tc.audience, tc.subject, tc.teams); got != tc.want {
			t.Errorf("VisibleTo(%q, %q, %v) = %v, want %v", tc.audience, tc.subject, tc.teams, got, tc.want)
		}
	}
	if Visible(team, team) {
		t.Error("a subject spelled like a team audience reads the team's")
	}
	if got := TeamOf(team); got != "secret" {
		t.Errorf("TeamOf = %q", got)
	}
}
