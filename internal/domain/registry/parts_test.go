package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"svc/internal/platform/derrors"
)

func TestPartsAndJoinCases(t *testing.T) {
	s := mustParse(t, "dataset", true)
	p, err := s.Parts()
	if err != nil {
		t.Fatal(err)
	}
	if p.Digest != s.Digest() || p.CaseCount != 3 {
		t.Errorf("parts = digest %s, %d cases; want %s, 3", p.Digest, p.CaseCount, s.Digest())
	}
	if bytes.Contains(p.Header, []byte(`"cases"`)) {
		t.Errorf("the header holds the cases: %s", p.Header)
	}
	cases := p.Cases
	if len(cases) != 3 {
		t.Fatalf("got %d cases", len(cases))
	}
	for i, c := range cases {
		want, _ := CaseDigest(s.Dataset().Cases[i])
		if c.Ord != i || c.ID != s.Dataset().Cases[i].ID || c.Digest != want || Digest(c.Doc) != c.Digest {
			t.Errorf("case %d = %+v", i, c)
		}
	}
	if cases[0].Tags[0] != "docs" {
		t.Errorf("case tags = %v", cases[0].Tags)
	}

	// The cases may come back in any order and re-encoded (jsonb
	// reorders members and adds spaces): joining still gives the digest
	// of the whole spec.
	shuffled := []CaseDoc{cases[2], cases[0], cases[1]}
	for i := range shuffled {
		shuffled[i].Doc = reencode(t, shuffled[i].Doc)
	}
	full, err := JoinCases(reencode(t, p.Header), shuffled)
	if err != nil {
		t.Fatal(err)
	}
	if got := Digest(full); got != s.Digest() {
		t.Errorf("Digest(JoinCases) = %s, want %s\n%s", got, s.Digest(), full)
	}
	back, err := Parse(Dataset, full, false)
	if err != nil || back.Digest() != s.Digest() {
		t.Errorf("Parse(JoinCases) = %v, %v", back.Digest(), err)
	}

	for _, tc := range []struct {
		name   string
		header string
		cases  []CaseDoc
	}{
		{"header with cases", `{"cases":[]}`, nil},
		{"header not an object", `[]`, nil},
		{"header not JSON", `{`, nil},
		{"broken case doc", string(p.Header), []CaseDoc{{ID: "x", Doc: json.RawMessage(`{`)}}},
	} {
		if _, err := JoinCases(json.RawMessage(tc.header), tc.cases); !errors.Is(err, derrors.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", tc.name, err)
		}
	}
}

func TestPartsOtherKinds(t *testing.T) {
	s := mustParse(t, "runtime-nomad", true)
	p, err := s.Parts()
	if err != nil {
		t.Fatal(err)
	}
	if p.Cases != nil || !bytes.Equal(p.Header, s.Canonical()) || p.Digest != s.Digest() || p.CaseCount != 0 {
		t.Errorf("parts = %+v", p)
	}
	if _, err := (Spec{}).Parts(); err == nil {
		t.Error("Parts of the zero Spec succeeded")
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
