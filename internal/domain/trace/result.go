package trace

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"svc/internal/domain/eval"
	"svc/internal/domain/graders"
	"svc/internal/domain/registry"
	"svc/internal/platform/derrors"
)

// Dispatch is what dispatching a run resolved, as its result records it:
// the harness version that ran, the digests provenance records and how
// the case is graded.
type Dispatch struct {
	Harness       registry.Ref
	HarnessDigest string
	CaseDigest    string
	Runtime       string
	// Graders, when set, grade instead of the case's own; Ungraded
	// grades nothing (an experiment's cases carry no scores).
	Graders  []registry.Grader
	Ungraded bool
	// ModelCostUSD is what the attempt's calls through the model proxy
	// cost, as the service metered them (the job does not report it). It
	// is added to the trace's cost in the result's usage.costUsd before
	// the graders run, so a usd grader sees it.
	ModelCostUSD float64
}

// JobOutput is what a finished job left, as a driver reports it
// (drivers.Result has the same fields, and the worker converts one into
// the other; neither package imports the other).
type JobOutput struct {
	ExitCode int // -1 when killed by a signal
	Duration time.Duration
	// Stdout is the whole standard output up to the driver's cap (the
	// final answer of the harness); StdoutTail and StderrTail are the last
	// bytes of each.
	Stdout     string
	StdoutTail string
	StderrTail string
	// Trace is the content of the file named by SVC_TRACE_FILE (TraceEvent
	// JSON lines), up to the driver's cap.
	Trace []byte
	// TraceRefused, when set, says why the driver did not read the trace
	// file (a symbolic link, a FIFO, a file the job did not write):
	// the result's trace then holds a TRACE_REFUSED error event saying so.
	TraceRefused string
	// TimedOut is set when the job's timeout ended it; Cancelled when its
	// caller did.
	TimedOut  bool
	Cancelled bool
	// OS is the operating system the job ran on (runtime.GOOS for local).
	OS string
	// Driver names the driver: local, docker, nomad, k8s.
	Driver string
	// Image is the image the job ran in, if any.
	Image string
	// Host is the machine that ran the job when it is not the worker
	// recording it (a self-hosted runner's, as the runner reported it).
	Host string
}

// CodeTraceRefused is the code of the error event a result's trace holds
// when the driver refused to read the job's trace file
// (JobOutput.TraceRefused).
const CodeTraceRefused = "TRACE_REFUSED"

// BuildResult turns what the job left into the CaseResult of spec §2.7
// and, when the run failed, its error envelope. problem is a dispatch
// failure (the job did not run, or could not be planned): the result then
// holds an error event and a pass:false score saying why, and no
// execution manifest, since no compute ran.
func BuildResult(run eval.Run, p Dispatch, res JobOutput, problem error, host string) (*eval.CaseResult, *eval.Error) {
	var c registry.EvalCase
	if run.Case != nil {
		c = *run.Case
	}
	r := &eval.CaseResult{
		Harness:         p.Harness.String(),
		CaseID:          run.CaseID,
		EvidenceVersion: eval.EvidenceVersion,
		Provenance: &eval.Provenance{
			Attestation: "managed", Driver: res.Driver, Worker: cmp.Or(res.Host, host),
			HarnessDigest: p.HarnessDigest, CaseDigest: p.CaseDigest,
		},
	}
	if problem != nil {
		// What the user reads: no internal call chain (derrors.Wrap's).
		msg := derrors.Message(problem)
		r.Trace = []eval.TraceEvent{{Kind: eval.EventError, Code: eval.CodeDispatch, Message: msg}}
		r.Scores = []eval.Score{failScore("dispatch", msg)}
		ev, u := eval.Extract(r.Trace, "")
		r.Evidence, r.Usage = &ev, &u
		return r, &eval.Error{Code: eval.CodeDispatch, Message: msg, Phase: "dispatch"}
	}

	r.Trace = ParseTrace(res.Trace)
	if res.TraceRefused != "" {
		r.Trace = append(r.Trace, eval.TraceEvent{Kind: eval.EventError, Code: CodeTraceRefused, Message: clip(res.TraceRefused, 500)})
	}
	answer := strings.TrimSpace(res.Stdout)
	var runErr *eval.Error
	switch {
	case res.Cancelled:
		runErr = &eval.Error{Code: eval.CodeCancelled, Message: "the run was cancelled; the harness's process tree was killed"}
	case res.TimedOut:
		runErr = &eval.Error{Code: eval.CodeTimeout, Message: fmt.Sprintf("the harness ran past its timeout after %s and its process tree was killed", res.Duration.Round(1e6))}
	case res.ExitCode != 0:
		msg := fmt.Sprintf("the harness exited with code %d", res.ExitCode)
		if tail := lastLine(res.StderrTail); tail != "" {
			msg += ": " + clip(tail, 300)
		}
		runErr = &eval.Error{Code: eval.CodeExit, Message: msg}
	}
	if runErr != nil {
		r.Trace = append(r.Trace, eval.TraceEvent{Kind: eval.EventError, Code: runErr.Code, Message: runErr.Message})
	}

	ev, u := eval.Extract(r.Trace, answer)
	u.DurationMs = res.Duration.Milliseconds()
	u.CostUSD += p.ModelCostUSD
	r.Evidence, r.Usage = &ev, &u
	r.Snapshot = &eval.Snapshot{Kind: "prompt", Prompt: taskText(c.Task), Output: ev.FinalAnswer}

	// Every result carries a verdict: with no graders, the exit code is
	// it, and an expected answer is compared (graders.ForCase).
	gs := graders.ForCase(c, p.Graders, DefaultRunGraders)
	r.Scores = []eval.Score{}
	if !p.Ungraded {
		r.Scores = graders.Grade(gs, graders.Input{
			Case: c, ExitCode: res.ExitCode, TimedOut: res.TimedOut,
			FinalAnswer: ev.FinalAnswer, Trace: r.Trace, Usage: u,
		})
	}
	if runErr != nil {
		r.Scores = append(r.Scores, failScore("run", runErr.Message))
	}

	osResolved, osName := "defaulted", res.OS
	if c.Placement != nil && c.Placement.OS != "" {
		osResolved = "declared"
	}
	runtime := p.Runtime
	if runtime == "" {
		runtime = "local"
	}
	r.Execution = &eval.Execution{OS: osName, OSResolved: osResolved, Driver: res.Driver, Image: res.Image, Runtime: runtime}
	r.Process = &eval.Process{
		ExitCode: res.ExitCode, DurationMs: res.Duration.Milliseconds(),
		StdoutTail: res.StdoutTail, StderrTail: res.StderrTail, TimedOut: res.TimedOut,
	}
	r.Pass = runErr == nil && allPass(r.Scores)
	return r, runErr
}

// DefaultRunGraders grade a run whose case declares no graders, before
// the answer grader its expected answer adds (graders.ForCase).
var DefaultRunGraders = []registry.Grader{{ID: graders.KindExitCode}}

// failScore is the pass:false score that says why a case failed.
func failScore(id, reason string) eval.Score {
	f := false
	return eval.Score{GraderID: id, Metric: id, Value: 0, Pass: &f, Detail: clip(reason, 500)}
}

func allPass(scores []eval.Score) bool {
	for _, s := range scores {
		if s.Pass != nil && !*s.Pass {
			return false
		}
	}
	return true
}

// MaxTraceBytes bounds one line of a trace file; a driver keeps at most
// as much of the whole file (drivers.MaxOutput).
const MaxTraceBytes = 4 << 20

// ParseTrace reads the TraceEvent JSON lines a harness wrote to
// SVC_TRACE_FILE. A line that is not a valid event becomes an error event
// naming the line, so a broken trace is visible, never silently dropped.
func ParseTrace(data []byte) []eval.TraceEvent {
	events := []eval.TraceEvent{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), MaxTraceBytes)
	line := 0
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		if len(events) >= eval.MaxTraceEvents-1 {
			events = append(events, eval.TraceEvent{Kind: eval.EventError, Code: "TRACE_TRUNCATED",
				Message: fmt.Sprintf("the trace file holds more than %d events; the rest is not kept", eval.MaxTraceEvents-1)})
			break
		}
		var e eval.TraceEvent
		dec := json.NewDecoder(bytes.NewReader(text))
		err := dec.Decode(&e)
		if err == nil {
			err = e.Validate()
		}
		if err != nil {
			events = append(events, eval.TraceEvent{Kind: eval.EventError, Code: "BAD_TRACE_LINE",
				Message: clip(fmt.Sprintf("SVC_TRACE_FILE line %d is not a valid trace event: %v", line, err), 500)})
			continue
		}
		events = append(events, e)
	}
	if err := sc.Err(); err != nil {
		events = append(events, eval.TraceEvent{Kind: eval.EventError, Code: "BAD_TRACE_LINE",
			Message: fmt.Sprintf("SVC_TRACE_FILE could not be read past line %d: %v", line, err)})
	}
	return events
}

// taskText is the prompt of a snapshot: the task string, or its JSON.
func taskText(task any) string {
	switch t := task.(type) {
	case nil:
		return ""
	case string:
		return t
	}
	b, err := json.Marshal(task)
	if err != nil {
		return ""
	}
	return string(b)
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

// SealEvents is the canonical JSON of a trace and its sha256 digest, as
// the ledger seals them.
func SealEvents(events []eval.TraceEvent) ([]byte, string, error) {
	if events == nil {
		events = []eval.TraceEvent{}
	}
	// Each event's canonical bytes, joined: the same bytes as
	// registry.CanonicalJSON(events), without its marshal and re-decode.
	w := eventWriter{}
	out := make([]byte, 0, 256*len(events)+2)
	out = append(out, '[')
	var err error
	for i := range events {
		if i > 0 {
			out = append(out, ',')
		}
		if out, err = w.event(out, &events[i]); err != nil {
			break
		}
	}
	if err == nil {
		out = append(out, ']')
		return out, registry.Digest(out), nil
	}
	// The generic path says what is wrong, as it always did.
	canonical, err := registry.CanonicalJSON(events)
	if err != nil {
		return nil, "", fmt.Errorf("sealing the trace: %w", err)
	}
	return canonical, registry.Digest(canonical), nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
