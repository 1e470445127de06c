package workflows_test

import (
	"net/http"
	"strings"
	"testing"

	"svc/internal/domain/eval"
	"svc/internal/domain/gate"
	"svc/internal/platform/config"
	"svc/internal/testing/judgetest"
	"svc/internal/testing/stacktest"
)

// A judged scorecard whose judge has criteria and whose cases have
// milestones shows every judge metric (the overall judge:<id>, each
// criterion judge:<id>:<c>, each milestone judge:<id>:milestone:<m>) in its
// summary and in the diff; a criterion the model leaves out is an error
// score, a model server that fails is a skip score.
func TestJudgedScorecardCriteriaAndMilestones(t *testing.T) {
	st := stacktest.New(t, stacktest.Options{Backend: "sqlite", TaskQueue: taskQueue, Host: "test-worker",
		Config: func(cfg *config.Config) { cfg.WebhookAllow = "127.0.0.1" }})
	s := &stack{st: st, url: st.URL, store: st.Store, tc: st.Client, apiKey: st.APIKey, ws: st.Workspace, tmp: st.Tmp}
	srv := judgetest.New(t, func(p string) (int, string) {
		switch {
		case strings.Contains(p, "answer fail1"):
			return http.StatusInternalServerError, ""
		case strings.Contains(p, "\nright\n"):
			return http.StatusOK, `{"score": 1, "pass": true, "reason": "right", "criteria": {"correct": {"score": 1}, "milestone:parsed": {"score": 1}}}`
		}
		// No overall, no milestone: the mean is computed and the
		// milestone is an error score.
		return http.StatusOK, `{"criteria": {"correct": {"score": 0}}}`
	})
	s.harness(t, "answerer", "1.0.0", answerScript, nil)
	s.call(t, "POST", "/datasets", `{"id":"ms","version":"1.0.0","cases":[
		{"id":"even1","task":"answer even1","expected":"right","milestones":[{"id":"parsed","description":"the task is parsed"}]},
		{"id":"odd1","task":"answer odd1","expected":"right","milestones":[{"id":"parsed","description":"the task is parsed"}]},
		{"id":"fail1","task":"answer fail1","expected":"right"}]}`, 201, nil)
	s.call(t, "PUT", "/secrets/openai-key", `{"value":"sk-loopback-criteria-000111","allowedHosts":["127.0.0.1"]}`, 204, nil)
	s.call(t, "PUT", "/workspace/models/grader", `{"provider":"openai","baseUrl":"`+srv.BaseURL()+`","model":"gpt-test","keySecret":"openai-key"}`, 204, nil)
	raw := `{"kind":"model","id":"quality","version":"1.0.0","model":"grader","rubric":"Is the answer right?",
		"criteria":[{"id":"correct","description":"the answer is right","weight":3,"passThreshold":0.5}]}`
	s.storeLegacyJudge(t, raw)

	batch := func() eval.Scorecard {
		var q eval.Scorecard
		s.call(t, "POST", "/scorecards", `{"dataset":{"id":"ms","version":"1.0.0"},"harness":{"id":"answerer","version":"1.0.0"},"judges":[{"id":"quality"}]}`, 202, &q)
		sc := s.waitBatch(t, q.ID)
		if sc.Status != eval.ScorecardSucceeded {
			t.Fatalf("batch ended %s: %+v", sc.Status, sc.Error)
		}
		return sc
	}
	base, cand := batch(), batch()
	metrics := []string{"judge:quality", "judge:quality:correct", "judge:quality:milestone:parsed"}
	for _, m := range metrics {
		sum, ok := cand.Summary[m]
		if !ok {
			t.Errorf("the summary lacks %s: %v", m, cand.Summary)
			continue
		}
		if m == "judge:quality" && (sum.Count != 3 || sum.Skipped != 1) {
			t.Errorf("summary of %s = %+v, want 3 scores, one of them the failing server's skip", m, sum)
		}
	}
	if got := cand.JudgeModels; len(got) != 1 || !strings.HasPrefix(got[0], "grader@") {
		t.Errorf("judgeModels = %v, want the grader binding", got)
	}
	var d gate.ScorecardDiff
	s.call(t, "GET", "/scorecards/diff?baseline="+base.ID+"&candidate="+cand.ID, "", 200, &d)
	seen := map[string]bool{}
	for _, md := range d.Metrics {
		seen[md.Metric] = true
	}
	for _, m := range metrics {
		if !seen[m] {
			t.Errorf("the diff lacks %s", m)
		}
	}

	// Per case: the milestone the model left out is an error score, the
	// overall is the weighted mean; the failing server left one skip.
	checked := 0
	for key, runID := range cand.CaseRuns {
		var run eval.Run
		s.call(t, "GET", "/runs/"+runID, "", 200, &run)
		by := map[string]eval.Score{}
		for _, sc := range run.Result.Scores {
			by[sc.Metric] = sc
		}
		switch {
		case strings.HasPrefix(key, "odd1"):
			checked++
			if ms := by["judge:quality:milestone:parsed"]; ms.Detail != "error: criterion milestone:parsed missing from the verdict" {
				t.Errorf("case %s milestone = %+v, want the missing-criterion error", key, ms)
			}
			if ov := by["judge:quality"]; ov.Value != 0 || !strings.HasPrefix(ov.Detail, "weighted mean of 2 criteria") {
				t.Errorf("case %s overall = %+v, want the weighted mean", key, ov)
			}
		case strings.HasPrefix(key, "fail1"):
			checked++
			if ov := by["judge:quality"]; len(by) == 0 || !strings.HasPrefix(ov.Detail, "skipped: model grader (gpt-test at ") || !strings.Contains(ov.Detail, "answered HTTP 500") {
				t.Errorf("case %s overall = %+v, want the server's failure as a skip", key, ov)
			}
		}
	}
	if checked != 2 {
		t.Errorf("checked %d of the odd1 and fail1 cases in caseRuns %v", checked, cand.CaseRuns)
	}
}
