package gate

import (
	"maps"
	"slices"

	"svc/internal/domain/scoring"
)

// Case transitions.
const (
	ChangeBroke        = "broke"
	ChangeFixed        = "fixed"
	ChangeStillPassing = "still_passing"
	ChangeStillFailing = "still_failing"
	ChangeAdded        = "added"
	ChangeRemoved      = "removed"
)

// Transition is how one case changed between the sides.
type Transition struct {
	CaseID          string `json:"caseId"`
	Change          string `json:"change"`
	BaselinePasses  int    `json:"baselinePasses"`
	BaselineTrials  int    `json:"baselineTrials"`
	CandidatePasses int    `json:"candidatePasses"`
	CandidateTrials int    `json:"candidateTrials"`
	Critical        bool   `json:"critical,omitempty"`
	// CaseChanged is set when both manifests seal the case and their
	// digests differ: the case itself changed, not only the agent.
	CaseChanged bool `json:"caseChanged,omitempty"`
}

// passing reports whether a strict majority of trials passed.
func passing(passes, trials int) bool { return 2*passes > trials }

// criticalCase reports whether either side marks the case critical.
func criticalCase(id string, b, c *side) bool {
	for _, s := range []*side{b, c} {
		if scoring.IsCritical(s.policy, id) {
			return true
		}
		if cd := s.cases[id]; cd != nil && cd.critical {
			return true
		}
	}
	return false
}

// transitions lists every case decided on either side, by case id.
func transitions(b, c *side) []Transition {
	ids := slices.Sorted(maps.Keys(b.cases))
	for id := range c.cases {
		if _, ok := b.cases[id]; !ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	out := make([]Transition, 0, len(ids))
	for _, id := range ids {
		t := Transition{CaseID: id, Critical: criticalCase(id, b, c)}
		bc, cc := b.cases[id], c.cases[id]
		if bc != nil {
			t.BaselinePasses, t.BaselineTrials = bc.passes, bc.trials
		}
		if cc != nil {
			t.CandidatePasses, t.CandidateTrials = cc.passes, cc.trials
		}
		switch {
		case bc == nil:
			t.Change = ChangeAdded
		case cc == nil:
			t.Change = ChangeRemoved
		default:
			bp, cp := passing(bc.passes, bc.trials), passing(cc.passes, cc.trials)
			switch {
			case bp && !cp:
				t.Change = ChangeBroke
			case !bp && cp:
				t.Change = ChangeFixed
			case bp:
				t.Change = ChangeStillPassing
			default:
				t.Change = ChangeStillFailing
			}
		}
		if bm, cm := b.sc.Manifest, c.sc.Manifest; bm != nil && cm != nil {
			t.CaseChanged = compareDigest(bm.Cases[id], cm.Cases[id]) == digestDiffer
		}
		out = append(out, t)
	}
	return out
}
