package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"svc/internal/client"
	"svc/internal/domain/eval"
	"svc/internal/domain/gate"
	"svc/internal/domain/registry"
	"svc/internal/domain/scorecardwire"
)

const evalSynopsis = `usage: svc eval run FILE [--baseline id|latest|latest:harness[@version]] [--timeout d]
                    [--fail-on-dispatch-errors] [--json]

run reads an eval file (YAML or JSON; docs/cli.md has an example) and does what a CI job
does: registers the dataset, harness and judges given as files (registering the same
content again is harmless), runs the scorecard with progress on stderr, prints its summary
and failing cases, and, when a baseline is named, gates the scorecard against it and prints
the decision. Paths in the file are relative to the file. ${VAR} in baseline and in refs
reads the environment. --baseline, --timeout and --fail-on-dispatch-errors override the file.

baseline: a scorecard id; latest, the newest succeeded scorecard of the same dataset version
and harness id; or latest:<harness>[@version], the newest of that harness. With latest and
none found, the gate is skipped with a note.

Exit codes: 0 the batch succeeded and the gate passed (or none was asked); 1 the batch
failed or was cancelled, the gate blocked (block, blocked_missing, not_comparable), or
case-trials could not be dispatched with failOnDispatchErrors; 2 usage or service error.`

// RunEval is `svc eval`.
func RunEval(ctx context.Context, x *cli, args []string) (int, error) {
	return subcommand(ctx, x, evalSynopsis, []sub{{"run", runEvalRun}}, args)
}

// evalFile is an eval file: what to register, what to run, how to gate.
type evalFile struct {
	Dataset     evalEntity               `json:"dataset"`
	Harness     evalEntity               `json:"harness"`
	Judges      []evalEntity             `json:"judges,omitempty"`
	Graders     []json.RawMessage        `json:"graders,omitempty"`
	Trials      *int                     `json:"trials,omitempty"`
	Concurrency *int                     `json:"concurrency,omitempty"`
	Runtime     string                   `json:"runtime,omitempty"`
	Cases       *scorecardwire.Selection `json:"cases,omitempty"`
	Critical    *struct {
		Cases    []string `json:"cases,omitempty"`
		Prefixes []string `json:"prefixes,omitempty"`
	} `json:"critical,omitempty"`
	Timeout              string           `json:"timeout,omitempty"`
	Baseline             string           `json:"baseline,omitempty"`
	Gate                 *gate.GatePolicy `json:"gate,omitempty"`
	FailOnDispatchErrors bool             `json:"failOnDispatchErrors,omitempty"`
}

// evalEntity is a registered entity to use (ref, or the whole value as
// "id@version") or a file to register first.
type evalEntity struct {
	Ref     string `json:"ref,omitempty"`
	File    string `json:"file,omitempty"`
	ID      string `json:"id,omitempty"`
	Version string `json:"version,omitempty"`
	// Type is a dataset file's type (json, jsonl, csv) when its extension
	// does not say.
	Type string `json:"type,omitempty"`
	// Graders are given to a dataset file's cases that have none.
	Graders []json.RawMessage `json:"graders,omitempty"`
	// Description, and a code judge's language, runtime and timeout.
	Description string `json:"description,omitempty"`
	Language    string `json:"language,omitempty"`
	Runtime     string `json:"runtime,omitempty"`
	TimeoutSec  int    `json:"timeoutSec,omitempty"`
}

// UnmarshalJSON reads "id@version" as a ref, else the object strictly.
func (e *evalEntity) UnmarshalJSON(b []byte) error {
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '"' {
		*e = evalEntity{}
		return json.Unmarshal(b, &e.Ref)
	}
	type fields evalEntity
	var f fields
	if err := strictJSON(b, &f); err != nil {
		return err
	}
	*e = evalEntity(f)
	return nil
}

// strictJSON decodes one JSON value, refusing unknown fields: a typo in an
// eval file is an error, not a setting silently ignored.
func strictJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("more than one document")
	}
	return nil
}

// readEvalFile reads and checks an eval file; file paths in it become
// relative to the working directory, and ${VAR} in refs and the baseline
// reads getenv.
func readEvalFile(path string, getenv func(string) string) (*evalFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: not YAML or JSON: %v", errUsage, path, err)
	}
	var f evalFile
	if err := strictJSON(j, &f); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", errUsage, path, err)
	}
	dir := filepath.Dir(path)
	expand := func(s string) string { return os.Expand(s, getenv) }
	f.Baseline = strings.TrimSpace(expand(f.Baseline))
	for _, e := range append([]*evalEntity{&f.Dataset, &f.Harness}, ptrs(f.Judges)...) {
		e.Ref = expand(e.Ref)
		switch {
		case e.Ref == "" && e.File == "":
			return nil, fmt.Errorf("%w: %s: a dataset, harness or judge needs a ref (id@version) or a file", errUsage, path)
		case e.Ref != "" && e.File != "":
			return nil, fmt.Errorf("%w: %s: ref %q and file %q: give one", errUsage, path, e.Ref, e.File)
		case e.File != "" && !filepath.IsAbs(e.File):
			e.File = filepath.Join(dir, e.File)
		}
	}
	if f.Timeout != "" {
		if d, err := time.ParseDuration(f.Timeout); err != nil || d <= 0 {
			return nil, fmt.Errorf("%w: %s: timeout %q is not a positive duration such as 30m", errUsage, path, f.Timeout)
		}
	}
	if f.Gate != nil {
		if err := f.Gate.Validate(); err != nil {
			return nil, fmt.Errorf("%w: %s: gate: %v", errUsage, path, err)
		}
	}
	return &f, nil
}

func ptrs[T any](s []T) []*T {
	out := make([]*T, len(s))
	for i := range s {
		out[i] = &s[i]
	}
	return out
}

// runEvalRun is `svc eval run`.
func runEvalRun(ctx context.Context, x *cli, args []string) (int, error) {
	fs := newFlagSet(x, "eval run", evalSynopsis)
	var cf clientFlags
	cf.register(fs, x.getenv)
	baseline := fs.String("baseline", "", "gate against this scorecard (an id, latest, or latest:harness[@version]); overrides the file's")
	timeout := fs.Duration("timeout", 0, "give up waiting after this long (the batch keeps running); overrides the file's")
	failOnDispatch := fs.Bool("fail-on-dispatch-errors", false, "exit 1 when any case-trial could not be dispatched")
	asJSON := fs.Bool("json", false, `print {"scorecard": the final detail read, "gate": the decision} as JSON`)
	arg, err := parseOne(fs, args, "eval file")
	if err != nil {
		return 0, err
	}
	f, err := readEvalFile(arg, x.getenv)
	if err != nil {
		return 0, err
	}
	if *baseline != "" {
		f.Baseline = *baseline
	}
	if *failOnDispatch {
		f.FailOnDispatchErrors = true
	}
	wait := *timeout
	if wait == 0 && f.Timeout != "" {
		wait, _ = time.ParseDuration(f.Timeout)
	}
	if wait < 0 {
		return 0, fmt.Errorf("%w: --timeout must not be negative", errUsage)
	}
	req, err := f.submitRequest()
	if err != nil {
		return 0, err
	}
	c, err := cf.client(x.getenv)
	if err != nil {
		return 0, err
	}
	// Registrations and progress go to stderr; the report to stdout.
	note := &cli{stdout: x.stderr, stderr: x.stderr, getenv: x.getenv, tty: x.tty, width: x.width, poll: x.poll}
	if req.Dataset, err = f.Dataset.resolve(ctx, note, c, "/datasets", "dataset"); err != nil {
		return 0, err
	}
	if req.Harness, err = f.Harness.resolve(ctx, note, c, "/harnesses", "harness"); err != nil {
		return 0, err
	}
	for _, j := range f.Judges {
		r, err := j.resolve(ctx, note, c, "/judges", "judge")
		if err != nil {
			return 0, err
		}
		req.Judges = append(req.Judges, scorecardwire.JudgeSel{ID: r.ID, Version: r.Version})
	}

	sc, _, err := c.SubmitScorecard(ctx, req)
	if err != nil {
		return 0, err
	}
	if sc.ID == "" {
		return 0, errors.New("the service accepted the scorecard but answered no id")
	}
	fmt.Fprintf(x.stderr, "svc eval: scorecard %s: dataset %s, harness %s\n", sc.ID, sc.Dataset, sc.Harness)
	sc, scRaw, err := waitScorecard(ctx, x, c, sc.ID, wait, true)
	if err != nil {
		return 0, err
	}
	code := exitOK
	if sc.Status != eval.ScorecardSucceeded || (f.FailOnDispatchErrors && sc.Progress.DispatchErrors > 0) {
		code = exitVerdict
	}
	if !*asJSON {
		renderScorecard(x.stdout, sc)
		reportFailures(x, sc, f.FailOnDispatchErrors)
	}

	var decRaw []byte
	base := f.Baseline
	if base != "" && sc.Status == eval.ScorecardSucceeded {
		if base, err = findBaseline(ctx, c, base, sc); err != nil {
			return 0, err
		}
	}
	switch {
	case f.Baseline == "":
	case sc.Status != eval.ScorecardSucceeded:
		fmt.Fprintf(x.stderr, "svc eval: %s is %s: no gate\n", sc.ID, sc.Status)
	case base == "":
		fmt.Fprintf(x.stderr, "svc eval: no baseline found for %q (no other succeeded scorecard of dataset %s and that harness): no gate\n", f.Baseline, sc.Dataset)
	default:
		policy := gate.GatePolicy{}
		if f.Gate != nil {
			policy = *f.Gate
		}
		var dec gate.Decision
		if dec, decRaw, err = c.Gate(ctx, scorecardwire.GateRequest{Baseline: base, Candidate: sc.ID, Policy: policy}); err != nil {
			return 0, err
		}
		if !*asJSON {
			var diff *gate.ScorecardDiff
			if d, _, err := c.ScorecardDiff(ctx, base, sc.ID); err == nil {
				diff = &d
			}
			fmt.Fprintln(x.stdout)
			renderGate(x.stdout, dec, diff)
		}
		if dec.Outcome != gate.OutcomePass {
			code = exitVerdict
		}
	}
	if *asJSON {
		out := map[string]json.RawMessage{"scorecard": scRaw}
		if decRaw != nil {
			out["gate"] = decRaw
		}
		b, err := json.Marshal(out)
		if err != nil {
			return 0, err
		}
		writeJSON(x.stdout, b)
	}
	return code, nil
}

// reportFailures writes the cases of a finished batch that did not pass,
// and what could not be dispatched.
func reportFailures(x *cli, sc eval.Scorecard, failOnDispatch bool) {
	if p := sc.Progress; p.DispatchErrors > 0 {
		msg := fmt.Sprintf("\n%d of %d case-trials could not be dispatched; they count as failed", p.DispatchErrors, p.Total)
		if failOnDispatch {
			msg += " (failOnDispatchErrors: exit 1)"
		}
		fmt.Fprintln(x.stdout, msg)
	}
	if sc.Error != nil {
		fmt.Fprintf(x.stderr, "svc eval: %s %s in phase %s: %s\n", sc.ID, sc.Status, sc.Error.Phase, sc.Error.Message)
	}
	var failing []caseLine
	for _, l := range caseLines(sc.Scorecard) {
		if l.passed < l.trials() {
			failing = append(failing, l)
		}
	}
	if len(failing) == 0 {
		return
	}
	fmt.Fprintln(x.stdout)
	writeCaseTable(x.stdout, fmt.Sprintf("Cases with a trial that did not pass: %d (trials: %s):", len(failing), trialLegend), failing)
}

// submitRequest is the scorecard the file asks for, without the
// references that registration resolves.
func (f *evalFile) submitRequest() (scorecardwire.SubmitRequest, error) {
	req := scorecardwire.SubmitRequest{Runtime: f.Runtime, Trials: f.Trials, Concurrency: f.Concurrency, Cases: f.Cases}
	for i, g := range f.Graders {
		gr, err := graderOf(g)
		if err != nil {
			return req, fmt.Errorf("%w: graders[%d]: %v", errUsage, i, err)
		}
		req.Graders = append(req.Graders, gr)
	}
	if f.Critical != nil {
		for _, id := range f.Critical.Cases {
			req.CriticalCases = append(req.CriticalCases, eval.CaseMatcher{CaseID: id})
		}
		for _, p := range f.Critical.Prefixes {
			req.CriticalCases = append(req.CriticalCases, eval.CaseMatcher{Prefix: p})
		}
	}
	return req, nil
}

// graderOf reads a grader of an eval file: an id alone, or an object.
func graderOf(raw json.RawMessage) (registry.Grader, error) {
	var g registry.Grader
	var id string
	if json.Unmarshal(raw, &id) == nil {
		raw, _ = json.Marshal(map[string]string{"id": id})
	}
	err := json.Unmarshal(raw, &g)
	return g, err
}

// resolve registers the entity when it is a file, and returns the
// reference the scorecard uses.
func (e evalEntity) resolve(ctx context.Context, note *cli, c *client.Client, collection, noun string) (registry.Ref, error) {
	if e.Ref != "" {
		r, err := parseRef(noun, e.Ref)
		if noun == "judge" && !strings.Contains(e.Ref, "@") {
			r.Version = "" // the service's default for a judge
		}
		return r, err
	}
	var (
		doc map[string]any
		err error
	)
	switch {
	case noun == "dataset":
		if doc, err = loadDataset(e.File, e.Type); err != nil {
			return registry.Ref{}, err
		}
		var graders []any
		for _, g := range e.Graders {
			var v any
			if err := decodeJSON(g, &v); err != nil {
				return registry.Ref{}, fmt.Errorf("%w: dataset graders: %v", errUsage, err)
			}
			if s, ok := v.(string); ok {
				v = map[string]any{"id": s}
			}
			graders = append(graders, v)
		}
		err = completeDataset(doc, e.File, e.ID, e.Version, e.Description, graders)
	case noun == "judge" && (judgeLanguages[strings.ToLower(filepath.Ext(e.File))] != "" || e.Language != ""):
		doc, err = codeJudgeSpec(e.File, codeJudgeOptions{id: e.ID, version: e.Version, language: e.Language,
			description: e.Description, runtime: e.Runtime, timeoutSec: e.TimeoutSec})
	default:
		if doc, err = readSpecFile(e.File); err == nil {
			err = setIDVersion(doc, e.ID, e.Version, noun, e.File)
		}
	}
	if err != nil {
		return registry.Ref{}, err
	}
	v, err := registerSpec(ctx, note, c, collection, noun, doc, false)
	if err != nil {
		return registry.Ref{}, fmt.Errorf("%s %s: %w", noun, e.File, err)
	}
	return registry.Ref{ID: v.ID, Version: v.Version}, nil
}

// findBaseline resolves an eval file's baseline for candidate cand: a
// scorecard id as it is; latest (or latest:harness[@version]) as the
// newest other succeeded scorecard of the same dataset version and that
// harness, or "" when there is none.
func findBaseline(ctx context.Context, c *client.Client, baseline string, cand eval.Scorecard) (string, error) {
	rest, isLatest := strings.CutPrefix(baseline, "latest")
	if !isLatest || (rest != "" && !strings.HasPrefix(rest, ":")) {
		return baseline, nil
	}
	harness, version := cand.Harness.ID, ""
	if rest != "" {
		harness, version, _ = strings.Cut(strings.TrimPrefix(rest, ":"), "@")
		if harness == "" {
			return "", fmt.Errorf("%w: baseline %q: want latest:<harness>[@version]", errUsage, baseline)
		}
	}
	list, _, _, err := c.ListScorecards(ctx, client.ScorecardFilter{DatasetID: cand.Dataset.ID, HarnessID: harness, Status: string(eval.ScorecardSucceeded), Limit: 100})
	if err != nil {
		return "", err
	}
	for _, sc := range list { // newest first
		if sc.ID == cand.ID || sc.Kind == eval.KindExperiment || sc.Dataset.Version != cand.Dataset.Version {
			continue
		}
		if version != "" && sc.Harness.Version != version {
			continue
		}
		return sc.ID, nil
	}
	return "", nil
}
