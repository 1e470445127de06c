package trace

import (
	"errors"
	"strings"
	"testing"
	"time"

	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
)

func TestParseTrace(t *testing.T) {
	in := strings.Join([]string{
		`{"kind":"tool_call","name":"search"}`,
		``,
		`not json`,
		`{"kind":"teleport"}`,
		`{"kind":"message","role":"assistant","content":"done"}`,
	}, "\n")
	got := ParseTrace([]byte(in))
	kinds := []string{}
	for _, e := range got {
		kinds = append(kinds, e.Kind)
	}
	want := []string{"tool_call", "error", "error", "message"}
	if strings.Join(kinds, ",") != strings.Join(want, ",") {
		t.Fatalf("kinds %v, want %v", kinds, want)
	}
	if !strings.Contains(got[1].Message, "line 3") || !strings.Contains(got[2].Message, "teleport") {
		t.Errorf("bad lines are not named: %q, %q", got[1].Message, got[2].Message)
	}
	if ParseTrace(nil) == nil {
		t.Error("an empty trace is nil; want an empty array so results encode [] not null")
	}
}

func TestBuildResult(t *testing.T) {
	c := &registry.EvalCase{ID: "c", Task: "say hi", Expected: "hi",
		Graders: []registry.Grader{{ID: "exact"}}, Placement: &registry.Placement{OS: "linux"}}
	run := eval.Run{ID: "run_1", CaseID: "c", Case: c}
	plan := Dispatch{Harness: registry.Ref{ID: "h", Version: "2"}, HarnessDigest: "sha256:aa"}
	ok := JobOutput{ExitCode: 0, Stdout: "hi\n", Duration: 1500 * time.Millisecond, OS: "linux", Driver: "local",
		Trace: []byte(`{"kind":"llm_call","costUsd":0.5,"inputTokens":3}`)}

	r, rerr := BuildResult(run, plan, ok, nil, "w1")
	if rerr != nil || !r.Pass || r.Harness != "h@2" || r.Execution.OSResolved != "declared" || r.Usage.CostUSD != 0.5 || r.Usage.DurationMs != 1500 {
		t.Fatalf("ok result: %+v, %+v, err %+v", r, r.Execution, rerr)
	}
	if r.Snapshot.Prompt != "say hi" || r.Snapshot.Output != "hi" || r.Provenance.Worker != "w1" {
		t.Errorf("snapshot %+v provenance %+v", r.Snapshot, r.Provenance)
	}

	for _, tc := range []struct {
		name string
		res  JobOutput
		code string
	}{
		{"exit", JobOutput{ExitCode: 2, StderrTail: "a\nboom\n", Driver: "local"}, eval.CodeExit},
		{"timeout", JobOutput{ExitCode: -1, TimedOut: true, Driver: "local"}, eval.CodeTimeout},
		{"cancel", JobOutput{ExitCode: -1, Cancelled: true, Driver: "local"}, eval.CodeCancelled},
	} {
		r, rerr := BuildResult(run, plan, tc.res, nil, "w1")
		if rerr == nil || rerr.Code != tc.code || r.Pass {
			t.Errorf("%s: error %+v pass %v", tc.name, rerr, r.Pass)
			continue
		}
		last := r.Trace[len(r.Trace)-1]
		if last.Kind != eval.EventError || last.Code != tc.code {
			t.Errorf("%s: last event %+v, want an error event", tc.name, last)
		}
		if s := r.Scores[len(r.Scores)-1]; s.GraderID != "run" || s.Pass == nil || *s.Pass {
			t.Errorf("%s: last score %+v, want a failing run score", tc.name, s)
		}
		if r.Execution == nil {
			t.Errorf("%s: the job ran, so execution is recorded", tc.name)
		}
	}
	if r, _ := BuildResult(run, plan, JobOutput{ExitCode: 2, StderrTail: "a\nboom\n"}, nil, ""); !strings.Contains(r.Scores[len(r.Scores)-1].Detail, "boom") {
		t.Errorf("the exit failure does not quote stderr's last line: %+v", r.Scores)
	}

	r, rerr = BuildResult(run, plan, JobOutput{}, errors.New("harness h@2 is gone"), "w1")
	if rerr == nil || rerr.Code != eval.CodeDispatch || rerr.Phase != "dispatch" || r.Execution != nil || r.Pass {
		t.Errorf("dispatch failure: %+v %+v", rerr, r)
	}
	if len(r.Trace) != 1 || r.Trace[0].Kind != eval.EventError || len(r.Scores) != 1 || *r.Scores[0].Pass {
		t.Errorf("dispatch failure trace %+v scores %+v", r.Trace, r.Scores)
	}

	// No graders: the exit code is the verdict.
	bare := eval.Run{ID: "run_2", CaseID: "c", Case: &registry.EvalCase{ID: "c"}}
	r, _ = BuildResult(bare, plan, ok, nil, "")
	if len(r.Scores) != 1 || r.Scores[0].GraderID != "exit_code" || !r.Pass || r.Execution.OSResolved != "defaulted" {
		t.Errorf("default grading: %+v", r.Scores)
	}
}

func TestSealEventsIsStable(t *testing.T) {
	a, da, err := SealEvents([]eval.TraceEvent{{Kind: "span", Name: "x", Attributes: map[string]any{"b": 1, "a": 2}}})
	if err != nil {
		t.Fatal(err)
	}
	b, db, _ := SealEvents([]eval.TraceEvent{{Kind: "span", Name: "x", Attributes: map[string]any{"a": 2, "b": 1}}})
	if string(a) != string(b) || da != db || !strings.HasPrefix(da, "sha256:") {
		t.Errorf("seal differs for equal traces: %s %s / %s %s", a, da, b, db)
	}
	if e, _, _ := SealEvents(nil); string(e) != "[]" {
		t.Errorf("empty trace seals as %s, want []", e)
	}
}

// TestBuildResultNamesTheRunnerHost: a job a self-hosted runner ran names
// the runner's host in provenance.worker, not the worker that recorded it.
func TestBuildResultNamesTheRunnerHost(t *testing.T) {
	run := eval.Run{ID: "run_1", CaseID: "c"}
	r, _ := BuildResult(run, Dispatch{}, JobOutput{Driver: "local", Stdout: "ok", Host: "laptop-7"}, nil, "worker-1")
	if got := r.Provenance.Worker; got != "laptop-7" {
		t.Errorf("provenance.worker = %q, want the runner's host laptop-7", got)
	}
	r, _ = BuildResult(run, Dispatch{}, JobOutput{Driver: "local", Stdout: "ok"}, nil, "worker-1")
	if got := r.Provenance.Worker; got != "worker-1" {
		t.Errorf("provenance.worker = %q, want worker-1", got)
	}
}

// TestBuildResultSaysTheTraceFileWasRefused: a trace file the driver
// refused to read (issue 30) leaves an error event saying why.
func TestBuildResultSaysTheTraceFileWasRefused(t *testing.T) {
	run := eval.Run{ID: "run_1", CaseID: "c"}
	why := "the driver did not read the trace file (SVC_TRACE_FILE): it is a symbolic link"
	r, _ := BuildResult(run, Dispatch{}, JobOutput{Driver: "local", Stdout: "ok", TraceRefused: why}, nil, "w1")
	if len(r.Trace) != 1 || r.Trace[0].Kind != eval.EventError || r.Trace[0].Code != CodeTraceRefused || r.Trace[0].Message != why {
		t.Errorf("trace = %+v, want one %s error event saying %q", r.Trace, CodeTraceRefused, why)
	}
}

// TestBuildResultGradesMeteredCost: what the model proxy metered for the
// attempt is in usage.costUsd, beside the trace's cost, before the usd
// grader reads it: a run that cost more than its max fails.
func TestBuildResultGradesMeteredCost(t *testing.T) {
	c := &registry.EvalCase{ID: "c", Graders: []registry.Grader{
		{ID: "tight", Params: map[string]any{"kind": "usd", "max": 0.000001}},
		{ID: "loose", Params: map[string]any{"kind": "usd", "max": 0.01}},
	}}
	run := eval.Run{ID: "run_1", CaseID: "c", Case: c}
	job := JobOutput{Stdout: "ok", Trace: []byte(`{"kind":"llm_call","costUsd":0.000001}`)}
	r, _ := BuildResult(run, Dispatch{ModelCostUSD: 0.000009}, job, nil, "")
	if got := r.Usage.CostUSD; got < 0.0000099 || got > 0.0000101 {
		t.Errorf("usage.costUsd = %v, want the trace's 0.000001 plus the metered 0.000009", got)
	}
	if s := r.Scores[0]; s.Pass == nil || *s.Pass || !strings.Contains(s.Detail, "over the max") {
		t.Errorf("tight usd score %+v, want a failure over the max", s)
	}
	if s := r.Scores[1]; s.Pass == nil || !*s.Pass {
		t.Errorf("loose usd score %+v, want a pass", s)
	}
	if r.Pass {
		t.Error("the run passed although its metered cost is over a max")
	}
}

// TestBuildResultComparesExpected: a case with an expected answer and no
// graders is graded by its exit code and the default exact grader, so a
// wrong answer fails, naming both answers.
func TestBuildResultComparesExpected(t *testing.T) {
	c := &registry.EvalCase{ID: "c", Task: "What is 17 * 23?", Expected: "391"}
	run := eval.Run{ID: "run_1", CaseID: "c", Case: c}
	for _, tt := range []struct {
		stdout string
		pass   bool
		detail string
	}{
		{"391\n", true, ""},
		{"392\n", false, `expected "391", got "392"`},
	} {
		r, _ := BuildResult(run, Dispatch{}, JobOutput{Stdout: tt.stdout}, nil, "")
		var ids []string
		for _, s := range r.Scores {
			ids = append(ids, s.GraderID)
		}
		if strings.Join(ids, ",") != "exit_code,exact" || r.Pass != tt.pass || r.Scores[1].Detail != tt.detail {
			t.Errorf("answer %q: pass %v scores %+v, want exit_code and exact, pass %v, detail %q", tt.stdout, r.Pass, r.Scores, tt.pass, tt.detail)
		}
	}
	// A batch's graders override replaces the defaults.
	r, _ := BuildResult(run, Dispatch{Graders: []registry.Grader{{ID: "exit_code"}}}, JobOutput{Stdout: "392"}, nil, "")
	if len(r.Scores) != 1 || !r.Pass {
		t.Errorf("with an override: pass %v scores %+v, want the override alone", r.Pass, r.Scores)
	}
}

// TestIngestResultComparesExpected: an ingested trace whose case has an
// expected answer and no graders is measured and its answer compared.
func TestIngestResultComparesExpected(t *testing.T) {
	run := eval.Run{CaseID: "q", Case: &registry.EvalCase{ID: "q", Expected: "right"}}
	events := []eval.TraceEvent{{Kind: eval.EventMessage, Role: "assistant", Content: "wrong"}}
	r := IngestResult(run, Dispatch{}, events)
	var ids []string
	for _, s := range r.Scores {
		ids = append(ids, s.GraderID)
	}
	if strings.Join(ids, ",") != "tool_calls,usd,exact" || r.Pass {
		t.Errorf("scores %+v pass %v, want tool_calls, usd and a failing exact", r.Scores, r.Pass)
	}
}
