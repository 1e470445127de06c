package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"svc/internal/domain/gate"
	"svc/internal/domain/scorecardwire"
)

const gateSynopsis = `usage: svc gate --baseline <id> --candidate <id> [--policy file.json] [policy flags] [--strict] [--json] [--url URL]

Decides whether the candidate scorecard may replace the baseline (POST /scorecards/gate;
rules in docs/gate.md) and prints the decision: the outcome, its reasons, the cases that
pass less often with their p- and q-values, the transitions, the metric deltas with their
bootstrap intervals, the experiment axes and the notes. Policy flags override the file.
When the policy's levels are out of the case tests' reach (an underpowered note: too few
trials for alpha, or for fdrAlpha over this many cases), a warning on stderr says how many
trials would do; --strict then exits 2 whatever the outcome.

Exit codes: 0 pass; 1 block, blocked_missing or not_comparable; 2 usage or service error,
or an underpowered decision with --strict.`

// RunGate is `svc gate`.
func RunGate(ctx context.Context, x *cli, args []string) (int, error) {
	fs := newFlagSet(x, "gate", gateSynopsis)
	var cf clientFlags
	cf.register(fs, x.getenv)
	var (
		baseline, candidate, policyFile string
		asJSON, strict                  bool
		pf                              policyFlags
	)
	fs.StringVar(&baseline, "baseline", "", "id of the baseline scorecard (required)")
	fs.StringVar(&candidate, "candidate", "", "id of the candidate scorecard (required)")
	fs.StringVar(&policyFile, "policy", "", "JSON `file` holding a gate policy (docs/gate.md); the policy flags override its fields")
	fs.BoolVar(&asJSON, "json", false, "print the decision as the service's JSON instead of the table")
	fs.BoolVar(&strict, "strict", false, "exit 2 when the decision is underpowered: no case regression can be significant with these trials under this policy")
	pf.register(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return 0, err
	}
	if len(pos) > 0 {
		return 0, fmt.Errorf("%w: unexpected arguments %q; name the scorecards with --baseline and --candidate", errUsage, pos)
	}
	if baseline == "" || candidate == "" {
		return 0, fmt.Errorf("%w: --baseline and --candidate are both required", errUsage)
	}
	policy, err := readPolicy(policyFile)
	if err != nil {
		return 0, err
	}
	pf.apply(fs, &policy)
	if err := policy.Validate(); err != nil {
		return 0, fmt.Errorf("%w: %v", errUsage, err)
	}
	c, err := cf.client(x.getenv)
	if err != nil {
		return 0, err
	}

	dec, raw, err := c.Gate(ctx, scorecardwire.GateRequest{Baseline: baseline, Candidate: candidate, Policy: policy})
	if err != nil {
		return 0, err
	}
	if asJSON {
		writeJSON(x.stdout, raw)
	} else {
		// The diff adds what the decision does not carry: every metric, and
		// the transitions of cases on one side only. Without it the table
		// still shows the decision.
		var diff *gate.ScorecardDiff
		if d, _, err := c.ScorecardDiff(ctx, baseline, candidate); err != nil {
			fmt.Fprintf(x.stderr, "svc gate: the diff is unavailable (%v); showing the decision alone\n", err)
		} else {
			diff = &d
		}
		renderGate(x.stdout, dec, diff)
	}
	// Said on stderr in both modes, so that a CI log shows it even when
	// stdout is the JSON or is kept in a file.
	underpowered := false
	for _, n := range dec.Notes {
		if n.Code == gate.NoteUnderpowered {
			underpowered = true
			fmt.Fprintf(x.stderr, "svc gate: warning: underpowered: %s\n", n.Message)
		}
	}
	if strict && underpowered {
		fmt.Fprintf(x.stderr, "svc gate: --strict: the policy cannot reach its levels with these trials (outcome %s); exit 2\n", dec.Outcome)
		return exitProblem, nil
	}
	switch dec.Outcome {
	case gate.OutcomePass:
		return exitOK, nil
	case gate.OutcomeBlock, gate.OutcomeBlockedMissing, gate.OutcomeNotComparable:
		return exitVerdict, nil
	}
	return 0, fmt.Errorf("the service answered outcome %q, which this svc does not know; upgrade svc", dec.Outcome)
}

// policyFlags are the gate policy's flags; each overrides the file's field
// only when given, so an unset flag never erases a file's value.
type policyFlags struct {
	alpha, fdrAlpha, minDelta float64
	maxRegressions            int
	allowConfounds            string
	allowPartial              bool
	metric                    string
}

func (pf *policyFlags) register(fs *flag.FlagSet) {
	fs.Float64Var(&pf.alpha, "alpha", 0, "per-case significance level, in (0, 1); default 0.05")
	fs.Float64Var(&pf.fdrAlpha, "fdr-alpha", 0, "also require a Benjamini-Hochberg q-value of at most this, in (0, 1); default unset")
	fs.IntVar(&pf.maxRegressions, "max-regressions", 0, "how many significant case regressions still pass; default 0")
	fs.Float64Var(&pf.minDelta, "min-delta", 0, "how far the gate metric's paired delta may fall before a significant drop blocks; default 0")
	fs.StringVar(&pf.allowConfounds, "allow-confounds", "", "comma-separated `axes` that may differ: dataset, grading, judges, policy, runtime")
	fs.BoolVar(&pf.allowPartial, "allow-partial", false, "let baseline cases be missing from the candidate (critical cases excepted)")
	fs.StringVar(&pf.metric, "metric", "", "the gate metric; default casePass")
}

// apply writes the flags given on the command line over p.
func (pf *policyFlags) apply(fs *flag.FlagSet, p *gate.GatePolicy) {
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "alpha":
			p.Alpha = pf.alpha
		case "fdr-alpha":
			v := pf.fdrAlpha
			p.FDRAlpha = &v
		case "max-regressions":
			v := pf.maxRegressions
			p.MaxRegressions = &v
		case "min-delta":
			p.MinDelta = pf.minDelta
		case "allow-confounds":
			p.AllowConfounds = splitList(pf.allowConfounds)
		case "allow-partial":
			p.AllowPartial = pf.allowPartial
		case "metric":
			p.Metric = pf.metric
		}
	})
}

// readPolicy reads a policy file; an unknown field is refused (by
// GatePolicy's own decoding), so a typo (allowPartail) cannot silently
// loosen the gate. allow_partial is read as allowPartial.
func readPolicy(path string) (gate.GatePolicy, error) {
	var p gate.GatePolicy
	if path == "" {
		return p, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return p, fmt.Errorf("%w: --policy: %v", errUsage, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return p, fmt.Errorf("%w: --policy %s: not a gate policy: %v", errUsage, path, err)
	}
	if dec.More() {
		return p, fmt.Errorf("%w: --policy %s: more than one JSON value", errUsage, path)
	}
	return p, nil
}

// splitList splits a comma-separated flag value, dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// outcomeLines are the first line of a decision, by outcome.
var outcomeLines = map[string]string{
	gate.OutcomePass:           "PASS: candidate %s may replace baseline %s",
	gate.OutcomeBlock:          "BLOCK: candidate %s regressed against baseline %s",
	gate.OutcomeBlockedMissing: "BLOCKED_MISSING: candidate %s lacks cases that baseline %s decided",
	gate.OutcomeNotComparable:  "NOT_COMPARABLE: candidate %s cannot be compared with baseline %s",
}

// renderGate writes a decision for people: the outcome line first, then
// why, then the evidence. diff may be nil.
func renderGate(w io.Writer, dec gate.Decision, diff *gate.ScorecardDiff) {
	line, ok := outcomeLines[dec.Outcome]
	if !ok {
		line = strings.ToUpper(dec.Outcome) + ": candidate %s against baseline %s"
	}
	fmt.Fprintf(w, line+"\n", dec.Candidate.ID, dec.Baseline.ID)
	tw := newTable(w)
	for _, s := range []struct {
		name string
		ref  gate.SideRef
		pin  gate.ScoringPin
	}{{"baseline", dec.Baseline, dec.BaselineScoring}, {"candidate", dec.Candidate, dec.CandidateScoring}} {
		fmt.Fprintf(tw, "  %s\t%s\tharness %s@%s\tdataset %s@%s\t%s, %d %s, scoring revision %d\n",
			s.name, s.ref.ID, s.ref.Harness.ID, s.ref.Harness.Version, s.ref.Dataset.ID, s.ref.Dataset.Version,
			s.ref.Status, s.ref.Cases, plural(s.ref.Cases, "case"), s.pin.Revision)
	}
	tw.Flush()
	fmt.Fprintf(w, "  comparability %s; policy %s\n", dec.Comparability, policyText(dec.Policy))

	if len(dec.Reasons) > 0 {
		fmt.Fprintln(w, "\nReasons:")
		writeReasons(w, dec.Reasons)
	}
	writeCases(w, dec, diff)
	writeTransitions(w, dec, diff)
	writeMetrics(w, dec, diff)
	if len(dec.Experiment) > 0 {
		fmt.Fprintln(w, "\nExperiment (what differs between the sides):")
		tw := newTable(w)
		for _, axis := range gate.Axes() {
			if v, ok := dec.Experiment[axis]; ok {
				fmt.Fprintf(tw, "  %s\t%s\n", axis, v)
			}
		}
		tw.Flush()
	}
	if len(dec.Notes) > 0 {
		fmt.Fprintln(w, "\nNotes:")
		writeReasons(w, dec.Notes)
	}
}

// table aligns tab-separated cells into columns, like tabwriter, and
// trims the padding an empty last cell would leave at the end of a line.
type table struct {
	w   io.Writer
	buf bytes.Buffer
	tw  *tabwriter.Writer
}

func newTable(w io.Writer) *table {
	t := &table{w: w}
	t.tw = tabwriter.NewWriter(&t.buf, 0, 4, 2, ' ', 0)
	return t
}

// Write adds cells; rows end with a newline.
func (t *table) Write(p []byte) (int, error) { return t.tw.Write(p) }

// Flush writes the aligned rows.
func (t *table) Flush() {
	t.tw.Flush()
	for _, line := range strings.SplitAfter(t.buf.String(), "\n") {
		if line == "" {
			continue
		}
		io.WriteString(t.w, strings.TrimRight(line, " \n"))
		if strings.HasSuffix(line, "\n") {
			io.WriteString(t.w, "\n")
		}
	}
	t.buf.Reset()
}

// policyText is the applied policy on one line.
func policyText(p gate.GatePolicy) string {
	parts := []string{"alpha " + num(p.Alpha)}
	if p.FDRAlpha != nil {
		parts = append(parts, "fdrAlpha "+num(*p.FDRAlpha))
	}
	if p.MaxRegressions != nil {
		parts = append(parts, fmt.Sprintf("maxRegressions %d", *p.MaxRegressions))
	}
	parts = append(parts, "minDelta "+num(p.MinDelta))
	if p.Metric != "" {
		parts = append(parts, "metric "+p.Metric)
	}
	if len(p.AllowConfounds) > 0 {
		parts = append(parts, "allowConfounds "+strings.Join(p.AllowConfounds, ","))
	}
	if p.AllowPartial {
		parts = append(parts, "allowPartial")
	}
	return strings.Join(parts, ", ")
}

func writeReasons(w io.Writer, rs []gate.Reason) {
	tw := newTable(w)
	for _, r := range rs {
		fmt.Fprintf(tw, "  %s\t%s\n", r.Code, r.Message)
	}
	tw.Flush()
}

// writeCases writes the cases that pass less often in the candidate, the
// significant regressions first, and the baseline cases it lacks.
func writeCases(w io.Writer, dec gate.Decision, diff *gate.ScorecardDiff) {
	var worse []gate.CaseTest
	for _, t := range dec.Tests {
		if t.CandidatePasses*t.BaselineTrials < t.BaselinePasses*t.CandidateTrials {
			worse = append(worse, t)
		}
	}
	slices.SortStableFunc(worse, func(a, b gate.CaseTest) int {
		if a.Significant != b.Significant {
			if a.Significant {
				return -1
			}
			return 1
		}
		switch {
		case a.PValue < b.PValue:
			return -1
		case a.PValue > b.PValue:
			return 1
		}
		return strings.Compare(a.CaseID, b.CaseID)
	})
	var removed []gate.Transition
	if diff != nil {
		for _, t := range diff.CaseTransitions {
			if t.Change == gate.ChangeRemoved {
				removed = append(removed, t)
			}
		}
	}
	if len(dec.Tests) == 0 && len(removed) == 0 {
		return
	}
	if len(worse) == 0 && len(removed) == 0 {
		fmt.Fprintf(w, "\nNo case passes less often in the candidate (%d %s tested).\n", len(dec.Tests), plural(len(dec.Tests), "case"))
		return
	}
	fmt.Fprintf(w, "\nCases that pass less often in the candidate (%d of %d tested; %d significant %s):\n",
		len(worse), len(dec.Tests), dec.Regressions, plural(dec.Regressions, "regression"))
	tw := newTable(w)
	fmt.Fprintln(tw, "  CASE\tCHANGE\tBASELINE\tCANDIDATE\tP\tQ\tSIGNIFICANT\tCRITICAL")
	for _, t := range worse {
		q := "-"
		if t.QValue != nil {
			q = num(*t.QValue)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%d/%d\t%d/%d\t%s\t%s\t%s\t%s\n", t.CaseID, t.Change,
			t.BaselinePasses, t.BaselineTrials, t.CandidatePasses, t.CandidateTrials, num(t.PValue), q, yes(t.Significant), yes(t.Critical))
	}
	for _, t := range removed {
		fmt.Fprintf(tw, "  %s\t%s\t%d/%d\t-\t-\t-\t-\t%s\n", t.CaseID, t.Change, t.BaselinePasses, t.BaselineTrials, yes(t.Critical))
	}
	tw.Flush()
}

// writeTransitions counts the cases by change: from the diff, which also
// has the cases on one side only, else from the decision's tests.
func writeTransitions(w io.Writer, dec gate.Decision, diff *gate.ScorecardDiff) {
	counts := map[string]int{}
	scope := "cases"
	if diff != nil {
		for _, t := range diff.CaseTransitions {
			counts[t.Change]++
		}
	} else {
		for _, t := range dec.Tests {
			counts[t.Change]++
		}
		scope = "cases on both sides"
	}
	if len(counts) == 0 {
		return
	}
	var parts []string
	for _, c := range []string{gate.ChangeBroke, gate.ChangeFixed, gate.ChangeStillPassing, gate.ChangeStillFailing, gate.ChangeAdded, gate.ChangeRemoved} {
		parts = append(parts, fmt.Sprintf("%d %s", counts[c], strings.ReplaceAll(c, "_", " ")))
	}
	fmt.Fprintf(w, "\nTransitions (%s): %s\n", scope, strings.Join(parts, ", "))
}

// writeMetrics writes every metric of the diff (else the gate metric):
// the sides' pass rates (or means), the deltas, the paired bootstrap
// interval and the change, "unchanged (n.s.)" when the metric moved but
// its interval includes 0.
func writeMetrics(w io.Writer, dec gate.Decision, diff *gate.ScorecardDiff) {
	var ms []gate.MetricDelta
	switch {
	case diff != nil:
		ms = diff.Metrics
	case dec.Metric != nil:
		ms = []gate.MetricDelta{*dec.Metric}
	}
	if len(ms) == 0 {
		return
	}
	level := gate.BootstrapLevel
	for _, m := range ms {
		if m.CI != nil {
			level = m.CI.Level
			break
		}
	}
	fmt.Fprintf(w, "\nMetrics (pass rate, or mean without pass verdicts; paired over cases on both sides, %s%% bootstrap interval):\n", num(level*100))
	tw := newTable(w)
	fmt.Fprintln(tw, "  METRIC\tBASIS\tBASELINE\tCANDIDATE\tDELTA\tPAIRED\tINTERVAL\tCHANGE")
	for _, m := range ms {
		name := m.Metric
		if name == dec.Policy.Metric {
			name += " (gate)"
		}
		b, c, d := num(m.Baseline), num(m.Candidate), signed(m.Delta)
		if m.Basis == gate.BasisPassRate && m.BaselinePassRate != nil && m.CandidatePassRate != nil && m.PassRateDelta != nil {
			b, c, d = num(*m.BaselinePassRate), num(*m.CandidatePassRate), signed(*m.PassRateDelta)
		}
		if m.Change == gate.MetricAdded {
			b, d = "-", "-"
		}
		if m.Change == gate.MetricRemoved {
			c, d = "-", "-"
		}
		paired, interval := "-", "-"
		if m.PairedDelta != nil {
			paired = signed(*m.PairedDelta)
		}
		if m.CI != nil {
			interval = "[" + signed(m.CI.Lo) + ", " + signed(m.CI.Hi) + "]"
		}
		basis := m.Basis
		if basis == "" {
			basis = "-"
		}
		change := m.Change
		if m.NotSignificant() {
			change += " (n.s.)"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, basis, b, c, d, paired, interval, change)
	}
	tw.Flush()
}

// num formats a statistic with four significant digits: 0.05, 0.6667, 1.
func num(f float64) string { return strconv.FormatFloat(f, 'g', 4, 64) }

// signed is num with an explicit + on positive values, and 0 for -0.
func signed(f float64) string {
	if f == 0 {
		return "0"
	}
	if f > 0 {
		return "+" + num(f)
	}
	return num(f)
}

func yes(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// plural returns word, with an s unless n is 1.
func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
