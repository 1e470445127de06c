package judges

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
)

func ptr(f float64) *float64 { return &f }

func TestApplyCriteria(t *testing.T) {
	criteria := []registry.Criterion{
		{ID: "correct", Weight: ptr(3)},
		{ID: "concise"}, // weight 1
	}
	missing := func(c string) eval.Score {
		return eval.Score{GraderID: "q", Metric: "judge:q:" + c, Value: 0, Pass: verdict(false),
			Detail: "error: criterion " + c + " missing from the verdict"}
	}
	tests := []struct {
		name          string
		criteria      []registry.Criterion
		milestones    []registry.Milestone
		passThreshold *float64
		scores        []eval.Score
		want          []eval.Score
	}{
		{
			name:       "no criteria: only the rewriting, milestones ignored",
			scores:     []eval.Score{{Metric: "judge", Value: 1}, {Metric: "tone", Value: 0}},
			milestones: []registry.Milestone{{ID: "m1"}},
			want: []eval.Score{
				{GraderID: "q", Metric: "judge:q", Value: 1},
				{GraderID: "q", Metric: "judge:q:tone", Value: 0},
			},
		},
		{
			name:     "all criteria, no overall: weighted mean first",
			criteria: criteria,
			scores:   []eval.Score{{Metric: "correct", Value: 1}, {Metric: "concise", Value: 0, Pass: verdict(false)}},
			want: []eval.Score{
				{GraderID: "q", Metric: "judge:q", Value: 0.75, Detail: "weighted mean of 2 criteria"},
				{GraderID: "q", Metric: "judge:q:correct", Value: 1},
				{GraderID: "q", Metric: "judge:q:concise", Value: 0, Pass: verdict(false)},
			},
		},
		{
			name:          "missing criterion is an error score and counts 0; passThreshold decides the computed pass",
			criteria:      criteria,
			passThreshold: ptr(0.5),
			scores:        []eval.Score{{Metric: "judge:q:concise", Value: 1}},
			want: []eval.Score{
				{GraderID: "q", Metric: "judge:q", Value: 0.25, Pass: verdict(false), Detail: "weighted mean of 2 criteria"},
				{GraderID: "q", Metric: "judge:q:concise", Value: 1},
				missing("correct"),
			},
		},
		{
			name:          "the judge's overall verdict is kept; passThreshold re-decides its pass only",
			criteria:      criteria,
			passThreshold: ptr(0.9),
			scores: []eval.Score{
				{Metric: "judge", Value: 0.8, Pass: verdict(true)},
				{Metric: "correct", Value: 0.1, Pass: verdict(true)},
				{Metric: "concise", Value: 1},
			},
			want: []eval.Score{
				{GraderID: "q", Metric: "judge:q", Value: 0.8, Pass: verdict(false)},
				{GraderID: "q", Metric: "judge:q:correct", Value: 0.1, Pass: verdict(true)},
				{GraderID: "q", Metric: "judge:q:concise", Value: 1},
			},
		},
		{
			name:     "a criterion's own passThreshold decides its pass",
			criteria: []registry.Criterion{{ID: "c", PassThreshold: ptr(0.7)}},
			scores:   []eval.Score{{Metric: "judge", Value: 0.6}, {Metric: "c", Value: 0.6, Pass: verdict(true)}},
			want: []eval.Score{
				{GraderID: "q", Metric: "judge:q", Value: 0.6},
				{GraderID: "q", Metric: "judge:q:c", Value: 0.6, Pass: verdict(false)},
			},
		},
		{
			name:       "milestones merge as milestone:<id>, weight 1, deduplicated",
			criteria:   []registry.Criterion{{ID: "correct", Weight: ptr(2)}, {ID: "milestone:listed"}},
			milestones: []registry.Milestone{{ID: "listed"}, {ID: "answered"}},
			scores:     []eval.Score{{Metric: "correct", Value: 1}, {Metric: "milestone:listed", Value: 1}},
			want: []eval.Score{
				{GraderID: "q", Metric: "judge:q", Value: 0.75, Detail: "weighted mean of 3 criteria"},
				{GraderID: "q", Metric: "judge:q:correct", Value: 1},
				{GraderID: "q", Metric: "judge:q:milestone:listed", Value: 1},
				missing("milestone:answered"),
			},
		},
		{
			name:     "a skipped judge stays one skip score",
			criteria: criteria,
			scores:   Skip("q", "no dispatcher"),
			want:     Skip("q", "no dispatcher"),
		},
		{
			name:     "no scores at all: every criterion missing",
			criteria: []registry.Criterion{{ID: "a"}},
			want: []eval.Score{
				{GraderID: "q", Metric: "judge:q", Value: 0, Detail: "weighted mean of 1 criteria"},
				missing("a"),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]eval.Score(nil), tt.scores...)
			got := ApplyCriteria("q", tt.criteria, tt.milestones, tt.passThreshold, tt.scores)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ApplyCriteria (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(in, tt.scores); diff != "" {
				t.Errorf("ApplyCriteria modified its input (-before +after):\n%s", diff)
			}
		})
	}
}
