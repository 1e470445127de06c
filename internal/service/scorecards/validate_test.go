package scorecards

import (
	"errors"
	"math"
	"strings"
	"testing"

	"svc/internal/domain/gate"
	"svc/internal/domain/registry"
	"svc/internal/platform/derrors"
)

// validator is what each request checked here has.
type validator interface{ Validate() error }

// validateCase is one row: want "" accepts req, otherwise the refusal is
// ErrInvalid (a 400) and its message contains want, which names the field
// and says what to send.
type validateCase struct {
	name string
	req  validator
	want string
}

func runValidate(t *testing.T, cases []validateCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.req.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate(%+v) = %v, want nil", tc.req, err)
			case tc.want == "":
			case err == nil:
				t.Fatalf("Validate(%+v) = nil, want a refusal containing %q", tc.req, tc.want)
			case !errors.Is(err, derrors.ErrInvalid):
				t.Fatalf("Validate(%+v) = %v, want errors.Is ErrInvalid", tc.req, err)
			case !strings.Contains(err.Error(), tc.want):
				t.Fatalf("Validate(%+v) = %q, want it to contain %q", tc.req, err, tc.want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestSubmitRequestValidate(t *testing.T) {
	// submit is a valid request changed by edit.
	submit := func(edit func(*SubmitRequest)) *SubmitRequest {
		r := &SubmitRequest{Dataset: registry.Ref{ID: "qa", Version: "1.0.0"}, Harness: registry.Ref{ID: "agent", Version: "latest"}}
		edit(r)
		return r
	}
	runValidate(t, []validateCase{
		{name: "minimal", req: submit(func(*SubmitRequest) {})},
		{name: "every option", req: submit(func(r *SubmitRequest) {
			r.Judges = []JudgeSel{{ID: "tone"}, {ID: "facts", Version: "2.0.0"}}
			r.Runtime, r.Concurrency, r.Trials = "local", ptr(MaxConcurrency), ptr(MaxTrials)
			r.Cases = &Selection{IDs: []string{"c1"}, Tags: []string{"smoke"}, Limit: 1}
			r.Graders = []registry.Grader{{ID: "c", Params: map[string]any{"kind": "contains", "values": []string{"ok"}}}}
		})},
		{name: "no dataset id", req: submit(func(r *SubmitRequest) { r.Dataset.ID = "" }), want: "dataset.id is required"},
		{name: "bad dataset id", req: submit(func(r *SubmitRequest) { r.Dataset.ID = "Not An Id" }), want: "dataset.id: "},
		{name: "no dataset version", req: submit(func(r *SubmitRequest) { r.Dataset.Version = "" }),
			want: `dataset.version is required: an exact version or "latest"`},
		{name: "bad dataset version", req: submit(func(r *SubmitRequest) { r.Dataset.Version = "v 1" }), want: "dataset.version: "},
		{name: "no harness id", req: submit(func(r *SubmitRequest) { r.Harness.ID = "" }), want: "harness.id is required"},
		{name: "bad harness id", req: submit(func(r *SubmitRequest) { r.Harness.ID = "a/b" }), want: "harness.id: "},
		{name: "no harness version", req: submit(func(r *SubmitRequest) { r.Harness.Version = "" }), want: "harness.version is required"},
		{name: "bad harness version", req: submit(func(r *SubmitRequest) { r.Harness.Version = "v 1" }), want: "harness.version: "},
		{name: "concurrency 0", req: submit(func(r *SubmitRequest) { r.Concurrency = ptr(0) }), want: "concurrency must be an integer from 1 to 64, not 0"},
		{name: "concurrency too high", req: submit(func(r *SubmitRequest) { r.Concurrency = ptr(MaxConcurrency + 1) }), want: "concurrency must be an integer from 1 to 64, not 65"},
		{name: "trials 0", req: submit(func(r *SubmitRequest) { r.Trials = ptr(0) }), want: "trials must be an integer from 1 to 100, not 0"},
		{name: "trials too high", req: submit(func(r *SubmitRequest) { r.Trials = ptr(MaxTrials + 1) }), want: "trials must be an integer from 1 to 100, not 101"},
		{name: "bad runtime", req: submit(func(r *SubmitRequest) { r.Runtime = "no such/runtime" }), want: "runtime: "},
		{name: "too many judges", req: submit(func(r *SubmitRequest) {
			for i := range MaxJudges + 1 {
				r.Judges = append(r.Judges, JudgeSel{ID: "j" + strings.Repeat("x", i)})
			}
		}), want: "at most 20 judges per batch, not 21"},
		{name: "judge without id", req: submit(func(r *SubmitRequest) { r.Judges = []JudgeSel{{ID: "tone"}, {}} }), want: "judges[1].id is required"},
		{name: "judge named twice", req: submit(func(r *SubmitRequest) { r.Judges = []JudgeSel{{ID: "tone"}, {ID: "tone", Version: "1.0.0"}} }),
			want: `judge "tone" is named twice; name each judge once`},
		{name: "bad judge id", req: submit(func(r *SubmitRequest) { r.Judges = []JudgeSel{{ID: "Tone!"}} }), want: "judges[0].id: "},
		{name: "bad judge version", req: submit(func(r *SubmitRequest) { r.Judges = []JudgeSel{{ID: "tone", Version: "v 1"}} }), want: "judges[0].version: "},
		{name: "negative limit", req: submit(func(r *SubmitRequest) { r.Cases = &Selection{Limit: -1} }), want: "cases.limit must be 1 or more, not -1"},
		{name: "empty case id", req: submit(func(r *SubmitRequest) { r.Cases = &Selection{IDs: []string{"c1", ""}} }), want: "cases.ids[1] is empty"},
		{name: "grader of an unknown kind", req: submit(func(r *SubmitRequest) {
			r.Graders = []registry.Grader{{ID: "ok", Params: map[string]any{"kind": "exit_code"}}, {ID: "x", Params: map[string]any{"kind": "no_such_kind"}}}
		}), want: "graders[1]: "},
	})
}

func TestGroupRequestValidate(t *testing.T) {
	h := registry.Ref{ID: "agent", Version: "1.2.0"}
	task := func(p string) *struct {
		Prompt string `json:"prompt"`
	} {
		return &struct {
			Prompt string `json:"prompt"`
		}{Prompt: p}
	}
	runValidate(t, []validateCase{
		{name: "a dataset", req: &GroupRequest{Harness: h, Dataset: &registry.Ref{ID: "qa", Version: "latest"}}},
		{name: "a task", req: &GroupRequest{Harness: h, Task: task("say hi"), Trials: ptr(5), Concurrency: ptr(2), Runtime: "local"}},
		{name: "neither dataset nor task", req: &GroupRequest{Harness: h},
			want: "send a dataset ({id, version}) or a task ({prompt}): an experiment needs one"},
		{name: "both dataset and task", req: &GroupRequest{Harness: h, Dataset: &registry.Ref{ID: "qa", Version: "latest"}, Task: task("hi")},
			want: "send a dataset or a task, not both"},
		{name: "dataset without id", req: &GroupRequest{Harness: h, Dataset: &registry.Ref{Version: "latest"}}, want: "dataset.id is required"},
		{name: "dataset without version", req: &GroupRequest{Harness: h, Dataset: &registry.Ref{ID: "qa"}}, want: "dataset.version is required"},
		{name: "blank prompt", req: &GroupRequest{Harness: h, Task: task(" \n")}, want: "task.prompt is required: the prompt of the one-off task"},
		{name: "no harness id", req: &GroupRequest{Harness: registry.Ref{Version: "1.0.0"}, Task: task("hi")}, want: "harness.id is required"},
		{name: "no harness version", req: &GroupRequest{Harness: registry.Ref{ID: "agent"}, Task: task("hi")}, want: "harness.version is required"},
		{name: "trials 0", req: &GroupRequest{Harness: h, Task: task("hi"), Trials: ptr(0)}, want: "trials must be an integer from 1 to 100"},
		{name: "concurrency too high", req: &GroupRequest{Harness: h, Task: task("hi"), Concurrency: ptr(1000)},
			want: "concurrency must be an integer from 1 to 64, not 1000"},
		{name: "bad runtime", req: &GroupRequest{Harness: h, Task: task("hi"), Runtime: "Local Runtime"}, want: "runtime: "},
	})
}

func TestScoreRequestValidate(t *testing.T) {
	runValidate(t, []validateCase{
		{name: "one judge", req: &ScoreRequest{Judges: []JudgeSel{{ID: "tone"}}}},
		{name: "two judges, one pinned", req: &ScoreRequest{Judges: []JudgeSel{{ID: "tone"}, {ID: "facts", Version: "1.0.0"}}}},
		{name: "no judges", req: &ScoreRequest{},
			want: "judges is required: the judges ([{id, version?}]) whose verdicts this pass replaces"},
		{name: "judge without id", req: &ScoreRequest{Judges: []JudgeSel{{Version: "1.0.0"}}}, want: "judges[0].id is required"},
		{name: "judge named twice", req: &ScoreRequest{Judges: []JudgeSel{{ID: "tone"}, {ID: "tone"}}}, want: `judge "tone" is named twice`},
		{name: "bad judge version", req: &ScoreRequest{Judges: []JudgeSel{{ID: "tone", Version: "one two"}}}, want: "judges[0].version: "},
	})
}

func TestGateRequestValidate(t *testing.T) {
	runValidate(t, []validateCase{
		{name: "ids and the default policy", req: &GateRequest{Baseline: "sc_1", Candidate: "sc_2"}},
		{name: "a full policy", req: &GateRequest{Baseline: "sc_1", Candidate: "sc_2", Policy: gate.GatePolicy{
			MaxRegressions: ptr(1), MinDelta: 0.05, Alpha: 0.1, FDRAlpha: ptr(0.2),
			AllowConfounds: []string{gate.AxisRuntime, gate.AxisJudges}, AllowPartial: true, Metric: "casePass",
		}}},
		{name: "no baseline", req: &GateRequest{Candidate: "sc_2"},
			want: "baseline and candidate are required: the ids of the two scorecards to compare"},
		{name: "no candidate", req: &GateRequest{Baseline: "sc_1"}, want: "baseline and candidate are required"},
		{name: "negative maxRegressions", req: &GateRequest{Baseline: "a", Candidate: "b", Policy: gate.GatePolicy{MaxRegressions: ptr(-1)}},
			want: "gate policy: maxRegressions: -1 is negative"},
		{name: "negative minDelta", req: &GateRequest{Baseline: "a", Candidate: "b", Policy: gate.GatePolicy{MinDelta: -0.1}},
			want: "minDelta: -0.1 must be a finite number >= 0"},
		{name: "infinite minDelta", req: &GateRequest{Baseline: "a", Candidate: "b", Policy: gate.GatePolicy{MinDelta: math.Inf(1)}},
			want: "minDelta: +Inf must be a finite number >= 0"},
		{name: "alpha of 1", req: &GateRequest{Baseline: "a", Candidate: "b", Policy: gate.GatePolicy{Alpha: 1}}, want: "alpha: 1 must be in (0, 1)"},
		{name: "fdrAlpha of 0", req: &GateRequest{Baseline: "a", Candidate: "b", Policy: gate.GatePolicy{FDRAlpha: ptr(0.0)}},
			want: "fdrAlpha: 0 must be in (0, 1)"},
		{name: "harness as a confound", req: &GateRequest{Baseline: "a", Candidate: "b", Policy: gate.GatePolicy{AllowConfounds: []string{gate.AxisHarness}}},
			want: "allowConfounds[0]: harness is the treatment, not a confound"},
		{name: "an unknown axis", req: &GateRequest{Baseline: "a", Candidate: "b", Policy: gate.GatePolicy{AllowConfounds: []string{"dataset", "model"}}},
			want: `allowConfounds[1]: "model" is not an axis (dataset, grading, judges, policy, runtime)`},
		{name: "blank metric", req: &GateRequest{Baseline: "a", Candidate: "b", Policy: gate.GatePolicy{Metric: "  "}}, want: "metric: must not be blank"},
		{name: "every policy problem at once", req: &GateRequest{Baseline: "a", Candidate: "b", Policy: gate.GatePolicy{MaxRegressions: ptr(-2), Alpha: 2}},
			want: "maxRegressions: -2 is negative; alpha: 2 must be in (0, 1)"},
	})
}
