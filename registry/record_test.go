package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"svc/derrors"
	"svc/store"
)

func TestVersionRecordAndJoinDataset(t *testing.T) {
	s := mustParse(t, "dataset", true)
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
	if len(cases) != 3 {
		t.Fatalf("got %d case rows", len(cases))
	}
	for i, c := range cases {
		want, _ := CaseDigest(s.Dataset().Cases[i])
		if c.Ord != i || c.CaseID != s.Dataset().Cases[i].ID || c.Digest != want || Digest(c.Doc) != c.Digest {
			t.Errorf("case row %d = %+v", i, c)
		}
	}
	if cases[0].Tags[0] != "docs" {
		t.Errorf("case tags = %v", cases[0].Tags)
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
	if got := Digest(full); got != s.Digest() {
		t.Errorf("Digest(JoinDataset) = %s, want %s\n%s", got, s.Digest(), full)
	}
	back, err := Parse(Dataset, full, false)
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
	s := mustParse(t, "runtime-nomad", true)
	v, cases, err := VersionRecord(SharedOwner, s)
	if err != nil {
		t.Fatal(err)
	}
	if cases != nil || v.Owner != "_shared" || v.Kind != "runtime" || !bytes.Equal(v.Spec, s.Canonical()) || v.CaseCount != 0 {
		t.Errorf("version row = %+v, cases %v", v, cases)
	}
	if _, _, err := VersionRecord("ws", Spec{}); err == nil {
		t.Error("VersionRecord(zero Spec) succeeded")
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
