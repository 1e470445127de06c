package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"svc/api"
	"svc/api/apitest"
	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
	"svc/store/records"
)

// builtinKinds is how an unknown-kind message lists the built-in kinds.
const builtinKinds = "(built-in kinds: contains, exact, exit_code, json_match, regex, span, tool_calls, usd)"

// graderProblem is one problem the checker must report: the grader's
// position in its list and the text after the position.
type graderProblem struct {
	at   int
	text string
}

// graderRows are lists of graders and what the checker says of them,
// whichever route declares them. A row with no problems is accepted.
var graderRows = []struct {
	name     string
	graders  string
	problems []graderProblem
}{
	// The graders of the issue.
	{"mx on tool_calls", `[{"id":"calls","kind":"tool_calls","mx":0}]`, []graderProblem{
		{0, `grader "calls": mx: is not a parameter of tool_calls graders (they take name, min, max, expect); did you mean "max"?`}}},
	{"ignorecase on contains", `[{"id":"c","kind":"contains","value":"paris","ignorecase":true}]`, []graderProblem{
		{0, `grader "c": ignorecase: is not a parameter of contains graders (they take value, values, ignoreCase); did you mean "ignoreCase"?`}}},
	{"ignorecase on exact", `[{"id":"x","kind":"exact","value":"Paris","ignorecase":true}]`, []graderProblem{
		{0, `grader "x": ignorecase: is not a parameter of exact graders (they take value, trim, ignoreCase); did you mean "ignoreCase"?`}}},
	{"kind exactly", `[{"id":"answer","kind":"exactly"}]`, []graderProblem{
		{0, `grader "answer": kind: unknown grader kind "exactly" ` + builtinKinds + `; did you mean "exact"?`}}},
	{"regex lookahead", `[{"id":"r","kind":"regex","pattern":"(?=x)"}]`, []graderProblem{
		{0, "grader \"r\": pattern: is not a valid Go regular expression: RE2, Go's syntax, has no look-ahead such as (?=...) or (?!...) (at `(?=`); match the text itself, or check what must not appear with a second grader"}}},
	{"llm then a bad one: positions as sent", `[{"id":"a","kind":"llm"},{"id":"b","kind":"tool_calls","mx":1}]`, []graderProblem{
		{0, `grader "a": kind: unknown grader kind "llm" ` + builtinKinds},
		{1, `grader "b": mx: is not a parameter of tool_calls graders (they take name, min, max, expect); did you mean "max"?`}}},
	{"unknown kind named by the id", `[{"id":"exit_code"},{"id":"tests"}]`, []graderProblem{
		{1, `grader "tests": kind: unknown grader kind "tests" ` + builtinKinds + `; with no kind given, the id names the kind, so add "kind" naming a built-in one`}}},

	// One good and one bad grader of every kind.
	{"exit_code good", `[{"id":"exit_code"},{"id":"fails","kind":"exit_code","expect":1}]`, nil},
	{"exit_code bad", `[{"id":"e","kind":"exit_code","expect":0.5}]`, []graderProblem{
		{0, `grader "e": expect: must be a whole number, not a number`}}},
	{"contains good", `[{"id":"c","kind":"contains","values":["a","b"],"ignoreCase":true}]`, nil},
	{"contains bad", `[{"id":"c","kind":"contains","value":"a","values":["b"]}]`, []graderProblem{
		{0, `grader "c": values: give value or values, not both`}}},
	{"regex good", `[{"id":"r","type":"regex","pattern":"(?m)^Answer: [A-D]$"}]`, nil},
	{"regex bad", `[{"id":"r","kind":"regex"}]`, []graderProblem{
		{0, `grader "r": pattern: is required: a Go regular expression (RE2 syntax)`}}},
	{"exact good", `[{"id":"answer","kind":"exact","value":"Paris","ignoreCase":true,"trim":false}]`, nil},
	{"exact bad", `[{"id":"answer","kind":"exact","value":["Paris"]}]`, []graderProblem{
		{0, `grader "answer": value: must be a string, not a list`}}},
	{"json_match good", `[{"id":"total","kind":"json_match","path":"summary.total","value":42}]`, nil},
	{"json_match bad", `[{"id":"total","kind":"json_match","path":"summary..total","value":42}]`, []graderProblem{
		{0, `grader "total": path: "summary..total" must be a dot path such as a.b.0, with no empty segments`}}},
	{"tool_calls good", `[{"id":"no-shell","kind":"tool_calls","name":"shell","max":0},{"id":"tool_calls"}]`, nil},
	{"tool_calls bad", `[{"id":"t","kind":"tool_calls","min":4,"max":3}]`, []graderProblem{
		{0, `grader "t": min: 4 is above max 3`}}},
	{"usd good", `[{"id":"budget","kind":"usd","max":0.05}]`, nil},
	{"usd bad", `[{"id":"budget","kind":"usd","max":"0.05"}]`, []graderProblem{
		{0, `grader "budget": max: must be a number, not a string`}}},
	{"span good", `[{"id":"kb","kind":"span","name":"retrieve","attributes":{"source":"kb"}}]`, nil},
	{"span bad", `[{"id":"kb","kind":"span","name":"retrieve","attributes":["kb"]}]`, []graderProblem{
		{0, `grader "kb": attributes: must be an object of attribute name -> value, not a list`}}},
}

// graderCheckEnv is a workspace with a harness, a dataset and an
// orchestrator and starter that accept everything, so a refusal can only
// come from the checker.
func graderCheckEnv(t *testing.T) (*testEnv, tenant) {
	t.Helper()
	e := newEnv(t, withOrchestrator(newFakeOrchestrator()), withServerOptions(func(o *api.Options) { o.Starter = acceptStarter{} }))
	a := e.tenant(t, "graders")
	e.register(t, a.key, "/harnesses", harnessSpec("h", "1.0.0", "img:1"), http.StatusCreated)
	e.register(t, a.key, "/datasets", `{"id":"base","version":"1.0.0","cases":[{"id":"c1","task":"t","graders":[{"id":"exit_code"}]}]}`, http.StatusCreated)
	return e, a
}

// checkRefusal checks a 400's message against the problems, each rendered
// by format from its position and text.
func checkRefusal(t *testing.T, res *apitest.Response, problems []graderProblem, format string) {
	t.Helper()
	var parts []string
	for _, p := range problems {
		parts = append(parts, fmt.Sprintf(format, p.at, p.text))
	}
	wantMsg := "invalid argument: " + strings.Join(parts, "; ")
	if got := res.ErrorInfo(t).Message; got != wantMsg {
		t.Errorf("message:\n got %s\nwant %s", got, wantMsg)
	}
}

func TestGraderCheckRuns(t *testing.T) {
	e, a := graderCheckEnv(t)
	for _, tc := range graderRows {
		t.Run(tc.name, func(t *testing.T) {
			body := fmt.Sprintf(`{"harness":{"id":"h","version":"1.0.0"},"case":{"id":"c","task":"t","graders":%s}}`, tc.graders)
			res := e.do(t, http.MethodPost, "/runs", body, bearer(a.key))
			if len(tc.problems) == 0 {
				want(t, res, http.StatusAccepted, "POST /runs")
				return
			}
			want(t, res, http.StatusBadRequest, "POST /runs")
			checkRefusal(t, res, tc.problems, "case.graders[%d]: %s")
		})
	}
}

func TestGraderCheckScorecardOverride(t *testing.T) {
	e, a := graderCheckEnv(t)
	for _, tc := range graderRows {
		t.Run(tc.name, func(t *testing.T) {
			body := fmt.Sprintf(`{"dataset":{"id":"base","version":"1.0.0"},"harness":{"id":"h","version":"1.0.0"},"graders":%s}`, tc.graders)
			res := e.do(t, http.MethodPost, "/scorecards", body, bearer(a.key))
			if len(tc.problems) == 0 {
				want(t, res, http.StatusAccepted, "POST /scorecards")
				return
			}
			want(t, res, http.StatusBadRequest, "POST /scorecards")
			checkRefusal(t, res, tc.problems, "graders[%d]: %s")
		})
	}
}

// TestGraderCheckDatasets puts each row's graders on the second case of a
// dataset, and registers and validates it.
func TestGraderCheckDatasets(t *testing.T) {
	e, a := graderCheckEnv(t)
	for i, tc := range graderRows {
		t.Run(tc.name, func(t *testing.T) {
			id := fmt.Sprintf("ds%d", i)
			body := fmt.Sprintf(`{"id":%q,"version":"1.0.0","cases":[{"id":"c1","task":"t","graders":[{"id":"exit_code"}]},{"id":"c2","task":"t","graders":%s}]}`, id, tc.graders)
			var wantProblems []registry.Problem
			for _, p := range tc.problems {
				wantProblems = append(wantProblems, registry.Problem{Path: fmt.Sprintf("cases[1].graders[%d]", p.at), Message: `case "c2", ` + p.text})
			}

			v := decode[validationJSON](t, e.do(t, http.MethodPost, "/datasets/validate", body, bearer(a.key)))
			if v.Valid != (len(tc.problems) == 0) {
				t.Errorf("POST /datasets/validate: valid %v, want %v; problems %+v", v.Valid, len(tc.problems) == 0, v.Problems)
			}
			if diff := cmp.Diff(wantProblems, v.Problems, cmpProblems); diff != "" {
				t.Errorf("POST /datasets/validate: problems (-want +got):\n%s", diff)
			}

			res := e.do(t, http.MethodPost, "/datasets", body, bearer(a.key))
			if len(tc.problems) == 0 {
				want(t, res, http.StatusCreated, "POST /datasets")
				return
			}
			want(t, res, http.StatusBadRequest, "POST /datasets")
			var parts []string
			for _, p := range wantProblems {
				parts = append(parts, p.String())
			}
			if got, w := res.ErrorInfo(t).Message, "invalid argument: dataset spec: "+strings.Join(parts, "; "); got != w {
				t.Errorf("POST /datasets: message:\n got %s\nwant %s", got, w)
			}
			if diff := cmp.Diff(wantProblems, problemsOf(t, res.ErrorInfo(t)), cmpProblems); diff != "" {
				t.Errorf("POST /datasets: details.problems (-want +got):\n%s", diff)
			}
			want(t, e.do(t, http.MethodGet, "/datasets/"+id+"/versions/1.0.0", "", bearer(a.key)), http.StatusNotFound, "GET the refused version")
		})
	}
}

// cmpProblems compares problems by path and message; an empty list equals none.
var cmpProblems = cmp.Options{cmp.Comparer(func(x, y registry.Problem) bool { return x.Path == y.Path && x.Message == y.Message }),
	cmp.FilterValues(func(x, y []registry.Problem) bool { return len(x) == 0 && len(y) == 0 }, cmp.Ignore())}

// problemsOf reads details.problems of an error body.
func problemsOf(t *testing.T, info api.ErrorInfo) []registry.Problem {
	t.Helper()
	raw, _ := info.Details["problems"].([]any)
	var out []registry.Problem
	for _, r := range raw {
		m, _ := r.(map[string]any)
		path, _ := m["path"].(string)
		msg, _ := m["message"].(string)
		out = append(out, registry.Problem{Path: path, Message: msg})
	}
	return out
}

// TestGraderCheckDatasetEveryProblem: one refusal lists the spec's own
// problems and every grader problem, capped.
func TestGraderCheckDatasetEveryProblem(t *testing.T) {
	e, a := graderCheckEnv(t)
	body := `{"id":"mixed","version":"1.0.0","cases":[{"id":"c1","graders":[{"id":"a","kind":"llm"}]},{"id":"c2","task":"t","graders":[{"id":"exit_code"},{"id":"calls","kind":"tool_calls","mx":0}]}]}`
	wantProblems := []registry.Problem{
		{Path: "cases[0].task", Message: "required: the task (a prompt string or an object)"},
		{Path: "cases[0].graders[0]", Message: `case "c1", grader "a": kind: unknown grader kind "llm" ` + builtinKinds},
		{Path: "cases[1].graders[1]", Message: `case "c2", grader "calls": mx: is not a parameter of tool_calls graders (they take name, min, max, expect); did you mean "max"?`},
	}
	res := e.do(t, http.MethodPost, "/datasets", body, bearer(a.key))
	want(t, res, http.StatusBadRequest, "POST /datasets")
	if diff := cmp.Diff(wantProblems, problemsOf(t, res.ErrorInfo(t)), cmpProblems); diff != "" {
		t.Errorf("POST /datasets: problems (-want +got):\n%s", diff)
	}
	v := decode[validationJSON](t, e.do(t, http.MethodPost, "/datasets/validate", body, bearer(a.key)))
	if diff := cmp.Diff(wantProblems, v.Problems, cmpProblems); diff != "" || v.Valid {
		t.Errorf("POST /datasets/validate: valid %v, problems (-want +got):\n%s", v.Valid, diff)
	}

	// 30 cases with a misspelt limit each: the first 20 and a count.
	var cases []string
	for i := range 30 {
		cases = append(cases, fmt.Sprintf(`{"id":"c%d","task":"t","graders":[{"id":"calls","kind":"tool_calls","mx":0}]}`, i))
	}
	body = `{"id":"many","version":"1.0.0","cases":[` + strings.Join(cases, ",") + `]}`
	res = e.do(t, http.MethodPost, "/datasets", body, bearer(a.key))
	want(t, res, http.StatusBadRequest, "POST /datasets with 30 bad cases")
	info := res.ErrorInfo(t)
	if ps := problemsOf(t, info); len(ps) != 20 || ps[19].Path != "cases[19].graders[0]" || !strings.HasSuffix(info.Message, "; and 10 more") {
		t.Errorf("30 bad cases: %d problems (last %+v), message ending %q; want 20 and \"; and 10 more\"", len(ps), ps[len(ps)-1], info.Message[max(0, len(info.Message)-40):])
	}
	v = decode[validationJSON](t, e.do(t, http.MethodPost, "/datasets/validate", body, bearer(a.key)))
	if len(v.Problems) != 21 || v.Problems[20] != (registry.Problem{Message: "and 10 more grader problems"}) || v.Valid {
		t.Errorf("validate 30 bad cases: valid %v, %d problems (last %+v); want 20 and a count", v.Valid, len(v.Problems), v.Problems[len(v.Problems)-1])
	}
}

// TestGraderCheckStoredDataset: a dataset version registered before the
// checker ran keeps its graders (they grade leniently, as skip scores),
// and a batch over it says so in its detail.
func TestGraderCheckStoredDataset(t *testing.T) {
	e, a := graderCheckEnv(t)
	spec := `{"id":"legacy","version":"1.0.0","cases":[{"id":"c1","task":"t","graders":[{"id":"exit_code"}]},
		{"id":"c2","task":"t","graders":[{"id":"a","kind":"llm"},{"id":"calls","kind":"tool_calls","mx":0}]}]}`
	s, err := registry.Parse(registry.Dataset, []byte(spec), true)
	if err != nil {
		t.Fatal(err)
	}
	v, cases, err := records.VersionRecord(a.ws, s)
	if err != nil {
		t.Fatal(err)
	}
	v.CreatedBy, v.CreatedAt = "before-the-checker", e.clock.Now()
	if _, _, err := e.store.RegisterVersion(t.Context(), v, "", cases); err != nil {
		t.Fatal(err)
	}
	want(t, e.do(t, http.MethodGet, "/datasets/legacy/versions/1.0.0", "", bearer(a.key)), http.StatusOK, "GET the stored version")

	res := e.do(t, http.MethodPost, "/scorecards", `{"dataset":{"id":"legacy","version":"1.0.0"},"harness":{"id":"h","version":"1.0.0"}}`, bearer(a.key))
	want(t, res, http.StatusAccepted, "POST /scorecards over the stored version")
	sc := decode[eval.Scorecard](t, res)
	detail := decode[eval.Scorecard](t, e.do(t, http.MethodGet, "/scorecards/"+sc.ID, "", bearer(a.key)))
	type stepView struct{ Phase, Status, CaseID, Message string }
	var got []stepView
	for _, st := range detail.Steps {
		got = append(got, stepView{st.Phase, st.Status, st.CaseID, st.Message})
	}
	wantSteps := []stepView{
		{"submit", "succeeded", "", "2 cases x 1 trials, concurrency 4"},
		{"submit", "info", "c2", `case "c2" graders[0]: grader "a": kind: unknown grader kind "llm" ` + builtinKinds +
			` (the dataset version was registered before graders were checked: the grader scores as a skip, failing the case, until a fixed version is registered; POST /datasets/validate lists every problem)`},
		{"submit", "info", "c2", `case "c2" graders[1]: grader "calls": mx: is not a parameter of tool_calls graders (they take name, min, max, expect); did you mean "max"?` +
			` (the dataset version was registered before graders were checked: grading ignores this member until a fixed version is registered; POST /datasets/validate lists every problem)`},
	}
	if diff := cmp.Diff(wantSteps, got); diff != "" {
		t.Errorf("GET /scorecards/:id steps (-want +got):\n%s", diff)
	}

	// An override replaces the cases' graders: nothing to note.
	res = e.do(t, http.MethodPost, "/scorecards", `{"dataset":{"id":"legacy","version":"1.0.0"},"harness":{"id":"h","version":"1.0.0"},"graders":[{"id":"exit_code"}]}`, bearer(a.key))
	want(t, res, http.StatusAccepted, "POST /scorecards with an override")
	sc = decode[eval.Scorecard](t, res)
	detail = decode[eval.Scorecard](t, e.do(t, http.MethodGet, "/scorecards/"+sc.ID, "", bearer(a.key)))
	if len(detail.Steps) != 1 || detail.Steps[0].Status != "succeeded" {
		t.Errorf("steps with an override = %+v, want only the submit step", detail.Steps)
	}
}
