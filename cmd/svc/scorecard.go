package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"time"

	"svc/eval"
	"svc/registry"
	"svc/scorecards"
)

const scorecardSynopsis = `usage: svc scorecard run --dataset id@version --harness id@version [flags] [--wait] [--json]
       svc scorecard wait <id> [--timeout d] [--json]
       svc scorecard get <id> [--json]

run submits a scorecard (POST /scorecards, docs/scorecards.md) and prints its id on stdout.
With --wait it then reads the batch every second, shows its progress on stderr, and prints
the id once the batch is over, so that ID=$(svc scorecard run ... --wait) works in a script.
--json prints the record instead of the id (with --wait, the final detail read).
A version may be omitted (id alone) to mean latest; the batch records the exact version.

wait waits for a scorecard submitted earlier, as run --wait does (submit two batches,
then wait for both).

get prints one scorecard: its status, progress and summary.

Exit codes: 0 submitted, or succeeded with --wait and wait; 1 the batch failed or was
cancelled (with --wait and wait); 2 usage or service error, or --timeout passed.`

// retryFor is how long --wait keeps reading through a service that does
// not answer (a restart, a proxy hiccup) before it gives up.
const retryFor = time.Minute

// runScorecard is `svc scorecard`: run or get.
func runScorecard(ctx context.Context, x *cli, args []string) (int, error) {
	if len(args) == 0 {
		return 0, fmt.Errorf("%w: name a subcommand: run, wait or get", errUsage)
	}
	switch args[0] {
	case "run":
		return runScorecardRun(ctx, x, args[1:])
	case "wait":
		return runScorecardWait(ctx, x, args[1:])
	case "get":
		return runScorecardGet(ctx, x, args[1:])
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(x.stderr, scorecardSynopsis)
		return 0, flag.ErrHelp
	}
	return 0, fmt.Errorf("%w: unknown subcommand %q: want run, wait or get", errUsage, args[0])
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
		wait, asJSON                        bool
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
	fs.BoolVar(&asJSON, "json", false, "print the record as JSON instead of the id")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return 0, err
	}
	if len(pos) > 0 {
		return 0, fmt.Errorf("%w: unexpected arguments %q", errUsage, pos)
	}
	req := scorecards.SubmitRequest{Runtime: runtime}
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
		req.Judges = append(req.Judges, scorecards.JudgeSel{ID: r.ID, Version: r.Version})
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
		req.Cases = &scorecards.Selection{IDs: ids, Tags: tags, Limit: limit}
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
	c, err := cf.client(x.getenv)
	if err != nil {
		return 0, err
	}

	var sc eval.Scorecard
	raw, err := c.do(ctx, "POST", "/scorecards", req, &sc)
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
	if sc, raw, err = waitScorecard(ctx, x, c, sc.ID, timeout); err != nil {
		return 0, err
	}
	return finished(x, sc, raw, asJSON), nil
}

// finished prints a batch that is over (its id, or its record as JSON) and
// returns the exit code of its status.
func finished(x *cli, sc eval.Scorecard, raw []byte, asJSON bool) int {
	if asJSON {
		writeJSON(x.stdout, raw)
	} else {
		fmt.Fprintln(x.stdout, sc.ID)
	}
	if sc.Status == eval.ScorecardSucceeded {
		return exitOK
	}
	msg := fmt.Sprintf("svc scorecard: %s %s", sc.ID, sc.Status)
	if sc.Error != nil {
		if sc.Error.Phase != "" {
			msg += " in phase " + sc.Error.Phase
		}
		msg += ": " + sc.Error.Message
	}
	fmt.Fprintln(x.stderr, msg)
	return exitVerdict
}

// runScorecardWait is `svc scorecard wait`.
func runScorecardWait(ctx context.Context, x *cli, args []string) (int, error) {
	fs := newFlagSet(x, "scorecard wait", scorecardSynopsis)
	var cf clientFlags
	cf.register(fs, x.getenv)
	timeout := fs.Duration("timeout", 0, "give up after this long (the batch keeps running); 0 waits for ever")
	asJSON := fs.Bool("json", false, "print the final record as JSON instead of the id")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return 0, err
	}
	if len(pos) != 1 {
		return 0, fmt.Errorf("%w: want exactly one scorecard id, got %d arguments", errUsage, len(pos))
	}
	if *timeout < 0 {
		return 0, fmt.Errorf("%w: --timeout must not be negative", errUsage)
	}
	c, err := cf.client(x.getenv)
	if err != nil {
		return 0, err
	}
	sc, raw, err := waitScorecard(ctx, x, c, pos[0], *timeout)
	if err != nil {
		return 0, err
	}
	return finished(x, sc, raw, *asJSON), nil
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

// waitScorecard reads the batch every x.poll until it is over and returns
// its final detail read. Reads that fail transiently are retried for
// retryFor; an interrupt or the timeout leaves the batch running and says
// how to find it.
func waitScorecard(ctx context.Context, x *cli, c *apiClient, id string, timeout time.Duration) (eval.Scorecard, []byte, error) {
	var none eval.Scorecard
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	pr := &progress{x: x}
	defer pr.end()
	tick := time.NewTicker(x.poll)
	defer tick.Stop()
	var failingSince time.Time
	for {
		var cur eval.Scorecard // fresh: decoding does not clear absent fields
		raw, err := c.do(ctx, "GET", "/scorecards/"+url.PathEscape(id), nil, &cur)
		switch {
		case ctx.Err() != nil:
		case err == nil:
			failingSince = time.Time{}
			pr.show(cur)
			if eval.ScorecardTerminal(cur.Status) {
				return cur, raw, nil
			}
		case !transient(err):
			return none, nil, err
		case failingSince.IsZero():
			failingSince = time.Now()
			pr.note(fmt.Sprintf("%v; retrying for up to %s", err, retryFor))
		case time.Since(failingSince) > retryFor:
			return none, nil, fmt.Errorf("%v; gave up after %s: the batch keeps running (svc scorecard get %s)", err, retryFor, id)
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return none, nil, fmt.Errorf("%s is not over after --timeout %s; it keeps running (svc scorecard get %s)", id, timeout, id)
			}
			return none, nil, fmt.Errorf("interrupted; %s keeps running (svc scorecard get %s)", id, id)
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
// lines, not one a second.
type progress struct {
	x     *cli
	last  string
	drawn bool // a rewritable line is on screen
	// What the log last showed.
	logged bool
	status eval.Status
	tenth  int
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
	pos, err := parseArgs(fs, args)
	if err != nil {
		return 0, err
	}
	if len(pos) != 1 {
		return 0, fmt.Errorf("%w: want exactly one scorecard id, got %d arguments", errUsage, len(pos))
	}
	c, err := cf.client(x.getenv)
	if err != nil {
		return 0, err
	}
	var sc eval.Scorecard
	raw, err := c.do(ctx, "GET", "/scorecards/"+url.PathEscape(pos[0]), nil, &sc)
	if err != nil {
		return 0, err
	}
	if *asJSON {
		writeJSON(x.stdout, raw)
	} else {
		renderScorecard(x.stdout, sc)
	}
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
