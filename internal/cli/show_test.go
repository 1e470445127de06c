package cli

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"svc/internal/client"
	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
)

// row is a (case, trial) of a detail read.
func row(caseID string, trial int, verdict, basis string, scores ...eval.Score) eval.CaseRow {
	return eval.CaseRow{CaseID: caseID, Trial: trial, RunID: "run_" + caseID + "_" + string(rune('0'+trial)), Verdict: verdict, VerdictBasis: basis, Scores: scores}
}

func score(metric string, pass bool, detail string) eval.Score {
	return eval.Score{GraderID: metric, Metric: metric, Value: map[bool]float64{true: 1}[pass], Pass: &pass, Detail: detail}
}

// showRows are the rows of a batch of three cases and three trials, in
// the order a service might answer them: not sorted.
func showRows() []eval.CaseRow {
	crashed := row("b2", 2, "error", "run")
	crashed.Error = &eval.Error{Code: "NONZERO_EXIT", Message: "the harness exited with code 3"}
	return []eval.CaseRow{
		row("c10", 0, "pass", "graders", score("exact", true, "")),
		row("b2", 1, "fail", "graders", score("exit_code", true, ""), score("exact", false, `expected "ok", got "bad"`)),
		row("a1", 2, "pass", "graders", score("exact", true, "")),
		row("a1", 0, "pass", "graders", score("exact", true, "")),
		row("b2", 0, "pass", "graders", score("exact", true, "")),
		crashed,
		row("c10", 1, "fail", "graders+judges",
			eval.Score{Metric: "judge:tone", Pass: ptr(false), Detail: "skipped: no python"}, score("judge:len", false, "")),
		row("a1", 1, "pass", "graders", score("exact", true, "")),
		row("c10", 2, "pending", "pending"),
	}
}

// TestCaseLines: rows are grouped by case in case-id then trial order, the
// trial string has a letter per trial, and the first trial that did not
// pass says why: its error, else its first failing score (judge skips do
// not decide), with a detail or the value.
func TestCaseLines(t *testing.T) {
	got := caseLines(showRows())
	want := []caseLine{
		{caseID: "a1", verdicts: []byte("PPP"), passed: 3, runID: "run_a1_0"},
		{caseID: "b2", verdicts: []byte("PFE"), passed: 1, metric: "exact", detail: `expected "ok", got "bad"`, runID: "run_b2_1"},
		{caseID: "c10", verdicts: []byte("PF."), passed: 1, metric: "judge:len", detail: "value 0", runID: "run_c10_1"},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(caseLine{})); diff != "" {
		t.Errorf("caseLines (-want +got):\n%s", diff)
	}
	m, d := whyNot(showRows()[5])
	if m != "run" || d != "NONZERO_EXIT: the harness exited with code 3" {
		t.Errorf("whyNot of a crashed trial = %q, %q", m, d)
	}
}

// TestScorecardShow prints the summary and the cases in each format;
// --failed keeps the cases with a trial that did not pass.
func TestScorecardShow(t *testing.T) {
	sc := state(eval.ScorecardSucceeded, 4, 3, 1)
	sc.Dataset, sc.Harness, sc.Trials, sc.Concurrency = registry.Ref{ID: "qa", Version: "1.0.0"}, registry.Ref{ID: "agent", Version: "1.2.0"}, 3, 4
	sc.Summary = map[string]eval.MetricSummary{"casePass": {Count: 9, Mean: 0.5556, PassRate: ptr(5.0 / 9)}}
	sc.Scorecard = showRows()
	sc.Scorecard[1].Critical = true
	api := newFakeAPI(t, map[string]http.HandlerFunc{"GET /scorecards/sc_w": answer(200, sc)})
	env := map[string]string{client.EnvURL: api.srv.URL}
	for _, tc := range []struct {
		args   []string
		golden string
	}{
		{[]string{"show", "sc_w"}, "scorecard_show.golden"},
		{[]string{"show", "sc_w", "--failed", "--format", "md"}, "scorecard_show_failed_md.golden"},
		{[]string{"show", "--format", "jsonl", "sc_w", "--failed"}, "scorecard_show_failed_jsonl.golden"},
		{[]string{"show", "sc_w", "--format", "csv"}, "scorecard_show_csv.golden"},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			out, errOut, code := invocation{env: env}.run(t, "scorecard", RunScorecard, tc.args...)
			if code != 0 {
				t.Fatalf("exit %d stderr %q", code, errOut)
			}
			golden(t, tc.golden, out)
		})
	}
	_, errOut, code := invocation{env: env}.run(t, "scorecard", RunScorecard, "show", "sc_w", "--format", "xml")
	if code != 2 || !strings.Contains(errOut, `--format "xml": want one of table, csv, jsonl, md`) {
		t.Errorf("--format xml: exit %d stderr %q", code, errOut)
	}
}

// TestSheetCells: a multi-line cell stays on one line in a table and an
// md row, is cut in a table, and is whole and quoted in csv.
func TestSheetCells(t *testing.T) {
	sh := &sheet{cols: []column{{head: "CASE", key: "case"}, {head: "DETAIL", key: "detail", clip: 12}, {head: "RATE", key: "rate"}}}
	sh.add("a|b", "line one\nline\ttwo", 2.0/3)
	sh.add("c", nil, nil)
	for _, tc := range []struct{ format, want string }{
		{formatTable, "CASE  DETAIL        RATE\na|b   line one li…  0.6667\nc     -             -\n"},
		{formatCSV, "case,detail,rate\na|b,\"line one\nline\ttwo\",0.6667\nc,,\n"},
		{formatJSONL, "{\"case\":\"a|b\",\"detail\":\"line one\\nline\\ttwo\",\"rate\":0.6666666666666666}\n{\"case\":\"c\",\"detail\":null,\"rate\":null}\n"},
		{formatMD, "| CASE | DETAIL | RATE |\n| --- | --- | --- |\n| a\\|b | line one line two | 0.6667 |\n| c |  |  |\n"},
	} {
		var b strings.Builder
		if err := sh.write(&b, tc.format); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, b.String()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.format, diff)
		}
	}
}
