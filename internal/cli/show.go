package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"svc/internal/domain/eval"
	"svc/internal/domain/scoring"
)

// runScorecardShow is `svc scorecard show`: one line per case.
func runScorecardShow(ctx context.Context, x *cli, args []string) (int, error) {
	fs := newFlagSet(x, "scorecard show", scorecardSynopsis)
	var cf clientFlags
	cf.register(fs, x.getenv)
	failed := fs.Bool("failed", false, "only the cases with a trial that did not pass")
	format := fs.String("format", formatTable, "output `format`: table, csv, jsonl or md")
	asJSON := fs.Bool("json", false, "print the detail read as the service's JSON")
	arg, err := parseOne(fs, args, "scorecard id")
	if err != nil {
		return 0, err
	}
	c, err := cf.tableClient(x.getenv, *format)
	if err != nil {
		return 0, err
	}
	sc, raw, err := (&batchReader{c: c, id: arg}).detail(ctx)
	if err != nil {
		return 0, err
	}
	if *asJSON {
		writeJSON(x.stdout, raw)
		return exitOK, nil
	}
	cases := caseLines(sc.Scorecard)
	shown := cases
	if *failed {
		shown = slices.DeleteFunc(slices.Clone(cases), func(l caseLine) bool { return l.passed == l.trials() })
	}
	sh := caseSheet(shown)
	if *format != formatTable {
		return exitOK, sh.write(x.stdout, *format)
	}
	renderScorecard(x.stdout, sc)
	fmt.Fprintln(x.stdout)
	switch {
	case len(cases) == 0:
		fmt.Fprintln(x.stdout, "No case has a result yet.")
		return exitOK, nil
	case len(shown) == 0:
		fmt.Fprintf(x.stdout, "No case failed (%d %s).\n", len(cases), plural(len(cases), "case"))
		return exitOK, nil
	case *failed:
		fmt.Fprintf(x.stdout, "Cases with a trial that did not pass: %d of %d (trials: %s):\n", len(shown), len(cases), trialLegend)
	default:
		fmt.Fprintf(x.stdout, "Cases: %d (trials: %s):\n", len(cases), trialLegend)
	}
	sh.indent = "  "
	if !slices.ContainsFunc(shown, func(l caseLine) bool { return l.critical }) {
		sh.drop("critical")
	}
	return exitOK, sh.write(x.stdout, formatTable)
}

// trialLegend explains the trial strings.
const trialLegend = "P pass, F fail, E error, C cancelled, . pending"

// caseLine is one case of a batch: its trials in order and why the first
// that did not pass did not.
type caseLine struct {
	caseID   string
	verdicts []byte // one of trialLegend's letters per trial
	passed   int
	critical bool
	// metric and detail are the first failing score of the first trial
	// that did not pass (or its error when no score failed).
	metric, detail string
	// runID is that trial's run, else the first trial's: what
	// `svc runs logs` and `svc runs trace` take.
	runID string
}

func (l caseLine) trials() int { return len(l.verdicts) }

// caseLines groups a detail read's rows by case, sorted by case id and
// trial whatever order they came in.
func caseLines(rows []eval.CaseRow) []caseLine {
	rows = slices.Clone(rows)
	slices.SortStableFunc(rows, func(a, b eval.CaseRow) int {
		return cmp.Or(strings.Compare(a.CaseID, b.CaseID), cmp.Compare(a.Trial, b.Trial))
	})
	var out []caseLine
	for i := 0; i < len(rows); {
		j := i
		l := caseLine{caseID: rows[i].CaseID, runID: rows[i].RunID}
		found := false
		for ; j < len(rows) && rows[j].CaseID == l.caseID; j++ {
			r := rows[j]
			v := verdictLetter(r)
			l.verdicts = append(l.verdicts, v)
			l.critical = l.critical || r.Critical
			if v == 'P' {
				l.passed++
				continue
			}
			if !found && v != '.' {
				found = true
				l.runID = r.RunID
				l.metric, l.detail = whyNot(r)
			}
		}
		out = append(out, l)
		i = j
	}
	return out
}

// verdictLetter is a trial's letter in a trial string.
func verdictLetter(r eval.CaseRow) byte {
	switch {
	case r.Verdict == scoring.VerdictPass:
		return 'P'
	case r.Verdict == scoring.VerdictFail:
		return 'F'
	case r.Verdict == scoring.VerdictPending:
		return '.'
	case r.VerdictBasis == scoring.BasisCancelled:
		return 'C'
	}
	return 'E'
}

// whyNot says why a trial did not pass: the run's error when it ended in
// one (the cause, before the graders that read its missing answer), else
// the first score that failed, with its detail.
func whyNot(r eval.CaseRow) (metric, detail string) {
	if r.Error != nil {
		metric = "run"
		if r.VerdictBasis == scoring.BasisDispatch || r.VerdictBasis == scoring.BasisCancelled {
			metric = r.VerdictBasis
		}
		if r.Error.Code == "" {
			return metric, r.Error.Message
		}
		return metric, r.Error.Code + ": " + r.Error.Message
	}
	for _, s := range r.Scores {
		if s.Pass == nil || *s.Pass {
			continue
		}
		if strings.HasPrefix(s.Metric, scoring.JudgeMetricPrefix) && scoring.IsSkip(s) {
			continue // a judge that could not run did not decide
		}
		d := s.Detail
		if d == "" {
			d = "value " + num(s.Value)
		}
		return s.Metric, d
	}
	return r.VerdictBasis, ""
}

// caseSheet is the cases as a sheet.
func caseSheet(lines []caseLine) *sheet {
	sh := &sheet{cols: []column{
		{head: "CASE", key: "case"},
		{head: "TRIALS", key: "trials"},
		{head: "PASSED", key: "passed"},
		{head: "CRITICAL", key: "critical"},
		{head: "FAILING", key: "failing"},
		{head: "DETAIL", key: "detail", clip: 80},
		{head: "RUN", key: "run"},
	}}
	for _, l := range lines {
		sh.add(l.caseID, string(l.verdicts), fmt.Sprintf("%d/%d", l.passed, l.trials()), l.critical, l.metric, l.detail, l.runID)
	}
	return sh
}

// writeCaseTable writes lines under a heading, for the commands that end
// with the failing cases (eval run).
func writeCaseTable(w io.Writer, heading string, lines []caseLine) {
	fmt.Fprintln(w, heading)
	sh := caseSheet(lines)
	sh.indent = "  "
	if !slices.ContainsFunc(lines, func(l caseLine) bool { return l.critical }) {
		sh.drop("critical")
	}
	sh.write(w, formatTable)
}
