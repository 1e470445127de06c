package judges

import (
	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
	"svc/internal/integrations/modeljudge"
)

// MilestonePrefix begins the criterion id a case milestone becomes.
const MilestonePrefix = modeljudge.MilestonePrefix

// ApplyCriteria completes the verdict of a judge that has criteria (spec
// §2.5); see score.ApplyCriteria.
func ApplyCriteria(judgeID string, criteria []registry.Criterion, milestones []registry.Milestone, passThreshold *float64, scores []eval.Score) []eval.Score {
	return modeljudge.ApplyCriteria(judgeID, criteria, milestones, passThreshold, scores)
}

// verdict returns a pointer to b, for Score.Pass.
func verdict(b bool) *bool { return &b }
