package records

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/internal/domain/registry"
	"svc/internal/platform/derrors"
	"svc/store"
)

// dataset is a three-case dataset whose cases are written out of canonical
// member order.
const dataset = `{"version":"1.2.0","id":"swe-mini","tags":["smoke"],"cases":[
	{"task":"Fix the typo in README.md","id":"fix-typo","tags":["docs"],"timeoutSec":300},
	{"id":"HumanEval/0","task":{"prompt":"Write has_close_elements"},"expected":0.10},
	{"id":"unicode-é","task":"Say <hello> in 日本語","tags":["i18n","docs"]}]}`

func mustParse(t testing.TB, kind registry.Kind, raw string) registry.Spec {
	t.Helper()
	s, err := registry.Parse(kind, []byte(raw), true)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return s
}

func TestVersionRecordAndJoinDataset(t *testing.T) {
	s := mustParse(t, registry.Dataset, dataset)
	v, cases, err := VersionRecord("ws1", s)
	if err != nil {
		t.Fatal(err)
	}
	if v.Kind != "dataset" || v.Owner != "ws1" || v.ID != "swe-mini" || v.Version != "1.2.0" || v.Digest != s.Digest() || v.CaseCount != 3 {
		t.Errorf("version row = %+v", v)
	}
	if bytes.Contains(v.Spec, []byte(`"cases"`)) {
		t.Errorf("the version's spec holds the cases: %s", v.Spec)
	}
	type row struct {
		CaseID string
		Ord    int
		Tags   []string
	}
	var got []row
	for i, c := range cases {
		got = append(got, row{c.CaseID, c.Ord, c.Tags})
		want, _ := registry.CaseDigest(s.Dataset().Cases[i])
		if c.Digest != want || registry.Digest(c.Doc) != c.Digest {
			t.Errorf("case row %d: digest %s, want %s = Digest(Doc) %s", i, c.Digest, want, registry.Digest(c.Doc))
		}
	}
	want := []row{{"fix-typo", 0, []string{"docs"}}, {"HumanEval/0", 1, nil}, {"unicode-é", 2, []string{"i18n", "docs"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("case rows (-want +got):\n%s", diff)
	}

	// The store may hand rows back in any order and the spec re-encoded
	// (jsonb reorders members and adds spaces): joining still gives the
	// digest of the registered version.
	shuffled := []store.DatasetCase{cases[2], cases[0], cases[1]}
	for i := range shuffled {
		shuffled[i].Doc = reencode(t, shuffled[i].Doc)
	}
	full, err := JoinDataset(reencode(t, v.Spec), shuffled)
	if err != nil {
		t.Fatal(err)
	}
	if got := registry.Digest(full); got != s.Digest() {
		t.Errorf("Digest(JoinDataset) = %s, want %s\n%s", got, s.Digest(), full)
	}
	back, err := registry.Parse(registry.Dataset, full, false)
	if err != nil || back.Digest() != s.Digest() {
		t.Errorf("Parse(JoinDataset) = %v, %v", back.Digest(), err)
	}

	if _, err := JoinDataset(json.RawMessage(`{"cases":[]}`), nil); !errors.Is(err, derrors.ErrInvalid) {
		t.Errorf("header with cases: err = %v", err)
	}
	if _, err := JoinDataset(v.Spec, []store.DatasetCase{{CaseID: "x", Doc: json.RawMessage(`{`)}}); !errors.Is(err, derrors.ErrInvalid) {
		t.Errorf("broken case doc: err = %v", err)
	}
}

func TestVersionRecordOtherKinds(t *testing.T) {
	s := mustParse(t, registry.Rubric, `{"text":"t","version":"1","id":"r"}`)
	v, cases, err := VersionRecord(registry.SharedOwner, s)
	if err != nil {
		t.Fatal(err)
	}
	if cases != nil || v.Owner != "_shared" || v.Kind != "rubric" || !bytes.Equal(v.Spec, s.Canonical()) || v.CaseCount != 0 {
		t.Errorf("version row = %+v, cases %v", v, cases)
	}
	if _, _, err := VersionRecord("ws", registry.Spec{}); err == nil {
		t.Error("VersionRecord(zero Spec) succeeded")
	}
}

// TestResolveStoredVersions: `latest` over the store's rows skips a
// tombstoned version and orders non-semver versions by registration.
func TestResolveStoredVersions(t *testing.T) {
	gone := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name string
		in   []store.EntityVersion
		want string // "" = none
	}{
		{"semver", []store.EntityVersion{{Version: "1.10.0", Seq: 1}, {Version: "1.9.0", Seq: 2}}, "1.10.0"},
		{"tombstone skipped", []store.EntityVersion{{Version: "1.0.0", Seq: 1}, {Version: "2.0.0", Seq: 2, DeletedAt: &gone}}, "1.0.0"},
		{"non-semver: highest Seq", []store.EntityVersion{{Version: "b", Seq: 2}, {Version: "a", Seq: 1}}, "b"},
		{"all tombstoned", []store.EntityVersion{{Version: "1.0.0", Seq: 1, DeletedAt: &gone}}, ""},
	} {
		got, ok := registry.ResolveLatest(tc.in)
		if ok != (tc.want != "") || got.Version != tc.want {
			t.Errorf("%s: ResolveLatest = %q, %v; want %q", tc.name, got.Version, ok, tc.want)
		}
	}
	vs := []store.EntityVersion{{Version: "1.0.0", Seq: 1}, {Version: "2.0.0", Seq: 2, DeletedAt: &gone}}
	if v, ok := registry.Resolve(vs, "2.0.0"); ok {
		t.Errorf("Resolve(tombstoned 2.0.0) = %q, want none", v.Version)
	}
}

// FuzzVersionRecordDataset: the rows of any accepted dataset join back to
// the registered digest.
func FuzzVersionRecordDataset(f *testing.F) {
	f.Add([]byte(dataset))
	f.Add([]byte(`{"id":"d","version":"1","cases":[{"id":"c","task":"t"}]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		s, err := registry.Parse(registry.Dataset, raw, false)
		if err != nil {
			return
		}
		v, cases, err := VersionRecord("ws", s)
		if err != nil {
			t.Fatal(err)
		}
		full, err := JoinDataset(v.Spec, cases)
		if err != nil {
			t.Fatalf("JoinDataset: %v", err)
		}
		if registry.Digest(full) != v.Digest {
			t.Fatalf("JoinDataset does not rebuild the digested spec:\n%s\n%s", full, s.Canonical())
		}
	})
}

// BenchmarkVersionRecord10k measures splitting a parsed 10,000-case dataset
// (about 4 MB) into store rows.
func BenchmarkVersionRecord10k(b *testing.B) {
	var raw strings.Builder
	raw.WriteString(`{"id":"big","version":"1.0.0","cases":[`)
	for i := range 10000 {
		if i > 0 {
			raw.WriteString(",")
		}
		fmt.Fprintf(&raw, `{"id":"case-%d","task":"Fix the failing test number %d in the repository and explain the change","env":{"kind":"repo","source":{"files":{"main.py":"print(%d)\n"}}},"graders":[{"id":"tests","kind":"command","cmd":"pytest -q"}],"timeoutSec":300,"tags":["t%d"],"expected":{"exit":0,"score":0.75}}`, i, i, i, i%10)
	}
	raw.WriteString("]}")
	s := mustParse(b, registry.Dataset, raw.String())
	for b.Loop() {
		if _, _, err := VersionRecord("ws", s); err != nil {
			b.Fatal(err)
		}
	}
}

// reencode rewrites JSON the way PostgreSQL's jsonb returns it: members
// in another order, with spaces.
func reencode(t *testing.T, raw []byte) []byte {
	t.Helper()
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return out
}
