package manifest

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
	"svc/internal/domain/scoring"
	"svc/internal/platform/derrors"
)

const datasetJSON = `{
  "id": "qa", "version": "1.0.0",
  "cases": [
    {"id": "add", "task": "What is 2+2?", "expected": "4", "graders": [{"id": "exact"}]},
    {"id": "auth/login", "task": "Log in", "graders": [{"id": "exit_code"}, {"id": "c", "kind": "contains", "value": "ok"}]},
    {"id": "free", "task": "Write a haiku"}
  ]
}`

const harnessJSON = `{"id": "agent", "version": "0.3.1", "kind": "process", "command": ["agent"], "model": "claude-sonnet"}`

const judgeJSON = `{"id": "helpful", "version": "2", "kind": "code", "language": "python", "code": "print(1)", "model": {"ref": "default"}}`

func parse(t *testing.T, kind registry.Kind, raw string) registry.Spec {
	t.Helper()
	s, err := registry.Parse(kind, []byte(raw), false)
	if err != nil {
		t.Fatalf("Parse %s: %v", kind, err)
	}
	return s
}

// fixture returns a fully resolved input: dataset, its cases, a harness, one
// judge and a policy with a critical case.
func fixture(t *testing.T) Input {
	t.Helper()
	ds := parse(t, registry.Dataset, datasetJSON)
	policy, err := scoring.ComposePolicy(scoring.DefaultPolicy(), []eval.CaseMatcher{{Prefix: "auth/"}})
	if err != nil {
		t.Fatal(err)
	}
	return Input{
		Dataset: ds,
		Cases:   ds.Dataset().Cases,
		Harness: parse(t, registry.Harness, harnessJSON),
		Judges:  []Judge{{Spec: parse(t, registry.Judge, judgeJSON), Closure: map[string]string{"model": "default@3"}}},
		Policy:  policy,
		Runtime: "local",
	}
}

var digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

func TestSeal(t *testing.T) {
	in := fixture(t)
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.FixedZone("CET", 3600))
	m, err := Seal(in, now)
	if err != nil {
		t.Fatal(err)
	}
	caseDigest := func(i int) string {
		d, err := registry.CaseDigest(in.Cases[i])
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	graders := func(doc string) string { return registry.Digest([]byte(doc)) }
	gradingCases := map[string]string{
		"add":        graders(`[{"id":"exact"}]`),
		"auth/login": graders(`[{"id":"exit_code"},{"id":"c","kind":"contains","value":"ok"}]`),
		"free":       graders(`[]`),
	}
	plan := registry.Digest([]byte(`{"cases":{"add":"` + gradingCases["add"] + `","auth/login":"` + gradingCases["auth/login"] + `","free":"` + gradingCases["free"] + `"}}`))
	judgeDoc := `{"closure":{"model":"default@3"},"judge":"helpful@2","spec":` + string(in.Judges[0].Spec.Canonical()) + `}`
	want := eval.Manifest{
		IdentityVersion: IdentityVersion,
		Cases:           map[string]string{"add": caseDigest(0), "auth/login": caseDigest(1), "free": caseDigest(2)},
		Dataset:         in.Dataset.Digest(),
		Harness:         in.Harness.Digest(),
		HarnessModel:    registry.Digest([]byte(`{"model":"claude-sonnet"}`)),
		GradingPlan:     plan,
		GradingCases:    gradingCases,
		Judges: []eval.SealedJudge{{
			ID: "helpful", Version: "2", Digest: registry.Digest([]byte(judgeDoc)),
			Closure: map[string]string{"model": "default@3"},
		}},
		Policy:       &in.Policy,
		PolicyDigest: scoring.PolicyDigest(in.Policy),
		Runtime:      "local",
		SealedAt:     now.UTC(),
	}
	if diff := cmp.Diff(want, m); diff != "" {
		t.Errorf("Seal (-want +got):\n%s", diff)
	}
	for name, d := range map[string]string{"dataset": m.Dataset, "harness": m.Harness, "model": m.HarnessModel, "plan": m.GradingPlan, "policy": m.PolicyDigest, "judge": m.Judges[0].Digest} {
		if !digestRE.MatchString(d) {
			t.Errorf("%s digest %q is not sha256:<64 hex>", name, d)
		}
	}
	if m.SealedAt.Location() != time.UTC {
		t.Errorf("sealedAt %v is not UTC", m.SealedAt)
	}
}

func TestSealVariants(t *testing.T) {
	t.Run("batch graders", func(t *testing.T) {
		in := fixture(t)
		perCase, err := Seal(in, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		in.Graders = []registry.Grader{{ID: "exit_code"}}
		m, err := Seal(in, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if m.GradingCases != nil {
			t.Errorf("gradingCases = %v with a batch-level override, want none", m.GradingCases)
		}
		if want := registry.Digest([]byte(`{"graders":[{"id":"exit_code"}]}`)); m.GradingPlan != want {
			t.Errorf("gradingPlan = %s, want %s", m.GradingPlan, want)
		}
		if m.GradingPlan == perCase.GradingPlan {
			t.Error("the batch plan has the per-case plan's digest")
		}
	})
	t.Run("empty batch graders are still an override", func(t *testing.T) {
		in := fixture(t)
		in.Graders = []registry.Grader{}
		m, err := Seal(in, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if want := registry.Digest([]byte(`{"graders":[]}`)); m.GradingPlan != want || m.GradingCases != nil {
			t.Errorf("gradingPlan = %s, gradingCases = %v; want %s and none", m.GradingPlan, m.GradingCases, want)
		}
	})
	t.Run("trace evaluation without dataset or harness", func(t *testing.T) {
		in := fixture(t)
		in.Dataset, in.Harness = registry.Spec{}, registry.Spec{}
		m, err := Seal(in, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if m.Dataset != "" || m.Harness != "" || m.HarnessModel != "" || len(m.Cases) != 3 {
			t.Errorf("dataset %q harness %q model %q cases %d; want no dataset, harness or model and 3 cases", m.Dataset, m.Harness, m.HarnessModel, len(m.Cases))
		}
	})
	t.Run("harness without a model", func(t *testing.T) {
		in := fixture(t)
		in.Harness = parse(t, registry.Harness, `{"id": "agent", "version": "1", "kind": "process", "command": ["agent"]}`)
		m, err := Seal(in, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if want := registry.Digest([]byte(`{"model":"unresolved"}`)); m.HarnessModel != want {
			t.Errorf("harnessModel = %s, want %s", m.HarnessModel, want)
		}
	})
}

func TestSealErrors(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, in *Input)
		want   string
	}{
		{name: "duplicate case", change: func(t *testing.T, in *Input) { in.Cases = append(in.Cases, in.Cases[0]) }, want: `case "add" is selected twice`},
		{name: "duplicate judge", change: func(t *testing.T, in *Input) { in.Judges = append(in.Judges, in.Judges[0]) }, want: `judge "helpful" is selected twice`},
		{name: "zero judge", change: func(t *testing.T, in *Input) { in.Judges = append(in.Judges, Judge{}) }, want: "without a resolved spec"},
		{name: "judge of another kind", change: func(t *testing.T, in *Input) { in.Judges = []Judge{{Spec: in.Harness}} }, want: "the judge is a harness spec"},
		{name: "harness of another kind", change: func(t *testing.T, in *Input) { in.Harness = in.Dataset }, want: "the harness is a dataset spec"},
		{name: "dataset of another kind", change: func(t *testing.T, in *Input) { in.Dataset = in.Harness }, want: "the dataset is a harness spec"},
		{name: "no policy", change: func(t *testing.T, in *Input) { in.Policy = eval.VerdictPolicy{} }, want: "needs an id and a version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := fixture(t)
			tt.change(t, &in)
			_, err := Seal(in, time.Time{})
			if !errors.Is(err, derrors.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Seal error = %v, want ErrInvalid containing %q", err, tt.want)
			}
		})
	}
}

func TestSealJudgeMatchesManifest(t *testing.T) {
	in := fixture(t)
	m, err := Seal(in, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	sj, err := SealJudge(in.Judges[0])
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(m.Judges[0], sj); diff != "" {
		t.Errorf("SealJudge differs from the manifest's judge (-manifest +SealJudge):\n%s", diff)
	}
	// The closure is part of the seal.
	in.Judges[0].Closure = map[string]string{"model": "default@4"}
	sj2, err := SealJudge(in.Judges[0])
	if err != nil {
		t.Fatal(err)
	}
	if sj2.Digest == sj.Digest {
		t.Error("a changed closure kept the judge's digest")
	}
}
