package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"svc/internal/client"
	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
	"svc/internal/domain/scorecardwire"
)

const scorecardSynopsis = `usage: svc scorecard run --dataset id@version --harness id@version [flags] [--wait] [--json]
       svc scorecard wait <id> [--timeout d] [--fail-on-dispatch-errors] [--json]
       svc scorecard list [--status s] [--dataset id] [--harness id] [--limit n] [--format f] [--json]
       svc scorecard show <id> [--failed] [--format table|csv|jsonl|md] [--json]
       svc scorecard get <id> [--json]
       svc scorecard score <id> --judge id[@version]... [--wait] [--json]
       svc scorecard cancel <id> [--json]

run submits a scorecard (POST /scorecards, docs/scorecards.md) and prints its id on stdout.
With --wait it then reads the batch's progress every second (a light read, not the per-case
table), shows it on stderr with each failing case as it happens, and prints the id once the
batch is over, so that ID=$(svc scorecard run ... --wait) works in a script. --json prints the
record instead of the id (with --wait, the final detail read). A version may be omitted (id
alone) to mean latest; the batch records the exact version.

wait waits for a scorecard submitted earlier, as run --wait does.
list lists the workspace's scorecards, newest first.
show prints one scorecard case by case: the trials of each case as a string (P pass, F fail,
E error, C cancelled, . pending) and why the first trial that did not pass failed; --failed keeps the cases
with a trial that did not pass.
get prints one scorecard's status, progress and summary.
score starts a re-scoring pass with the judges named (their verdicts are replaced, the others
kept); --wait waits for it. cancel stops a batch that is not over.

Exit codes: 0 done (submitted; succeeded with --wait and wait; a scoring pass that added a
revision); 1 the batch failed, was cancelled or superseded, the scoring pass failed, or some
case-trials could not be dispatched with --fail-on-dispatch-errors; 2 usage or service error,
or --timeout passed.`

// retryFor is how long --wait keeps reading through a service that does
// not answer (a restart, a proxy hiccup) before it gives up.
const retryFor = time.Minute

// RunScorecard is `svc scorecard`: one subcommand per verb.
func RunScorecard(ctx context.Context, x *cli, args []string) (int, error) {
	return subcommand(ctx, x, scorecardSynopsis, []sub{
		{"run", runScorecardRun},
		{"wait", runScorecardWait},
		{"list", runScorecardList},
		{"show", runScorecardShow},
		{"get", runScorecardGet},
		{"score", runScorecardScore},
		{"cancel", runScorecardCancel},
	}, args)
}

// listFlag collects a repeatable flag; each value may also be a comma list.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	*l = append(*l, splitList(v)...)
	return nil
}

// runScorecardRun is `svc scorecard run`.
func runScorecardRun(ctx context.Context, x *cli, args []string) (int, error) {
	fs := newFlagSet(x, "scorecard run", scorecardSynopsis)
	var cf clientFlags
	cf.register(fs, x.getenv)
	var (
		dataset, harness, runtime           string
		judges, tags, ids, critical, prefix listFlag
		concurrency, trials, limit          int
		wait, asJSON, failOnDispatch        bool
		timeout                             time.Duration
	)
	fs.StringVar(&dataset, "dataset", "", "dataset as id@version (required)")
	fs.StringVar(&harness, "harness", "", "harness as id@version (required)")
	fs.Var(&judges, "judge", "a code judge as `id[@version]`; repeat for several")
	fs.StringVar(&runtime, "runtime", "", "a registered local runtime")
	fs.IntVar(&concurrency, "concurrency", 0, "cases in flight at once, 1 to 64 (default 4)")
	fs.IntVar(&trials, "trials", 0, "runs per case, 1 to 100 (default 1); the gate needs 3 or more to find a significant regression")
	fs.Var(&tags, "cases-tags", "select the cases with any of these `tags` (comma-separated)")
	fs.Var(&ids, "cases-ids", "select these case `ids` (comma-separated or repeated)")
	fs.IntVar(&limit, "limit", 0, "at most this many selected cases")
	fs.Var(&critical, "critical-case", "mark a case `id` critical: breaking it blocks a gate regardless of significance; repeatable")
	fs.Var(&prefix, "critical-prefix", "mark every case whose id starts with `prefix` critical; repeatable")
	fs.BoolVar(&wait, "wait", false, "wait until the batch is over, showing progress on stderr")
	fs.DurationVar(&timeout, "timeout", 0, "with --wait, give up after this long (the batch keeps running); 0 waits for ever")
	fs.BoolVar(&failOnDispatch, "fail-on-dispatch-errors", false, "with --wait, exit 1 when any case-trial could not be dispatched, even if the batch succeeded")
	fs.BoolVar(&asJSON, "json", false, "print the record as JSON instead of the id")
	err := parseNone(fs, args)
	if err != nil {
		return 0, err
	}
	req := scorecardwire.SubmitRequest{Runtime: runtime}
	if req.Dataset, err = parseRef("--dataset", dataset); err != nil {
		return 0, err
	}
	if req.Harness, err = parseRef("--harness", harness); err != nil {
		return 0, err
	}
	for _, j := range judges {
		r, err := parseRef("--judge", j)
		if err != nil {
			return 0, err
		}
		if !strings.Contains(j, "@") {
			r.Version = "" // the service's default for a judge
		}
		req.Judges = append(req.Judges, scorecardwire.JudgeSel{ID: r.ID, Version: r.Version})
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["concurrency"] {
		req.Concurrency = &concurrency
	}
	if set["trials"] {
		req.Trials = &trials
	}
	if len(tags) > 0 || len(ids) > 0 || set["limit"] {
		req.Cases = &scorecardwire.Selection{IDs: ids, Tags: tags, Limit: limit}
	}
	for _, id := range critical {
		req.CriticalCases = append(req.CriticalCases, eval.CaseMatcher{CaseID: id})
	}
	for _, p := range prefix {
		req.CriticalCases = append(req.CriticalCases, eval.CaseMatcher{Prefix: p})
	}
	if timeout < 0 || (timeout > 0 && !wait) {
		return 0, fmt.Errorf("%w: --timeout is a positive duration and goes with --wait", errUsage)
	}
	if failOnDispatch && !wait {
		return 0, fmt.Errorf("%w: --fail-on-dispatch-errors goes with --wait", errUsage)
	}
	c, err := cf.client(x.getenv)
	if err != nil {
		return 0, err
	}

	sc, raw, err := c.SubmitScorecard(ctx, req)
	if err != nil {
		return 0, err
	}
	if sc.ID == "" {
		return 0, errors.New("the service accepted the scorecard but answered no id")
	}
	if !wait {
		if asJSON {
			writeJSON(x.stdout, raw)
		} else {
			fmt.Fprintln(x.stdout, sc.ID)
		}
		return exitOK, nil
	}
	if sc, raw, err = waitScorecard(ctx, x, c, sc.ID, timeout, asJSON); err != nil {
		return 0, err
	}
	return finished(x, sc, raw, asJSON, failOnDispatch), nil
}

// finished prints a batch that is over (its id, or its record as JSON) and
// returns the exit code of its status: 1 unless it succeeded, and with
// failOnDispatch also when case-trials could not be dispatched. Failing
// cases get a hint on stderr naming the command that lists them.
func finished(x *cli, sc eval.Scorecard, raw []byte, asJSON, failOnDispatch bool) int {
	if asJSON {
		writeJSON(x.stdout, raw)
	} else {
		fmt.Fprintln(x.stdout, sc.ID)
	}
	code := exitOK
	if sc.Status != eval.ScorecardSucceeded {
		msg := fmt.Sprintf("svc scorecard: %s %s", sc.ID, sc.Status)
		if sc.Error != nil {
			if sc.Error.Phase != "" {
				msg += " in phase " + sc.Error.Phase
			}
			msg += ": " + sc.Error.Message
		}
		fmt.Fprintln(x.stderr, msg)
		code = exitVerdict
	}
	p := sc.Progress
	switch {
	case p.DispatchErrors > 0:
		msg := fmt.Sprintf("svc scorecard: %s: %d of %d case-trials could not be dispatched; they count as failed (svc scorecard show %s --failed)",
			sc.ID, p.DispatchErrors, p.Total, sc.ID)
		if failOnDispatch {
			msg += "; exit 1 for --fail-on-dispatch-errors"
			code = exitVerdict
		}
		fmt.Fprintln(x.stderr, msg)
	case p.Failed > 0:
		fmt.Fprintf(x.stderr, "svc scorecard: %s: %d of %d case-trials failed (svc scorecard show %s --failed)\n", sc.ID, p.Failed, p.Total, sc.ID)
	}
	return code
}

// runScorecardWait is `svc scorecard wait`.
func runScorecardWait(ctx context.Context, x *cli, args []string) (int, error) {
	fs := newFlagSet(x, "scorecard wait", scorecardSynopsis)
	var cf clientFlags
	cf.register(fs, x.getenv)
	timeout := fs.Duration("timeout", 0, "give up after this long (the batch keeps running); 0 waits for ever")
	failOnDispatch := fs.Bool("fail-on-dispatch-errors", false, "exit 1 when any case-trial could not be dispatched, even if the batch succeeded")
	asJSON := fs.Bool("json", false, "print the final record as JSON instead of the id")
	arg, err := parseOne(fs, args, "scorecard id")
	if err != nil {
		return 0, err
	}
	if *timeout < 0 {
		return 0, fmt.Errorf("%w: --timeout must not be negative", errUsage)
	}
	c, err := cf.client(x.getenv)
	if err != nil {
		return 0, err
	}
	sc, raw, err := waitScorecard(ctx, x, c, arg, *timeout, *asJSON)
	if err != nil {
		return 0, err
	}
	return finished(x, sc, raw, *asJSON, *failOnDispatch), nil
}

// parseRef reads id[@version]; no version means latest.
func parseRef(flagName, v string) (registry.Ref, error) {
	if v == "" {
		return registry.Ref{}, fmt.Errorf("%w: %s is required, as id@version", errUsage, flagName)
	}
	id, version, found := strings.Cut(v, "@")
	if !found {
		version = "latest"
	}
	if id == "" || version == "" {
		return registry.Ref{}, fmt.Errorf("%w: %s %q: want id@version (or id alone for latest)", errUsage, flagName, v)
	}
	return registry.Ref{ID: id, Version: version}, nil
}

// waitScorecard polls the batch's light read every x.poll until it is
// over, showing its progress and each failing case, and returns the final
// reading: with detail, the final detail read (the per-case table that
// --json prints).
func waitScorecard(ctx context.Context, x *cli, c *client.Client, id string, timeout time.Duration, detail bool) (eval.Scorecard, []byte, error) {
	r := &batchReader{c: c, id: id}
	pr := &progress{x: x}
	defer pr.end()
	sc, raw, err := poll(ctx, x, r, timeout, pr, func(sc eval.Scorecard) bool { return eval.ScorecardTerminal(sc.Status) })
	if err != nil || !detail || r.plain {
		return sc, raw, err
	}
	return r.retry(ctx, x, pr, r.detail)
}

// batchReader reads one batch: the light read while polling (progress,
// summary and steps, without the per-case table, so a poll costs the same
// whatever the batch's size), falling back for good to the detail read on
// a service that refuses ?view=summary.
type batchReader struct {
	c     *client.Client
	id    string
	plain bool // the service does not know the light read
}

// light is GET /scorecards/:id?view=summary.
func (r *batchReader) light(ctx context.Context) (eval.Scorecard, []byte, error) {
	if !r.plain {
		sc, raw, err := r.c.ScorecardSummary(ctx, r.id)
		var ae *client.Error
		if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest {
			return sc, raw, err
		}
		r.plain = true
	}
	return r.detail(ctx)
}

// detail is GET /scorecards/:id: the record with its per-case table.
func (r *batchReader) detail(ctx context.Context) (eval.Scorecard, []byte, error) {
	return r.c.Scorecard(ctx, r.id)
}

// retry calls read until it answers, retrying transient errors every
// x.poll for retryFor.
func (r *batchReader) retry(ctx context.Context, x *cli, pr *progress, read func(context.Context) (eval.Scorecard, []byte, error)) (eval.Scorecard, []byte, error) {
	var failingSince time.Time
	for {
		sc, raw, err := read(ctx)
		switch {
		case err == nil || !client.Transient(err) || ctx.Err() != nil:
			return sc, raw, err
		case failingSince.IsZero():
			failingSince = time.Now()
			pr.note(fmt.Sprintf("%v; retrying for up to %s", err, retryFor))
		case time.Since(failingSince) > retryFor:
			return sc, raw, fmt.Errorf("%v; gave up after %s", err, retryFor)
		}
		select {
		case <-ctx.Done():
			return sc, raw, ctx.Err()
		case <-time.After(x.poll):
		}
	}
}

// poll reads the batch's light read every x.poll until done says so, and
// returns that reading; pr shows each reading. Reads that fail
// transiently are retried for retryFor; an interrupt or the timeout leaves
// the batch running and says how to find it.
func poll(ctx context.Context, x *cli, r *batchReader, timeout time.Duration, pr *progress, done func(eval.Scorecard) bool) (eval.Scorecard, []byte, error) {
	var none eval.Scorecard
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	tick := time.NewTicker(x.poll)
	defer tick.Stop()
	var failingSince time.Time
	for {
		cur, raw, err := r.light(ctx)
		switch {
		case ctx.Err() != nil:
		case err == nil:
			failingSince = time.Time{}
			pr.read(cur)
			if done(cur) {
				return cur, raw, nil
			}
		case !client.Transient(err):
			return none, nil, err
		case failingSince.IsZero():
			failingSince = time.Now()
			pr.note(fmt.Sprintf("%v; retrying for up to %s", err, retryFor))
		case time.Since(failingSince) > retryFor:
			return none, nil, fmt.Errorf("%v; gave up after %s: the batch keeps running (svc scorecard get %s)", err, retryFor, r.id)
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return none, nil, fmt.Errorf("%s is not over after --timeout %s; it keeps running (svc scorecard get %s)", r.id, timeout, r.id)
			}
			return none, nil, fmt.Errorf("interrupted; %s keeps running (svc scorecard get %s)", r.id, r.id)
		case <-tick.C:
		}
	}
}

// progressLine is one reading of a batch: "sc_x running 450/2000 (22%) 440
// passed, 10 failed, 64 running, 41.3 cases/s, 0:11 elapsed, ETA 0:38".
// What the reading lacks is left out: the pace before the first case is
// done (or from a service that does not report it), the running count of
// a batch not running, the ETA of a batch that is over.
func progressLine(sc eval.Scorecard) string {
	p := sc.Progress
	pct := 0
	if p.Total > 0 {
		pct = p.Done * 100 / p.Total
	}
	s := fmt.Sprintf("%s %s %d/%d (%d%%) %d passed, %d failed", sc.ID, sc.Status, p.Done, p.Total, pct, p.Passed, p.Failed)
	if p.DispatchErrors > 0 {
		s += fmt.Sprintf(" (%d not dispatched)", p.DispatchErrors)
	}
	if p.Cancelled > 0 {
		s += fmt.Sprintf(", %d cancelled", p.Cancelled)
	}
	if p.Running > 0 || sc.Status == eval.ScorecardRunning {
		s += fmt.Sprintf(", %d running", p.Running)
	}
	if p.CasesPerSecond > 0 {
		s += ", " + rate(p.CasesPerSecond) + " cases/s"
	}
	if p.StartedAt != nil && p.UpdatedAt != nil && !p.UpdatedAt.Before(*p.StartedAt) {
		s += ", " + clock(p.UpdatedAt.Sub(*p.StartedAt)) + " elapsed"
	}
	if left := p.Total - p.Done; !eval.ScorecardTerminal(sc.Status) && p.CasesPerSecond > 0 && left > 0 {
		s += ", ETA " + clock(time.Duration(float64(left)/p.CasesPerSecond*float64(time.Second)))
	}
	return s
}

// rate prints cases per second: one decimal, or three significant digits
// below one a second, so a slow batch does not read 0.0.
func rate(r float64) string {
	if r >= 1 {
		return fmt.Sprintf("%.1f", r)
	}
	return fmt.Sprintf("%.3g", r)
}

// clock prints d as m:ss, or h:mm:ss from an hour, to the nearest second.
func clock(d time.Duration) string {
	sec := int64(d.Round(time.Second) / time.Second)
	if sec >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", sec/3600, sec/60%60, sec%60)
	}
	return fmt.Sprintf("%d:%02d", sec/60, sec%60)
}

// progress shows a batch's readings on stderr. On a terminal it rewrites
// one line with every new reading. Elsewhere (a CI log) it writes a line
// for the first reading, each change of status (so the final one too),
// and each further tenth of the batch done: a long batch logs a dozen
// lines, not one a second. Each case that fails with an error gets a line
// of its own as soon as a reading shows it (above the rewritten line on a
// terminal).
type progress struct {
	x     *cli
	last  string
	drawn bool // a rewritable line is on screen
	// What the log last showed.
	logged bool
	status eval.Status
	tenth  int
	// silent shows no progress line, only notes (a scoring pass).
	silent bool
	// failed are the cases whose failure has been shown.
	failed map[string]bool
}

// stepPhaseCase and stepFailed mark a timeline entry of a case that
// failed (the run ended in error, or could not be dispatched).
const (
	stepPhaseCase = "case"
	stepFailed    = "failed"
)

// read shows one reading: the cases that failed since the last one, then
// the progress line.
func (p *progress) read(sc eval.Scorecard) {
	if p.silent {
		return
	}
	for _, st := range sc.Steps {
		if st.Phase != stepPhaseCase || st.Status != stepFailed || st.CaseID == "" || p.failed[st.CaseID] {
			continue
		}
		if p.failed == nil {
			p.failed = map[string]bool{}
		}
		p.failed[st.CaseID] = true
		p.event(fmt.Sprintf("%s case %s failed: %s", sc.ID, st.CaseID, clipText(singleLine(st.Message), 300)))
	}
	// The cases that ran and did not pass their graders (the light read
	// names them; the timeline has only the runs that failed).
	for _, id := range sc.FailedCases {
		if p.failed[id] {
			continue
		}
		if p.failed == nil {
			p.failed = map[string]bool{}
		}
		p.failed[id] = true
		p.event(fmt.Sprintf("%s case %s did not pass (svc scorecard show %s --failed)", sc.ID, id, sc.ID))
	}
	p.show(sc)
}

// event writes a line of its own: on a terminal above the progress line,
// which is drawn again below it.
func (p *progress) event(line string) {
	if !p.drawn {
		fmt.Fprintln(p.x.stderr, line)
		return
	}
	fmt.Fprintf(p.x.stderr, "\r%s\x1b[K\n", line)
	p.draw(p.last)
}

func (p *progress) show(sc eval.Scorecard) {
	line := progressLine(sc)
	if !p.x.tty {
		if p.due(sc) {
			fmt.Fprintln(p.x.stderr, line)
		}
		return
	}
	if line == p.last {
		return
	}
	p.last = line
	p.draw(line)
}

// draw rewrites the terminal's progress line with line.
func (p *progress) draw(line string) {
	if p.x.width != nil {
		// One column short: a line that fills the last column wraps on
		// some terminals.
		if w := p.x.width(); w > 1 && len(line) > w-1 {
			line = line[:w-1]
		}
	}
	fmt.Fprintf(p.x.stderr, "\r%s\x1b[K", line)
	p.drawn = true
}

// due reports whether the log gets a line for sc, and notes it as shown
// when it does.
func (p *progress) due(sc eval.Scorecard) bool {
	tenth := 0
	if t := sc.Progress.Total; t > 0 {
		tenth = sc.Progress.Done * 10 / t
	}
	if p.logged && sc.Status == p.status && tenth <= p.tenth {
		return false
	}
	p.logged, p.status, p.tenth = true, sc.Status, tenth
	return true
}

// note writes a message on its own line, below the progress line.
func (p *progress) note(msg string) {
	p.end()
	fmt.Fprintln(p.x.stderr, "svc scorecard: "+msg)
}

// end finishes a rewritable line so later output starts on a new one.
func (p *progress) end() {
	if p.drawn {
		fmt.Fprintln(p.x.stderr)
		p.drawn = false
	}
}

// runScorecardGet is `svc scorecard get`.
func runScorecardGet(ctx context.Context, x *cli, args []string) (int, error) {
	fs := newFlagSet(x, "scorecard get", scorecardSynopsis)
	var cf clientFlags
	cf.register(fs, x.getenv)
	asJSON := fs.Bool("json", false, "print the detail read as JSON")
	arg, c, err := cf.oneArg(fs, args, "scorecard id", x.getenv)
	if err != nil {
		return 0, err
	}
	r := &batchReader{c: c, id: arg}
	if *asJSON {
		_, raw, err := r.detail(ctx)
		if err != nil {
			return 0, err
		}
		writeJSON(x.stdout, raw)
		return exitOK, nil
	}
	sc, _, err := r.light(ctx)
	if err != nil {
		return 0, err
	}
	renderScorecard(x.stdout, sc)
	return exitOK, nil
}

// renderScorecard writes a scorecard's status, progress and summary.
func renderScorecard(w io.Writer, sc eval.Scorecard) {
	fmt.Fprintln(w, progressLine(sc))
	fmt.Fprintf(w, "  dataset %s, harness %s, trials %d, concurrency %d\n", sc.Dataset, sc.Harness, sc.Trials, sc.Concurrency)
	if sc.Error != nil {
		fmt.Fprintf(w, "  error %s (phase %s): %s\n", sc.Error.Code, sc.Error.Phase, sc.Error.Message)
	}
	if len(sc.Summary) == 0 {
		return
	}
	names := make([]string, 0, len(sc.Summary))
	for m := range sc.Summary {
		names = append(names, m)
	}
	slices.Sort(names)
	tw := newTable(w)
	fmt.Fprintln(tw, "  METRIC\tCOUNT\tMEAN\tPASS RATE")
	for _, m := range names {
		s := sc.Summary[m]
		rate := "-"
		if s.PassRate != nil {
			rate = num(*s.PassRate)
		}
		fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\n", m, s.Count, num(s.Mean), rate)
	}
	tw.Flush()
}
