package manifest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
)

// legacy cuts a sha256: digest to the bare 16-hex stamp older batches carry.
func legacy(d string) string { return strings.TrimPrefix(d, registry.DigestPrefix)[:16] }

func TestVerify(t *testing.T) {
	matchAll := map[string]string{
		"dataset": FacetMatch, "case:add": FacetMatch, "case:auth/login": FacetMatch, "case:free": FacetMatch,
		"harness": FacetMatch, "harness:model": FacetMatch, "grading": FacetMatch,
		"grading:add": FacetMatch, "grading:auth/login": FacetMatch, "grading:free": FacetMatch,
		"judge:helpful": FacetMatch, "policy": FacetMatch,
	}
	with := func(changes map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range matchAll {
			out[k] = v
		}
		for k, v := range changes {
			if v == "" {
				delete(out, k)
				continue
			}
			out[k] = v
		}
		return out
	}
	tests := []struct {
		name         string
		stamp        func(m *eval.Manifest)        // edits the sealed manifest
		now          func(t *testing.T, in *Input) // edits what the references produce now
		want         map[string]string             // facet -> status
		wantVerified bool
		wantDetail   map[string]string // facet -> detail substring
	}{
		{name: "unchanged", want: matchAll, wantVerified: true},
		{
			name: "legacy 16-hex stamps verify",
			stamp: func(m *eval.Manifest) {
				m.Dataset, m.Harness, m.PolicyDigest = legacy(m.Dataset), strings.ToUpper(legacy(m.Harness)), legacy(m.PolicyDigest)
				m.Cases["add"] = legacy(m.Cases["add"])
				m.Judges[0].Digest = legacy(m.Judges[0].Digest)
			},
			want: matchAll, wantVerified: true,
		},
		{
			name:  "a wrong legacy stamp drifts",
			stamp: func(m *eval.Manifest) { m.Harness = "0123456789abcdef" },
			want:  with(map[string]string{"harness": FacetDrifted}),
		},
		{
			name: "drifted harness",
			now: func(t *testing.T, in *Input) {
				in.Harness = parse(t, registry.Harness, strings.Replace(harnessJSON, "claude-sonnet", "claude-opus", 1))
			},
			want: with(map[string]string{"harness": FacetDrifted, "harness:model": FacetDrifted}),
		},
		{
			name: "case removed from the dataset",
			now: func(t *testing.T, in *Input) {
				in.Cases = in.Cases[:2]
			},
			want:       with(map[string]string{"case:free": FacetMissing, "grading:free": FacetMissing, "grading": FacetDrifted}),
			wantDetail: map[string]string{"case:free": "no longer in the dataset", "grading": "grading:<caseId>"},
		},
		{
			name: "a case's graders changed",
			now: func(t *testing.T, in *Input) {
				in.Cases = append([]registry.EvalCase(nil), in.Cases...)
				in.Cases[0].Graders = []registry.Grader{{ID: "contains"}}
			},
			want: with(map[string]string{"case:add": FacetDrifted, "grading:add": FacetDrifted, "grading": FacetDrifted}),
		},
		{
			name: "a case not in the batch",
			now: func(t *testing.T, in *Input) {
				in.Cases = append(append([]registry.EvalCase(nil), in.Cases...), registry.EvalCase{ID: "new", Task: "x"})
			},
			want: with(map[string]string{"case:new": FacetUnverifiable, "grading:new": FacetUnverifiable, "grading": FacetDrifted}),
		},
		{
			name:       "malformed stamp",
			stamp:      func(m *eval.Manifest) { m.Dataset = "sha256:xyz" },
			want:       with(map[string]string{"dataset": FacetUnverifiable}),
			wantDetail: map[string]string{"dataset": "malformed stamp"},
		},
		{
			name:  "a stamp of another algorithm",
			stamp: func(m *eval.Manifest) { m.Cases["add"] = "md5:0123456789abcdef0123456789abcdef" },
			want:  with(map[string]string{"case:add": FacetUnverifiable}),
		},
		{
			name:       "a manifest without the harness model seal",
			stamp:      func(m *eval.Manifest) { m.HarnessModel = "" },
			want:       with(map[string]string{"harness:model": FacetUnverifiable}),
			wantDetail: map[string]string{"harness:model": "does not seal"},
		},
		{
			name:  "a manifest without the policy seal",
			stamp: func(m *eval.Manifest) { m.Policy, m.PolicyDigest = nil, "" },
			want:  with(map[string]string{"policy": FacetUnverifiable}),
		},
		{
			name:       "judge no longer resolvable",
			now:        func(t *testing.T, in *Input) { in.Judges = nil },
			want:       with(map[string]string{"judge:helpful": FacetMissing}),
			wantDetail: map[string]string{"judge:helpful": "helpful@2 can no longer be resolved"},
		},
		{
			name: "judge closure drifted",
			now: func(t *testing.T, in *Input) {
				in.Judges = []Judge{{Spec: in.Judges[0].Spec, Closure: map[string]string{"model": "default@4", "rubric": "unresolved"}}}
			},
			want:       with(map[string]string{"judge:helpful": FacetDrifted}),
			wantDetail: map[string]string{"judge:helpful": "closure model: default@3 -> default@4; closure rubric: (none) -> unresolved"},
		},
		{
			name: "judge spec drifted",
			now: func(t *testing.T, in *Input) {
				in.Judges = []Judge{{Spec: parse(t, registry.Judge, strings.Replace(judgeJSON, "print(1)", "print(2)", 1)), Closure: in.Judges[0].Closure}}
			},
			want:       with(map[string]string{"judge:helpful": FacetDrifted}),
			wantDetail: map[string]string{"judge:helpful": "the judge spec differs"},
		},
		{
			name: "a judge the batch did not seal",
			now: func(t *testing.T, in *Input) {
				in.Judges = append(in.Judges, Judge{Spec: parse(t, registry.Judge, strings.Replace(judgeJSON, `"helpful"`, `"strict"`, 1))})
			},
			want: with(map[string]string{"judge:strict": FacetUnverifiable}),
		},
		{
			name: "policy drifted",
			now: func(t *testing.T, in *Input) {
				in.Policy.CriticalCases = append(in.Policy.CriticalCases, eval.CaseMatcher{CaseID: "free"})
			},
			want:       with(map[string]string{"policy": FacetDrifted}),
			wantDetail: map[string]string{"policy": "critical cases differ"},
		},
		{
			name:       "grading plan changed shape",
			now:        func(t *testing.T, in *Input) { in.Graders = []registry.Grader{{ID: "exit_code"}} },
			want:       with(map[string]string{"grading": FacetDrifted}),
			wantDetail: map[string]string{"grading": "now a batch-level override"},
		},
		{
			name: "dataset version gone",
			now:  func(t *testing.T, in *Input) { in.Dataset = registry.Spec{} },
			want: with(map[string]string{"dataset": FacetMissing}),
		},
		{
			name:  "a newer identity version",
			stamp: func(m *eval.Manifest) { m.IdentityVersion = IdentityVersion + 1 },
			want: func() map[string]string {
				out := map[string]string{}
				for k := range matchAll {
					out[k] = FacetUnverifiable
				}
				return out
			}(),
			wantDetail: map[string]string{"policy": fmt.Sprintf("identity version %d is newer", IdentityVersion+1)},
		},
		{
			name: "identity version 0 reads as 1, its judges sealed with names only",
			stamp: func(m *eval.Manifest) {
				m.IdentityVersion = 0
				spec, err := registry.Parse(registry.Judge, []byte(judgeJSON), false)
				if err != nil {
					panic(err)
				}
				sj, err := SealJudge(Judge{Spec: spec, Closure: legacyClosure(spec.Judge())})
				if err != nil {
					panic(err)
				}
				m.Judges = []eval.SealedJudge{sj}
			},
			want:         matchAll,
			wantVerified: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sealedFrom := fixture(t)
			m, err := Seal(sealedFrom, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			if err != nil {
				t.Fatal(err)
			}
			if tt.stamp != nil {
				tt.stamp(&m)
			}
			now := fixture(t)
			if tt.now != nil {
				tt.now(t, &now)
			}
			v := Verify(m, now)
			got := map[string]string{}
			details := map[string]string{}
			for _, f := range v.Facets {
				if _, dup := got[f.Facet]; dup {
					t.Errorf("facet %s listed twice", f.Facet)
				}
				got[f.Facet] = f.Status
				details[f.Facet] = f.Detail
				if f.Status == FacetMatch && f.Current != "" && !digestRE.MatchString(f.Current) {
					t.Errorf("facet %s current %q is not sha256:<64 hex>", f.Facet, f.Current)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("facet statuses (-want +got):\n%s", diff)
			}
			if v.Verified != tt.wantVerified {
				t.Errorf("verified = %v, want %v", v.Verified, tt.wantVerified)
			}
			if v.IdentityVersion != m.IdentityVersion {
				t.Errorf("identityVersion = %d, want the manifest's %d", v.IdentityVersion, m.IdentityVersion)
			}
			for facet, want := range tt.wantDetail {
				if !strings.Contains(details[facet], want) {
					t.Errorf("facet %s detail = %q, want it to contain %q", facet, details[facet], want)
				}
			}
		})
	}
}

func TestVerifyTraceEvaluation(t *testing.T) {
	// _traces: no dataset and no harness on either side; those facets are
	// not listed, and the rest verifies.
	in := fixture(t)
	in.Dataset, in.Harness = registry.Spec{}, registry.Spec{}
	m, err := Seal(in, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	v := Verify(m, in)
	if !v.Verified {
		t.Errorf("not verified: %+v", v.Facets)
	}
	for _, f := range v.Facets {
		if f.Facet == "dataset" || f.Facet == "harness" || f.Facet == "harness:model" {
			t.Errorf("facet %s listed for a trace evaluation", f.Facet)
		}
	}
}

func TestVerifyFacetOrder(t *testing.T) {
	in := fixture(t)
	m, err := Seal(in, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range Verify(m, in).Facets {
		got = append(got, f.Facet)
	}
	want := []string{"dataset", "case:add", "case:auth/login", "case:free", "harness", "harness:model",
		"grading", "grading:add", "grading:auth/login", "grading:free", "judge:helpful", "policy"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("facet order (-want +got):\n%s", diff)
	}
}

func TestVerifyEmpty(t *testing.T) {
	// A manifest that seals nothing verifies nothing.
	in := fixture(t)
	v := Verify(eval.Manifest{}, in)
	if v.Verified {
		t.Fatalf("Verify(empty manifest) verified")
	}
	for _, f := range v.Facets {
		if f.Status != FacetUnverifiable {
			t.Errorf("facet %s = %s, want unverifiable", f.Facet, f.Status)
		}
	}
}
