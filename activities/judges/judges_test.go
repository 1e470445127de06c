package judges

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"svc/drivers"
	"svc/drivers/local"
	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
	"svc/internal/platform/derrors"
)

// newRunner returns a Runner on a local driver of its own.
func newRunner(t *testing.T) *Runner {
	t.Helper()
	return &Runner{Driver: local.New(local.Options{Root: t.TempDir()})}
}

// codeJudge returns a code judge with the given language and source.
func codeJudge(id, lang, code string) *registry.JudgeSpec {
	return &registry.JudgeSpec{Kind: registry.JudgeCode, ID: id, Version: "1",
		Code: &registry.CodeJudge{Language: lang, Code: code}}
}

// jobSeq makes job ids unique across the tests of this process.
var jobSeq atomic.Int64

func newJobID() string {
	return fmt.Sprintf("judge-test-%d", jobSeq.Add(1))
}

func TestRunScores(t *testing.T) {
	tests := []struct {
		name  string
		judge *registry.JudgeSpec
		want  []eval.Score
	}{
		{
			name: "python one score named judge",
			judge: codeJudge("acc", "python", `import json
print(json.dumps({"metric": "judge", "value": 1, "pass": True, "detail": "ok"}))
`),
			want: []eval.Score{{GraderID: "acc", Metric: "judge:acc", Value: 1, Pass: verdict(true), Detail: "ok"}},
		},
		{
			name: "python score array with sub-metrics",
			judge: codeJudge("acc", "python", `import json
print(json.dumps([
    {"metric": "judge", "value": 0.5},
    {"metric": "tone", "value": 1, "pass": True},
    {"metric": "judge:acc:length", "value": 0.25, "pass": False, "graderId": "mine"},
]))
`),
			want: []eval.Score{
				{GraderID: "acc", Metric: "judge:acc", Value: 0.5},
				{GraderID: "acc", Metric: "judge:acc:tone", Value: 1, Pass: verdict(true)},
				{GraderID: "mine", Metric: "judge:acc:length", Value: 0.25, Pass: verdict(false)},
			},
		},
		{
			name: "python debug prints before a pretty-printed score",
			judge: codeJudge("dbg", "python", `import json, sys
print("loading the trace")
print(json.dumps({"metric": "judge", "value": 9}))
print("stderr noise", file=sys.stderr)
print(json.dumps({"metric": "judge", "value": 0.75, "detail": "final"}, indent=2))
`),
			want: []eval.Score{{GraderID: "dbg", Metric: "judge:dbg", Value: 0.75, Detail: "final"}},
		},
		{
			name: "node CommonJS",
			judge: codeJudge("nd", "node", `const fs = require('fs');
const input = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
console.log('debug');
console.log(JSON.stringify({metric: 'judge', value: 1, pass: true, detail: input.case.id}));
`),
			want: []eval.Score{{GraderID: "nd", Metric: "judge:nd", Value: 1, Pass: verdict(true), Detail: "case-1"}},
		},
		{
			name: "node ES module",
			judge: codeJudge("esm", "node", `import { readFileSync } from 'node:fs';
const input = JSON.parse(readFileSync(process.argv[2], 'utf8'));
console.log(JSON.stringify([{metric: 'steps', value: input.trace.length}]));
`),
			want: []eval.Score{{GraderID: "esm", Metric: "judge:esm:steps", Value: 2}},
		},
		{
			name: "output past the driver's cap: the score at its end still counts",
			judge: codeJudge("big", "python", `import json, sys
sys.stdout.write("x" * 5_000_000 + "\n")
print(json.dumps({"metric": "judge", "value": 1}))
`),
			want: []eval.Score{{GraderID: "big", Metric: "judge:big", Value: 1}},
		},
	}
	in := Input{
		Case:  registry.EvalCase{ID: "case-1"},
		Trace: []eval.TraceEvent{{Kind: eval.EventToolCall, Name: "ls"}, {Kind: eval.EventMessage, Role: "assistant", Content: "done"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := newRunner(t).Run(t.Context(), tt.judge, in, newJobID())
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Run scores (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRunSkips(t *testing.T) {
	tests := []struct {
		name   string
		judge  *registry.JudgeSpec
		runner func(*Runner)
		// detail must contain each of these.
		has []string
	}{
		{
			name: "non-zero exit quotes the traceback",
			judge: codeJudge("crash", "python", `import json
print("partial")
raise ValueError("no final answer to read")
`),
			has: []string{"judge crash exited with code 1", "stderr:", "ValueError: no final answer to read"},
		},
		{
			name:  "explicit exit code",
			judge: codeJudge("exit", "node", `console.error('bad state'); process.exit(3);`),
			has:   []string{"exited with code 3", "bad state"},
		},
		{
			name: "timeout",
			judge: &registry.JudgeSpec{Kind: registry.JudgeCode, ID: "slow", Version: "1",
				Code: &registry.CodeJudge{Language: "python", Code: "while True:\n    pass\n", TimeoutSec: 1}},
			has: []string{"judge slow timed out after 1s"},
		},
		{
			name:  "no JSON at all",
			judge: codeJudge("mal", "python", `print("the answer looks right")`),
			has:   []string{"judge mal printed no valid score", "does not end with a JSON object or array"},
		},
		{
			name:  "a value that is not a number",
			judge: codeJudge("mal2", "python", `print('{"metric": "judge", "value": "high"}')`),
			has:   []string{"printed no valid score", `"value" must be a number, got a string`},
		},
		{
			name:  "nothing printed",
			judge: codeJudge("quiet", "python", `x = 1`),
			has:   []string{"stdout is empty"},
		},
		{
			name:   "missing interpreter",
			judge:  codeJudge("py", "python", `print('{"metric": "judge", "value": 1}')`),
			runner: func(r *Runner) { r.Python = "/nonexistent/python" },
			has:    []string{"judge py could not start /nonexistent/python", "does not exist"},
		},
		{
			name: "entrypoint in an image",
			judge: &registry.JudgeSpec{Kind: registry.JudgeCode, ID: "img", Version: "1",
				Code: &registry.CodeJudge{Language: "python", Entrypoint: "/judge/main.py", Image: "ghcr.io/acme/judge:1"}},
			has: []string{"skipped: judge img runs its entrypoint in image ghcr.io/acme/judge:1, which the local runtime cannot run"},
		},
		{
			name: "legacy model judge",
			judge: &registry.JudgeSpec{Kind: registry.JudgeModel, ID: "llm", Version: "1",
				Model: &registry.ModelJudge{Model: "m", Rubric: &registry.RubricInput{Text: "be right"},
					Criteria: []registry.Criterion{{ID: "correct"}}}},
			has: []string{"skipped: legacy model judges need a model dispatcher, which this deployment does not configure"},
		},
		{
			name: "legacy harness judge",
			judge: &registry.JudgeSpec{Kind: registry.JudgeHarness, ID: "hj", Version: "1",
				Harness: &registry.HarnessJudge{Harness: registry.Ref{ID: "h", Version: "1"}}},
			has: []string{"skipped: harness judges run their harness as a run of the worker"},
		},
		{
			name:  "unsupported language",
			judge: codeJudge("rb", "ruby", `puts 1`),
			has:   []string{`judge rb is written in "ruby"`},
		},
		{
			name:  "empty code",
			judge: codeJudge("empty", "python", "  \n"),
			has:   []string{"judge empty has no code"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newRunner(t)
			if tt.runner != nil {
				tt.runner(r)
			}
			got, err := r.Run(t.Context(), tt.judge, Input{Case: registry.EvalCase{ID: "c"}}, newJobID())
			if err != nil {
				t.Fatalf("Run: %v, want a skip score", err)
			}
			if len(got) != 1 || !IsSkip(got[0]) {
				t.Fatalf("Run = %+v, want one skip score", got)
			}
			s := got[0]
			t.Logf("detail: %s", s.Detail)
			if s.Metric != "judge:"+tt.judge.ID || s.GraderID != tt.judge.ID {
				t.Errorf("skip score metric %q grader %q, want judge:%s and %s", s.Metric, s.GraderID, tt.judge.ID, tt.judge.ID)
			}
			for _, h := range tt.has {
				if !strings.Contains(s.Detail, h) {
					t.Errorf("skip detail = %q, want it to contain %q", s.Detail, h)
				}
			}
		})
	}
}

// TestRunInput checks what a judge reads at argv[1].
func TestRunInput(t *testing.T) {
	t.Parallel()
	judge := codeJudge("reader", "python", `import json, os, sys
with open(sys.argv[1]) as f:
    inp = json.load(f)
seen = {
    "argv1": sys.argv[1],
    "case": inp["case"]["id"],
    "milestones": [m["id"] for m in inp["case"]["milestones"]],
    "trace": [e["kind"] for e in inp["trace"]],
    "output": inp["snapshot"]["output"],
    "final": inp["evidence"]["finalAnswer"],
    "tools": inp["evidence"]["toolCalls"],
}
print(json.dumps({"metric": "judge", "value": 1, "detail": json.dumps(seen)}))
`)
	in := Input{
		Case: registry.EvalCase{ID: "c-7", Task: "list files",
			Milestones: []registry.Milestone{{ID: "listed"}, {ID: "answered"}}},
		Trace: []eval.TraceEvent{
			{Kind: eval.EventToolCall, Name: "ls"},
			{Kind: eval.EventMessage, Role: "assistant", Content: "a b"},
		},
		Snapshot: &eval.Snapshot{Kind: "prompt", Prompt: "list files", Output: "a b"},
		Evidence: &eval.Evidence{FinalAnswer: "a b", ToolCalls: []string{"ls"}},
	}
	got, err := newRunner(t).Run(t.Context(), judge, in, newJobID())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(got) != 1 || IsSkip(got[0]) {
		t.Fatalf("Run = %+v, want one score", got)
	}
	type seen struct {
		Argv1      string   `json:"argv1"`
		Case       string   `json:"case"`
		Milestones []string `json:"milestones"`
		Trace      []string `json:"trace"`
		Output     string   `json:"output"`
		Final      string   `json:"final"`
		Tools      []string `json:"tools"`
	}
	var s seen
	if err := json.Unmarshal([]byte(got[0].Detail), &s); err != nil {
		t.Fatalf("detail %q: %v", got[0].Detail, err)
	}
	want := seen{Argv1: InputFile, Case: "c-7", Milestones: []string{"listed", "answered"},
		Trace: []string{"tool_call", "message"}, Output: "a b", Final: "a b", Tools: []string{"ls"}}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("what the judge read (-want +got):\n%s", diff)
	}
}

// TestRunEmptyInput checks that an absent trace reads as [] and absent
// snapshot and evidence as null.
func TestRunEmptyInput(t *testing.T) {
	t.Parallel()
	judge := codeJudge("empty-in", "python", `import json, sys
inp = json.load(open(sys.argv[1]))
ok = inp["trace"] == [] and inp["snapshot"] is None and inp["evidence"] is None
print(json.dumps({"metric": "judge", "value": 1 if ok else 0, "detail": json.dumps(inp)}))
`)
	got, err := newRunner(t).Run(t.Context(), judge, Input{Case: registry.EvalCase{ID: "c"}}, newJobID())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(got) != 1 || got[0].Value != 1 {
		t.Errorf("Run = %+v, want value 1 (trace [], snapshot and evidence null)", got)
	}
}

func TestRunCancel(t *testing.T) {
	t.Parallel()
	judge := codeJudge("stuck", "python", `import sys, time
print("started", file=sys.stderr, flush=True)
while True:
    time.sleep(0.05)
`)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	r := newRunner(t)
	// Cancel once the judge is known to run: no sleep in the test.
	r.Log = func(_, stream string, _ []byte) {
		if stream == "stderr" {
			cancel()
		}
	}
	got, err := r.Run(ctx, judge, Input{}, newJobID())
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %+v, %v; want context.Canceled", got, err)
	}

	// A context already ended runs nothing.
	if got, err := newRunner(t).Run(ctx, codeJudge("x", "python", "pass"), Input{}, newJobID()); !errors.Is(err, context.Canceled) {
		t.Errorf("Run on an ended context = %+v, %v; want context.Canceled", got, err)
	}
}

func TestRunBadCall(t *testing.T) {
	r := newRunner(t)
	if _, err := r.Run(t.Context(), nil, Input{}, "j"); !errors.Is(err, derrors.ErrInvalid) {
		t.Errorf("Run(nil judge) error = %v, want ErrInvalid", err)
	}
	if _, err := r.Run(t.Context(), codeJudge("a", "python", "pass"), Input{}, ""); !errors.Is(err, derrors.ErrInvalid) {
		t.Errorf("Run(empty job id) error = %v, want ErrInvalid", err)
	}
}

// failingDriver fails every job with err.
type failingDriver struct{ err error }

func (d failingDriver) Run(context.Context, drivers.Job) (drivers.Result, error) {
	return drivers.Result{}, d.err
}

func TestRunDriverErrors(t *testing.T) {
	judge := codeJudge("a", "python", "pass")
	infra := errors.New("supervisor lost")
	r := &Runner{Driver: failingDriver{infra}}
	if _, err := r.Run(t.Context(), judge, Input{}, "j"); !errors.Is(err, infra) {
		t.Errorf("Run with a failing driver: error = %v, want it to wrap %v", err, infra)
	}
	r = &Runner{Driver: failingDriver{derrors.Invalidf("cannot start")}}
	got, err := r.Run(t.Context(), judge, Input{}, "j")
	if err != nil || len(got) != 1 || !IsSkip(got[0]) {
		t.Errorf("Run with an unrunnable job = %+v, %v; want one skip score", got, err)
	}
}

// recordingDriver records the job and answers with res.
type recordingDriver struct {
	job *drivers.Job
	res drivers.Result
}

func (d *recordingDriver) Run(_ context.Context, j drivers.Job) (drivers.Result, error) {
	*d.job = j
	return d.res, nil
}

func TestRunJob(t *testing.T) {
	var job drivers.Job
	d := &recordingDriver{job: &job, res: drivers.Result{Stdout: `{"metric":"judge","value":1}`}}
	tests := []struct {
		name        string
		runner      Runner
		code        registry.CodeJudge
		wantCommand []string
		wantFile    string
		wantTimeout string
	}{
		{"python defaults", Runner{}, registry.CodeJudge{Language: "python", Code: "pass"},
			[]string{"python3", "judge.py", "input.json"}, "judge.py", "1m0s"},
		{"node, own timeout", Runner{Node: "/opt/node22/bin/node"}, registry.CodeJudge{Language: "node", Code: "1", TimeoutSec: 5},
			[]string{"/opt/node22/bin/node", "judge.js", "input.json"}, "judge.js", "5s"},
		{"runner default timeout", Runner{Python: "py", DefaultTimeout: 7e9}, registry.CodeJudge{Language: "python", Code: "pass"},
			[]string{"py", "judge.py", "input.json"}, "judge.py", "7s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.runner
			r.Driver = d
			j := &registry.JudgeSpec{Kind: registry.JudgeCode, ID: "a", Code: &tt.code}
			if _, err := r.Run(t.Context(), j, Input{}, "job-1"); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantCommand, job.Command); diff != "" {
				t.Errorf("command (-want +got):\n%s", diff)
			}
			if job.RunID != "job-1" || job.Files[tt.wantFile] != tt.code.Code || job.Files[InputFile] == "" {
				t.Errorf("job id %q files %v, want job-1 with %s and %s", job.RunID, job.Files, tt.wantFile, InputFile)
			}
			if got := job.Timeout.String(); got != tt.wantTimeout {
				t.Errorf("timeout = %s, want %s", got, tt.wantTimeout)
			}
		})
	}
}

func TestJudgeStdout(t *testing.T) {
	capped := strings.Repeat("x", drivers.MaxOutput)
	tests := []struct {
		res  drivers.Result
		want string
	}{
		{drivers.Result{Stdout: "all", StdoutTail: "ll"}, "all"},
		{drivers.Result{Stdout: capped, StdoutTail: "tail"}, "tail"},
	}
	for _, tt := range tests {
		if got := judgeStdout(tt.res); got != tt.want {
			t.Errorf("judgeStdout(%d bytes) = %.10q, want %q", len(tt.res.Stdout), got, tt.want)
		}
	}
}

func TestNodeFile(t *testing.T) {
	tests := []struct {
		code, want string
	}{
		{`const fs = require('fs');`, "judge.js"},
		{`import fs from 'node:fs';`, "judge.mjs"},
		{`import {readFileSync} from "fs"`, "judge.mjs"},
		{`import * as fs from "fs"`, "judge.mjs"},
		{"  export const x = 1;", "judge.mjs"},
		{`const u = new URL(import.meta.url);`, "judge.mjs"},
		{`import('node:fs').then((fs) => run(fs));`, "judge.js"},
		{`// imports nothing`, "judge.js"},
	}
	for _, tt := range tests {
		if got := nodeFile(tt.code); got != tt.want {
			t.Errorf("nodeFile(%q) = %s, want %s", tt.code, got, tt.want)
		}
	}
}
