package registry

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"svc/internal/platform/derrors"
)

func TestDiffSpecs(t *testing.T) {
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	for _, tc := range []struct {
		name       string
		base, cand string
		want       []FieldChange
	}{
		{"identical", `{"a":1,"b":[1,2]}`, `{"b":[1,2],"a":1.0}`, []FieldChange{}},
		{"changed leaf", `{"services":{"web":{"image":"a:1"}}}`, `{"services":{"web":{"image":"a:2"}}}`,
			[]FieldChange{{Path: "services.web.image", Change: Changed, Base: raw(`"a:1"`), Candidate: raw(`"a:2"`)}}},
		{"added and removed members", `{"a":1,"b":2}`, `{"b":2,"c":{"d":3}}`,
			[]FieldChange{{Path: "a", Change: Removed, Base: raw(`1`)}, {Path: "c", Change: Added, Candidate: raw(`{"d":3}`)}}},
		{"arrays by index", `{"command":["a","b","c"]}`, `{"command":["a","x"]}`,
			[]FieldChange{{Path: "command[1]", Change: Changed, Base: raw(`"b"`), Candidate: raw(`"x"`)}, {Path: "command[2]", Change: Removed, Base: raw(`"c"`)}}},
		{"array grows", `{"a":[]}`, `{"a":[{"k":1}]}`,
			[]FieldChange{{Path: "a[0]", Change: Added, Candidate: raw(`{"k":1}`)}}},
		{"type change", `{"a":{"b":1}}`, `{"a":[1]}`,
			[]FieldChange{{Path: "a", Change: Changed, Base: raw(`{"b":1}`), Candidate: raw(`[1]`)}}},
		{"null is a value", `{"a":null}`, `{}`,
			[]FieldChange{{Path: "a", Change: Removed, Base: raw(`null`)}}},
		{"odd member names quoted", `{"env":{"A.B":"1"}}`, `{"env":{"A.B":"2"}}`,
			[]FieldChange{{Path: `env["A.B"]`, Change: Changed, Base: raw(`"1"`), Candidate: raw(`"2"`)}}},
		{"root", `1`, `2`, []FieldChange{{Path: "", Change: Changed, Base: raw(`1`), Candidate: raw(`2`)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DiffSpecs([]byte(tc.base), []byte(tc.cand))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if _, err := DiffSpecs([]byte(`{`), []byte(`{}`)); !errors.Is(err, derrors.ErrInvalid) {
		t.Errorf("malformed base: err = %v, want ErrInvalid", err)
	}
}

func TestDiffSpecsHarnessVersions(t *testing.T) {
	base := mustParse(t, "harness-service", true)
	cand, err := Parse(Harness, edited(t, "harness-service",
		edit{"version", `"2.1.0"`}, edit{"services.agent.image", `"acme/agent:3"`}, edit{"capacity", ""}), true)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DiffSpecs(base.Canonical(), cand.Canonical())
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, c := range got {
		paths = append(paths, string(c.Change)+" "+c.Path)
	}
	want := []string{"removed capacity", "changed services.agent.image", "changed version"}
	if diff := cmp.Diff(want, paths); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestDiffDatasets(t *testing.T) {
	base := mustParse(t, "dataset", true).Dataset()
	cand, err := Parse(Dataset, edited(t, "dataset",
		edit{"version", `"1.3.0"`},
		edit{"meta.source", `"generated"`},
		edit{"cases[0].expected.answer", `"Hello!"`},
		edit{"cases[0].timeoutSec", `600`},
		edit{"cases[2]", `{"id":"new-case","task":"t"}`},
	), true)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DiffDatasets(base, cand.Dataset())
	if err != nil {
		t.Fatal(err)
	}
	baseDigest := mustParse(t, "dataset", true).Digest()
	c0, _ := CaseDigest(base.Cases[0])
	c0new, _ := CaseDigest(cand.Dataset().Cases[0])
	want := DatasetDiff{
		Base:      DatasetSummary{ID: "swe-mini", Version: "1.2.0", Digest: baseDigest, CaseCount: 3},
		Candidate: DatasetSummary{ID: "swe-mini", Version: "1.3.0", Digest: cand.Digest(), CaseCount: 3},
		Added:     []string{"new-case"},
		Removed:   []string{"unicode-é"},
		Changed:   []CaseChange{{ID: "fix-typo", Fields: []string{"expected", "timeoutSec"}, BaseDigest: c0, CandidateDigest: c0new}},
		Unchanged: 1,
		Meta: []FieldChange{
			{Path: "meta.source", Change: Changed, Base: json.RawMessage(`"hand-written"`), Candidate: json.RawMessage(`"generated"`)},
			{Path: "version", Change: Changed, Base: json.RawMessage(`"1.2.0"`), Candidate: json.RawMessage(`"1.3.0"`)},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestDiffDatasetsSameAndReordered(t *testing.T) {
	base := mustParse(t, "dataset", true).Dataset()
	same, err := DiffDatasets(base, base)
	if err != nil {
		t.Fatal(err)
	}
	if len(same.Added)+len(same.Removed)+len(same.Changed)+len(same.Meta) != 0 || same.Unchanged != 3 || same.Reordered {
		t.Errorf("diff of a dataset with itself = %+v", same)
	}
	rev := *base
	rev.Cases = []EvalCase{base.Cases[2], base.Cases[0], base.Cases[1]}
	got, err := DiffDatasets(base, &rev)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Reordered || got.Unchanged != 3 || got.Base.Digest == got.Candidate.Digest {
		t.Errorf("reordered diff = %+v; want reordered, 3 unchanged, different digests", got)
	}
	// The JSON form uses [] rather than null for empty lists.
	b, _ := json.Marshal(same)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	for _, k := range []string{"added", "removed", "changed", "meta"} {
		if _, ok := m[k].([]any); !ok {
			t.Errorf("%s encodes as %v, want []", k, m[k])
		}
	}
}
