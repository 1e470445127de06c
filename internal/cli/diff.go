package cli

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"svc/internal/client"
	"svc/internal/domain/eval"
	"svc/internal/domain/gate"
)

const diffSynopsis = `usage: svc diff <baseline-id> <candidate-id> [--answers n] [--format table|csv|jsonl|md] [--exit-code] [--json]

Compares two scorecards (GET /scorecards/diff): what the experiment varied, how many cases
broke, were fixed or stayed as they were, every metric's delta, and each case that broke or
was fixed with both sides' answers (the final answer of a passing trial of one side and of a
failing trial of the other) and why the failing side failed. Answers are read from the runs
of the first --answers cases (default 20; 0 reads none). The gate's decision with its
statistics is svc gate.

Exit codes: 0 compared; 1 with --exit-code, some case broke; 2 usage or service error.`

// RunDiff is `svc diff`.
func RunDiff(ctx context.Context, x *cli, args []string) (int, error) {
	fs := newFlagSet(x, "diff", diffSynopsis)
	var cf clientFlags
	cf.register(fs, x.getenv)
	answers := fs.Int("answers", 20, "read the answers of at most this many broke and fixed cases (two run reads each)")
	format := fs.String("format", formatTable, "output `format` of the broke and fixed cases: table, csv, jsonl or md")
	exitCode := fs.Bool("exit-code", false, "exit 1 when a case broke")
	asJSON := fs.Bool("json", false, "print the service's ScorecardDiff as JSON")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return 0, err
	}
	if len(pos) != 2 {
		return 0, fmt.Errorf("%w: want a baseline and a candidate scorecard id, got %d arguments", errUsage, len(pos))
	}
	if err := checkFormat(*format); err != nil {
		return 0, err
	}
	if *answers < 0 {
		return 0, fmt.Errorf("%w: --answers must not be negative", errUsage)
	}
	c, err := cf.client(x.getenv)
	if err != nil {
		return 0, err
	}
	d, raw, err := c.ScorecardDiff(ctx, pos[0], pos[1])
	if err != nil {
		return 0, err
	}
	code := exitOK
	var moved []gate.Transition // broke, then fixed, each by case id
	for _, change := range []string{gate.ChangeBroke, gate.ChangeFixed} {
		for _, t := range d.CaseTransitions {
			if t.Change == change {
				moved = append(moved, t)
			}
		}
	}
	if *exitCode && slices.ContainsFunc(moved, func(t gate.Transition) bool { return t.Change == gate.ChangeBroke }) {
		code = exitVerdict
	}
	if *asJSON {
		writeJSON(x.stdout, raw)
		return code, nil
	}
	var sides [2]map[string][]eval.CaseRow
	if *answers > 0 && len(moved) > 0 {
		for i, id := range pos {
			sc, _, err := (&batchReader{c: c, id: id}).detail(ctx)
			if err != nil {
				return 0, err
			}
			sides[i] = rowsByCase(sc.Scorecard)
		}
	}
	sh := &sheet{cols: []column{
		{head: "CASE", key: "case"},
		{head: "CHANGE", key: "change"},
		{head: "BASELINE", key: "baseline"},
		{head: "CANDIDATE", key: "candidate"},
		{head: "CRITICAL", key: "critical"},
		{head: "BASELINE ANSWER", key: "baselineAnswer", clip: 40},
		{head: "CANDIDATE ANSWER", key: "candidateAnswer", clip: 40},
		{head: "FAILING", key: "failing"},
		{head: "DETAIL", key: "detail", clip: 60},
	}}
	for i, t := range moved {
		var ba, ca, metric, detail any
		if i < *answers && sides[0] != nil {
			// The side that passes shows a passing trial's answer, the
			// other a failing trial's, with why it failed.
			bPass, cPass := t.Change == gate.ChangeBroke, t.Change == gate.ChangeFixed
			bRow, bOK := pickTrial(sides[0][t.CaseID], bPass)
			cRow, cOK := pickTrial(sides[1][t.CaseID], cPass)
			if bOK {
				ba = answerOf(ctx, c, bRow.RunID)
			}
			if cOK {
				ca = answerOf(ctx, c, cRow.RunID)
			}
			failing := cRow
			if t.Change == gate.ChangeFixed {
				failing = bRow
			}
			if m, d := whyNot(failing); bOK && cOK {
				metric, detail = m, d
			}
		}
		sh.add(t.CaseID, t.Change, fmt.Sprintf("%d/%d", t.BaselinePasses, t.BaselineTrials),
			fmt.Sprintf("%d/%d", t.CandidatePasses, t.CandidateTrials), t.Critical, ba, ca, metric, detail)
	}
	if *format != formatTable {
		return code, sh.write(x.stdout, *format)
	}
	renderDiffHead(x, d)
	if len(moved) > 0 {
		fmt.Fprintln(x.stdout, "\nCases that broke or were fixed (passing trials / trials; a passing trial's answer on the side that passes, a failing one's on the other):")
		sh.indent = "  "
		if !slices.ContainsFunc(moved, func(t gate.Transition) bool { return t.Critical }) {
			sh.drop("critical")
		}
		sh.write(x.stdout, formatTable)
		if len(moved) > *answers {
			fmt.Fprintf(x.stdout, "  (answers of the first %d of %d cases; --answers %d for all)\n", *answers, len(moved), len(moved))
		}
	}
	return code, nil
}

// renderDiffHead writes the sides, the experiment, the transition counts
// and the metrics.
func renderDiffHead(x *cli, d gate.ScorecardDiff) {
	w := x.stdout
	fmt.Fprintf(w, "baseline %s -> candidate %s: comparability %s\n", d.Baseline.ID, d.Candidate.ID, d.Comparability)
	tw := newTable(w)
	for _, s := range []struct {
		name string
		ref  gate.SideRef
	}{{"baseline", d.Baseline}, {"candidate", d.Candidate}} {
		fmt.Fprintf(tw, "  %s\t%s\tharness %s\tdataset %s\t%s, %d %s\n", s.name, s.ref.ID, s.ref.Harness, s.ref.Dataset,
			s.ref.Status, s.ref.Cases, plural(s.ref.Cases, "case"))
	}
	tw.Flush()
	var axes []string
	for _, a := range gate.Axes() {
		if v, ok := d.Experiment[a]; ok && v != gate.Held {
			axes = append(axes, a+" "+v)
		}
	}
	if len(axes) > 0 {
		fmt.Fprintf(w, "  varied: %s\n", strings.Join(axes, ", "))
	}
	counts := map[string]int{}
	for _, t := range d.CaseTransitions {
		counts[t.Change]++
	}
	var parts []string
	for _, ch := range []string{gate.ChangeBroke, gate.ChangeFixed, gate.ChangeStillPassing, gate.ChangeStillFailing, gate.ChangeAdded, gate.ChangeRemoved} {
		parts = append(parts, fmt.Sprintf("%d %s", counts[ch], strings.ReplaceAll(ch, "_", " ")))
	}
	fmt.Fprintf(w, "\nCases: %s\n", strings.Join(parts, ", "))
	if len(d.Metrics) == 0 {
		return
	}
	fmt.Fprintln(w, "\nMetrics (pass rate, or mean without pass verdicts):")
	m := &sheet{indent: "  ", cols: []column{{head: "METRIC"}, {head: "BASELINE"}, {head: "CANDIDATE"}, {head: "DELTA"}, {head: "CHANGE"}}}
	for _, md := range d.Metrics {
		var b, c, delta any = md.Baseline, md.Candidate, signed(md.Delta)
		if md.Basis == gate.BasisPassRate && md.BaselinePassRate != nil && md.CandidatePassRate != nil && md.PassRateDelta != nil {
			b, c, delta = *md.BaselinePassRate, *md.CandidatePassRate, signed(*md.PassRateDelta)
		}
		switch md.Change {
		case gate.MetricAdded:
			b, delta = nil, nil
		case gate.MetricRemoved:
			c, delta = nil, nil
		}
		change := md.Change
		if md.NotSignificant() {
			change += " (n.s.)" // it moved, but its interval includes 0
		}
		m.add(md.Metric, b, c, delta, change)
	}
	m.write(w, formatTable)
}

// rowsByCase groups a detail read's rows by case, each by trial.
func rowsByCase(rows []eval.CaseRow) map[string][]eval.CaseRow {
	out := map[string][]eval.CaseRow{}
	for _, r := range rows {
		out[r.CaseID] = append(out[r.CaseID], r)
	}
	for _, rs := range out {
		slices.SortFunc(rs, func(a, b eval.CaseRow) int { return cmp.Compare(a.Trial, b.Trial) })
	}
	return out
}

// pickTrial returns the first trial that passes (pass) or does not, else
// the first trial; false when the case has no trial.
func pickTrial(rows []eval.CaseRow, pass bool) (eval.CaseRow, bool) {
	for _, r := range rows {
		if (verdictLetter(r) == 'P') == pass {
			return r, true
		}
	}
	if len(rows) == 0 {
		return eval.CaseRow{}, false
	}
	return rows[0], true
}

// answerOf is a run's final answer (its output when it has no extracted
// one), or a note saying why there is none.
func answerOf(ctx context.Context, c *client.Client, runID string) string {
	if runID == "" {
		return "(no run)"
	}
	run, _, err := c.Run(ctx, runID)
	if err != nil {
		return "(unreadable: " + err.Error() + ")"
	}
	r := run.Result
	switch {
	case r == nil && run.Error != nil:
		return "(no result: " + run.Error.Message + ")"
	case r == nil:
		return "(no result)"
	case r.Evidence != nil && r.Evidence.FinalAnswer != "":
		return r.Evidence.FinalAnswer
	case r.Snapshot != nil && r.Snapshot.Output != "":
		return r.Snapshot.Output
	}
	return "(empty)"
}
