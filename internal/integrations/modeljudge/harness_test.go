package modeljudge

import (
	"strings"
	"testing"

	"svc/internal/domain/eval"
	"svc/internal/domain/judge"
	"svc/internal/domain/registry"
)

func TestHarnessVerdict(t *testing.T) {
	eff := judge.Effective{Criteria: []registry.Criterion{{ID: "correct"}}}
	ok := func(answer string) eval.Run {
		return eval.Run{ID: "run_j", Status: eval.StatusSucceeded, Harness: registry.Ref{ID: "g", Version: "1"},
			Result: &eval.CaseResult{Harness: "g@1", Evidence: &eval.Evidence{FinalAnswer: answer}}}
	}
	for _, tc := range []struct {
		name string
		run  eval.Run
		// want is metric -> value; skip is the skip detail's start.
		want map[string]float64
		skip string
	}{
		{name: "verdict", run: ok(`{"score": 0.8, "pass": true, "criteria": {"correct": {"score": 1}}}`),
			want: map[string]float64{"judge:hj": 0.8, "judge:hj:correct": 1}},
		{name: "verdict in prose", run: ok("Here it is:\n```json\n{\"criteria\": {\"correct\": {\"score\": 0}}}\n```"),
			want: map[string]float64{"judge:hj": 0, "judge:hj:correct": 0}},
		{name: "criterion missing", run: ok(`{"score": 1}`),
			want: map[string]float64{"judge:hj": 1, "judge:hj:correct": 0}},
		{name: "no verdict", run: ok("I think it is fine"), skip: "skipped: harness g@1 (run run_j) answered no valid verdict"},
		{name: "empty answer", run: ok(" "), skip: "skipped: harness g@1 (run run_j) gave no final answer"},
		{name: "failed run", run: eval.Run{ID: "run_j", Status: eval.StatusFailed, Harness: registry.Ref{ID: "g", Version: "1"},
			Error: &eval.Error{Message: "exit 3"}}, skip: "skipped: harness g@1 (run run_j) did not judge: the run failed: exit 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := HarnessVerdict("hj", eff, nil, tc.run)
			if tc.skip != "" {
				if len(got) != 1 || !IsSkip(got[0]) || !strings.HasPrefix(got[0].Detail, tc.skip) {
					t.Fatalf("got %+v, want one skip score %q", got, tc.skip)
				}
				return
			}
			by := map[string]eval.Score{}
			for _, s := range got {
				by[s.Metric] = s
			}
			for m, v := range tc.want {
				if s, ok := by[m]; !ok || s.Value != v {
					t.Errorf("%s = %+v, want value %v", m, s, v)
				}
			}
			if !strings.HasSuffix(by["judge:hj"].Detail, "[judged by run run_j]") {
				t.Errorf("the overall's detail %q does not name the run", by["judge:hj"].Detail)
			}
		})
	}
}
