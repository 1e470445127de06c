// Package judges runs a case's judges over its finished result and turns
// what each one says into Scores (spec §2.5).
//
// A code judge is a Python or Node program, run as a job through a
// drivers.Driver: its source and its input file (the case, trace, snapshot
// and evidence as JSON) are written into a fresh work area, argv[1] names
// the input file, and the last thing the program prints on stdout is a
// Score or a Score[] (ParseOutput). Metrics are namespaced under the judge
// (RewriteMetrics) so no judge can write another's or a grader's metric.
//
// Judges never vanish and never fail a case's scoring: a judge that exits
// non-zero, times out, prints no valid score, cannot start, or is of a kind
// this deployment cannot run yields one visible skip score (metric
// judge:<id>, value 0, pass false, detail "skipped: <reason>"). Only a
// cancelled context or an infrastructure failure of the driver is an
// error. docs/judges.md is the user's reference.
package judges

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"svc/drivers"
	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
	"svc/internal/integrations/modeljudge"
	"svc/internal/platform/derrors"
)

// Input is what a judge reads about one case: written as JSON {case,
// trace, snapshot, evidence} to a file whose path is argv[1].
type Input struct {
	Case     registry.EvalCase `json:"case"`
	Trace    []eval.TraceEvent `json:"trace"`
	Snapshot *eval.Snapshot    `json:"snapshot"`
	Evidence *eval.Evidence    `json:"evidence"`
}

// Defaults of a Runner's zero fields.
const (
	DefaultPython  = "python3"
	DefaultNode    = "node"
	DefaultTimeout = 60 * time.Second
)

// InputFile is the name of the judge's input file in its working
// directory; argv[1] is this relative path (see Runner.Run).
const InputFile = "input.json"

// Runner runs judges as jobs of a driver. The zero values of its fields
// other than Driver are replaced by the defaults above. It is safe for
// concurrent use when its Driver is.
type Runner struct {
	// Driver runs the judge process (the local driver in dev and tests).
	Driver drivers.Driver
	// Python is the interpreter of python judges; "" means DefaultPython.
	Python string
	// Node is the interpreter of node judges; "" means DefaultNode.
	Node string
	// DefaultTimeout bounds a judge whose spec sets no timeoutSec; 0 means
	// DefaultTimeout.
	DefaultTimeout time.Duration
	// Log, when set, receives the judge's output while it runs (stream is
	// stdout or stderr), so a judge try can show its logs; it must not
	// block for long.
	Log func(jobID, stream string, data []byte)
	// Env is given to the judge process beside the minimal environment:
	// a code judge with a model gets its model proxy's address and its
	// run-scoped token here (never a key). Set it on a copy of the Runner
	// made for one execution.
	Env map[string]string
	// Images says that Driver runs a job in its Image (a nomad, k8s or
	// self-hosted runner runtime): only then does a judge's entrypoint in
	// its image run. The local driver runs processes on the host.
	Images bool
}

// legacyReason is the skip reason of a model judge run here: the worker
// runs model judges itself when it has model access (activities), so one
// reaching the Runner has none.
const legacyReason = "legacy model judges need a model dispatcher, which this deployment does not configure"

// HarnessReason is the skip reason of a legacy harness judge
// (score.HarnessReason).
const HarnessReason = modeljudge.HarnessReason

// Run runs judge j over in and returns its scores, metrics rewritten
// under judge:<id>. Problems with the judge (a non-zero exit, a timeout,
// malformed output, an unsupported kind, a missing interpreter) are never
// errors: they become one skip score saying why. Run returns an error only
// when ctx ends, when the driver fails for a reason other than the job
// being unrunnable (derrors.ErrInvalid), or when the call itself is wrong
// (a nil judge or an empty jobID). jobID names the driver job: unique per
// case, judge and attempt, it keys the job's work area.
func (r *Runner) Run(ctx context.Context, j *registry.JudgeSpec, in Input, jobID string) ([]eval.Score, error) {
	if j == nil {
		return nil, derrors.Invalidf("judges.Run: no judge")
	}
	if jobID == "" {
		return nil, derrors.Invalidf("judges.Run: judge %s: empty job id", j.ID)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("judge %s: %w", j.ID, err)
	}
	switch j.Kind {
	case registry.JudgeCode:
		if j.Code == nil {
			return Skip(j.ID, fmt.Sprintf("judge %s is of kind code but has no code fields", j.ID)), nil
		}
		return r.runCode(ctx, j.ID, j.Code, in, jobID)
	case registry.JudgeModel:
		return Skip(j.ID, legacyReason), nil
	case registry.JudgeHarness:
		return Skip(j.ID, HarnessReason), nil
	default:
		return Skip(j.ID, fmt.Sprintf("judge %s has kind %q, which this version cannot run", j.ID, j.Kind)), nil
	}
}

// runCode runs a code judge.
func (r *Runner) runCode(ctx context.Context, id string, c *registry.CodeJudge, in Input, jobID string) ([]eval.Score, error) {
	if c.Entrypoint != "" {
		if !r.Images {
			// The local driver runs processes on the host and ignores
			// Job.Image; running the image's entrypoint on the host would
			// run something else entirely.
			return Skip(id, fmt.Sprintf("judge %s runs its entrypoint in image %s, which the local runtime cannot run; set runtime on the judge to a nomad, k8s or runner runtime", id, c.Image)), nil
		}
		return r.runJob(ctx, id, c, in, jobID, c.Entrypoint, nil, c.Image)
	}
	if strings.TrimSpace(c.Code) == "" {
		return Skip(id, fmt.Sprintf("judge %s has no code", id)), nil
	}
	var interp, file string
	switch c.Language {
	case "python":
		interp, file = cmp.Or(r.Python, DefaultPython), "judge.py"
	case "node":
		interp, file = cmp.Or(r.Node, DefaultNode), nodeFile(c.Code)
	default:
		return Skip(id, fmt.Sprintf("judge %s is written in %q; code judges are python or node", id, c.Language)), nil
	}
	return r.runJob(ctx, id, c, in, jobID, interp, map[string]string{file: c.Code}, "")
}

// runJob runs one execution of a code judge: program (an interpreter
// with its source among files, or an image's entrypoint) with argv[1]
// the input file, and reads its scores.
func (r *Runner) runJob(ctx context.Context, id string, c *registry.CodeJudge, in Input, jobID, program string, files map[string]string, image string) ([]eval.Score, error) {
	input, err := encodeInput(in)
	if err != nil {
		return Skip(id, fmt.Sprintf("the input of judge %s cannot be encoded: %v", id, err)), nil
	}
	timeout := r.Timeout(c)
	command := []string{program, InputFile}
	all := map[string]string{InputFile: input}
	for name, body := range files {
		// The interpreter's argv: interp judge.py input.json.
		command = []string{program, name, InputFile}
		all[name] = body
	}
	job := drivers.Job{
		RunID: jobID,
		// argv[1] is relative to the working directory, where Files are
		// written: every driver honours that, while the absolute path of
		// the work area is known only inside the job.
		Command: command,
		Files:   all,
		Env:     r.Env,
		Image:   image,
		Timeout: timeout,
	}
	if r.Log != nil {
		job.Log = func(stream string, data []byte) { r.Log(jobID, stream, data) }
	}
	interp := program
	res, err := r.Driver.Run(ctx, job)
	if cerr := ctx.Err(); cerr != nil {
		return nil, fmt.Errorf("judge %s: %w", id, cerr)
	}
	if err != nil {
		if errors.Is(err, derrors.ErrInvalid) {
			return Skip(id, fmt.Sprintf("judge %s could not start %s: %v", id, interp, err)), nil
		}
		return nil, fmt.Errorf("judge %s: running job %s: %w", id, jobID, err)
	}
	switch {
	case res.Cancelled:
		// ctx is live, so the driver ended the job for a reason of its own.
		return nil, fmt.Errorf("judge %s: job %s was cancelled by the driver", id, jobID)
	case res.TimedOut:
		return Skip(id, fmt.Sprintf("judge %s timed out after %s", id, timeout)), nil
	case res.ExitCode != 0:
		return Skip(id, fmt.Sprintf("judge %s exited with code %d%s", id, res.ExitCode, outputTail(res))), nil
	}
	scores, err := ParseOutput(judgeStdout(res))
	if err != nil {
		return Skip(id, fmt.Sprintf("judge %s printed no valid score: %v", id, err)), nil
	}
	return RewriteMetrics(id, scores), nil
}

// Timeout is how long one execution of a code judge may take: its
// timeoutSec, else the Runner's default.
func (r *Runner) Timeout(c *registry.CodeJudge) time.Duration {
	if c != nil && c.TimeoutSec > 0 {
		return time.Duration(c.TimeoutSec) * time.Second
	}
	if r.DefaultTimeout > 0 {
		return r.DefaultTimeout
	}
	return DefaultTimeout
}

// judgeStdout is the stdout to parse. The driver keeps the head of a long
// output; the score is at its end, so past the cap the tail is all there
// is to read.
func judgeStdout(res drivers.Result) string {
	if len(res.Stdout) >= drivers.MaxOutput-utf8.UTFMax && res.StdoutTail != "" {
		return res.StdoutTail
	}
	return res.Stdout
}

// maxReasonTail bounds the output quoted in a skip reason.
const maxReasonTail = 600

// outputTail quotes the end of stderr (else of stdout) for a skip reason:
// it is usually the traceback that says what went wrong.
func outputTail(res drivers.Result) string {
	stream, tail := "stderr", strings.TrimSpace(res.StderrTail)
	if tail == "" {
		stream, tail = "stdout", strings.TrimSpace(res.StdoutTail)
	}
	if tail == "" {
		return " and printed nothing on stderr"
	}
	if len(tail) > maxReasonTail {
		tail = tail[len(tail)-maxReasonTail:]
		for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
			tail = tail[1:]
		}
		tail = "…" + tail
	}
	return "; " + stream + ": " + tail
}

// encodeInput writes the judge's input file. A nil trace is written as []
// so a judge can iterate it without a check.
func encodeInput(in Input) (string, error) {
	if in.Trace == nil {
		in.Trace = []eval.TraceEvent{}
	}
	b, err := json.Marshal(in)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// esmPattern matches a line that only an ES module may hold: a static
// import, an export, or import.meta.
var esmPattern = regexp.MustCompile(`(?m)^\s*(import\s*[\w{*'"]|export\s|.*\bimport\.meta\b)`)

// nodeFile names a node judge's file: judge.mjs for an ES module, else
// judge.js (CommonJS, so require works). Node 20 does not detect the
// module kind itself.
func nodeFile(code string) string {
	if esmPattern.MatchString(code) {
		return "judge.mjs"
	}
	return "judge.js"
}

// SkipPrefix begins the detail of every skip score.
const SkipPrefix = modeljudge.SkipPrefix

// Skip returns the one visible score of a judge that could not judge
// (score.Skip).
func Skip(judgeID, reason string) []eval.Score { return modeljudge.Skip(judgeID, reason) }

// IsSkip reports whether a score is a judge skip score (score.IsSkip).
func IsSkip(s eval.Score) bool { return modeljudge.IsSkip(s) }
