package modeljudge

import (
	"fmt"

	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
)

// MilestonePrefix begins the criterion id a case milestone becomes.
const MilestonePrefix = "milestone:"

// ApplyCriteria completes the verdict of a judge that has criteria (spec
// §2.5): the case's milestones merge into the criteria as milestone:<id>
// (after them, a milestone whose id a criterion already has being dropped);
// every criterion c must have a score judge:<id>:<c>, and one that has
// none gets an explicit error score (value 0, pass false); a criterion's
// own passThreshold decides its pass; the overall judge:<id> is the
// judge's own when it gave one, else the weighted mean of weight x value
// over the weights (a missing criterion counting 0) put first. The spec's
// passThreshold re-decides the overall pass only; without one a computed
// overall carries no pass.
//
// Metrics are rewritten first (RewriteMetrics). A judge without criteria
// gets only the rewriting, milestones or not: milestones extend criteria,
// they do not make a judge criteria-based. A skipped judge is left as it
// is: its skip score already says why there is no verdict.
func ApplyCriteria(judgeID string, criteria []registry.Criterion, milestones []registry.Milestone, passThreshold *float64, scores []eval.Score) []eval.Score {
	out := RewriteMetrics(judgeID, scores)
	if len(criteria) == 0 {
		return out
	}
	for _, s := range out {
		if IsSkip(s) {
			return out
		}
	}
	type criterion struct {
		id        string
		weight    float64
		threshold *float64
	}
	var want []criterion
	seen := map[string]bool{}
	for _, c := range criteria {
		if seen[c.ID] {
			continue
		}
		seen[c.ID] = true
		w := c.EffectiveWeight()
		if !(w > 0) {
			w = 1 // registration refuses it; never let it zero the mean
		}
		want = append(want, criterion{c.ID, w, c.PassThreshold})
	}
	for _, m := range milestones {
		if id := MilestonePrefix + m.ID; !seen[id] {
			seen[id] = true
			want = append(want, criterion{id: id, weight: 1})
		}
	}

	own := metricPrefix + judgeID
	first := map[string]int{} // metric -> index of its first score
	for i, s := range out {
		if _, ok := first[s.Metric]; !ok {
			first[s.Metric] = i
		}
	}
	var sum, weights float64
	for _, c := range want {
		metric := own + ":" + c.id
		weights += c.weight
		i, ok := first[metric]
		if !ok {
			out = append(out, eval.Score{
				GraderID: judgeID,
				Metric:   metric,
				Value:    0,
				Pass:     verdict(false),
				Detail:   fmt.Sprintf("error: criterion %s missing from the verdict", c.id),
			})
			continue
		}
		if c.threshold != nil {
			out[i].Pass = verdict(out[i].Value >= *c.threshold)
		}
		sum += c.weight * out[i].Value
	}
	if i, ok := first[own]; ok {
		if passThreshold != nil {
			out[i].Pass = verdict(out[i].Value >= *passThreshold)
		}
		return out
	}
	overall := eval.Score{
		GraderID: judgeID,
		Metric:   own,
		Value:    sum / weights,
		Detail:   fmt.Sprintf("weighted mean of %d criteria", len(want)),
	}
	if passThreshold != nil {
		overall.Pass = verdict(overall.Value >= *passThreshold)
	}
	return append([]eval.Score{overall}, out...)
}

// verdict returns a pointer to b, for Score.Pass.
func verdict(b bool) *bool { return &b }
