package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"svc/internal/client"
	"svc/internal/domain/eval"
	"svc/internal/domain/scorecardwire"
)

// runScorecardList is `svc scorecard list`: GET /scorecards, newest first.
func runScorecardList(ctx context.Context, x *cli, args []string) (int, error) {
	fs := newFlagSet(x, "scorecard list", scorecardSynopsis)
	var cf clientFlags
	cf.register(fs, x.getenv)
	status := fs.String("status", "", "only batches in these `states` (comma-separated: queued, running, succeeded, failed, cancelled, superseded)")
	dataset := fs.String("dataset", "", "only batches of this dataset `id`")
	harness := fs.String("harness", "", "only batches of this harness `id`")
	kind := fs.String("kind", "", "only scorecards or experiments")
	limit := fs.Int("limit", 20, "at most this many, 1 to 500")
	cursor := fs.String("cursor", "", "the page after the one that printed this `cursor`")
	format := fs.String("format", formatTable, "output `format`: table, csv, jsonl or md")
	asJSON := fs.Bool("json", false, "print the service's JSON array")
	if err := parseNone(fs, args); err != nil {
		return 0, err
	}
	if err := checkFormat(*format); err != nil {
		return 0, err
	}
	if *limit < 1 || *limit > 500 {
		return 0, fmt.Errorf("%w: --limit %d: want 1 to 500", errUsage, *limit)
	}
	c, err := cf.client(x.getenv)
	if err != nil {
		return 0, err
	}
	list, raw, next, err := c.ListScorecards(ctx, client.ScorecardFilter{Status: *status, DatasetID: *dataset, HarnessID: *harness, Kind: *kind, Cursor: *cursor, Limit: *limit})
	if err != nil {
		return 0, err
	}
	if *asJSON {
		writeJSON(x.stdout, raw)
		return exitOK, nil
	}
	sh := &sheet{cols: []column{
		{head: "ID", key: "id"},
		{head: "STATUS", key: "status"},
		{head: "DATASET", key: "dataset"},
		{head: "HARNESS", key: "harness"},
		{head: "TRIALS", key: "trials"},
		{head: "DONE", key: "done"},
		{head: "TOTAL", key: "total"},
		{head: "PASSED", key: "passed"},
		{head: "FAILED", key: "failed"},
		{head: "PASS RATE", key: "passRate"},
		{head: "CREATED", key: "createdAt"},
	}}
	for _, sc := range list {
		var rate any
		if m, ok := sc.Summary[casePassMetric]; ok && m.PassRate != nil {
			rate = *m.PassRate
		}
		p := sc.Progress
		sh.add(sc.ID, string(sc.Status), sc.Dataset.String(), sc.Harness.String(), sc.Trials, p.Done, p.Total, p.Passed, p.Failed, rate, sc.CreatedAt)
	}
	if *format == formatTable && len(list) == 0 {
		fmt.Fprintln(x.stdout, "No scorecards.")
		return exitOK, nil
	}
	if err := sh.write(x.stdout, *format); err != nil {
		return 0, err
	}
	if next != "" {
		fmt.Fprintf(x.stderr, "more: svc scorecard list --cursor %s\n", next)
	}
	return exitOK, nil
}

// casePassMetric is the summary's metric of case verdicts.
const casePassMetric = "casePass"

const scoreHelp = "a judge as `id[@version]` whose verdicts the pass replaces; repeat for several"

// runScorecardScore is `svc scorecard score`: POST /scorecards/:id/score,
// then with --wait the pass's end.
func runScorecardScore(ctx context.Context, x *cli, args []string) (int, error) {
	fs := newFlagSet(x, "scorecard score", scorecardSynopsis)
	var cf clientFlags
	cf.register(fs, x.getenv)
	var judges listFlag
	fs.Var(&judges, "judge", scoreHelp)
	wait := fs.Bool("wait", false, "wait until the scoring pass is over")
	timeout := fs.Duration("timeout", 0, "with --wait, give up after this long (the pass keeps running); 0 waits for ever")
	asJSON := fs.Bool("json", false, "print the record as JSON (with --wait, the final detail read)")
	arg, err := parseOne(fs, args, "scorecard id")
	if err != nil {
		return 0, err
	}
	if len(judges) == 0 {
		return 0, fmt.Errorf("%w: --judge is required: the judges whose verdicts the pass replaces", errUsage)
	}
	if *timeout < 0 || (*timeout > 0 && !*wait) {
		return 0, fmt.Errorf("%w: --timeout is a positive duration and goes with --wait", errUsage)
	}
	req := scorecardwire.ScoreRequest{}
	for _, j := range judges {
		sel, err := judgeSel(j)
		if err != nil {
			return 0, err
		}
		req.Judges = append(req.Judges, sel)
	}
	c, err := cf.client(x.getenv)
	if err != nil {
		return 0, err
	}
	id := arg
	r := &batchReader{c: c, id: id}
	// The revisions before the pass: one more after it means it succeeded.
	before, _, err := r.light(ctx)
	if err != nil {
		return 0, err
	}
	sc, raw, err := c.ScoreScorecard(ctx, id, req)
	if err != nil {
		return 0, err
	}
	pass := sc.ScoringInFlight
	if !*wait {
		if *asJSON {
			writeJSON(x.stdout, raw)
		} else {
			fmt.Fprintln(x.stdout, id)
		}
		if pass != "" {
			fmt.Fprintf(x.stderr, "svc scorecard: scoring pass %s started on %s\n", pass, id)
		}
		return exitOK, nil
	}
	return waitScoring(ctx, x, r, *timeout, pass, len(before.Scoring), *asJSON)
}

// waitScoring waits for scoring pass `pass` of r's batch to end, and says
// how it ended: a new revision (exit 0), or none (exit 1, with the
// timeline's reason).
func waitScoring(ctx context.Context, x *cli, r *batchReader, timeout time.Duration, pass string, revisions int, asJSON bool) (int, error) {
	pr := &progress{x: x, silent: true}
	start := time.Now()
	if pass != "" {
		pr.note(fmt.Sprintf("scoring pass %s started on %s", pass, r.id))
	}
	sc, _, err := poll(ctx, x, r, timeout, pr, func(sc eval.Scorecard) bool {
		return sc.ScoringInFlight == "" || (pass != "" && sc.ScoringInFlight != pass)
	})
	if err != nil {
		return 0, err
	}
	if asJSON {
		_, raw, err := r.retry(ctx, x, pr, r.detail)
		if err != nil {
			return 0, err
		}
		writeJSON(x.stdout, raw)
	} else {
		fmt.Fprintln(x.stdout, r.id)
	}
	if len(sc.Scoring) > revisions {
		rev := sc.Scoring[len(sc.Scoring)-1]
		fmt.Fprintf(x.stderr, "svc scorecard: %s scored: revision %d in %s\n", r.id, rev.Revision, clock(time.Since(start)))
		return exitOK, nil
	}
	msg := fmt.Sprintf("svc scorecard: %s: the scoring pass added no revision", r.id)
	for i := len(sc.Steps) - 1; i >= 0; i-- {
		if st := sc.Steps[i]; st.Phase == eval.PhaseJudges && st.Status == stepFailed {
			msg += ": " + st.Message
			break
		}
	}
	fmt.Fprintln(x.stderr, msg)
	return exitVerdict, nil
}

// judgeSel reads id[@version] of a judge; no version is the service's
// default (latest).
func judgeSel(v string) (scorecardwire.JudgeSel, error) {
	id, version, found := strings.Cut(v, "@")
	if id == "" || (found && version == "") {
		return scorecardwire.JudgeSel{}, fmt.Errorf("%w: --judge %q: want id or id@version", errUsage, v)
	}
	return scorecardwire.JudgeSel{ID: id, Version: version}, nil
}

// runScorecardCancel is `svc scorecard cancel`.
func runScorecardCancel(ctx context.Context, x *cli, args []string) (int, error) {
	fs := newFlagSet(x, "scorecard cancel", scorecardSynopsis)
	var cf clientFlags
	cf.register(fs, x.getenv)
	asJSON := fs.Bool("json", false, "print the cancelled record as JSON")
	arg, c, err := cf.oneArg(fs, args, "scorecard id", x.getenv)
	if err != nil {
		return 0, err
	}
	sc, raw, err := c.CancelScorecard(ctx, arg)
	if err != nil {
		return 0, err
	}
	if *asJSON {
		writeJSON(x.stdout, raw)
	} else {
		fmt.Fprintln(x.stdout, progressLine(sc))
	}
	return exitOK, nil
}
