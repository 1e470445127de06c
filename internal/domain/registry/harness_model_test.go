package registry_test

import (
	"errors"
	"strings"
	"testing"

	"svc/internal/domain/registry"
	"svc/internal/platform/derrors"
)

// A harness's model is a label (a string, as before) or a binding
// reference {ref}; a label keeps its canonical form (so its digest, and
// every manifest that sealed it, is unchanged), and a bad ref is a 400
// naming the field.
func TestHarnessModelForms(t *testing.T) {
	const head = `{"id":"h","version":"1","kind":"process","command":["run"]`
	for _, c := range []struct {
		name, model string
		label, ref  string
		canonical   string // a substring of the canonical JSON
		field       string // the refused field, "" when accepted
	}{
		{name: "a label", model: `"gpt-4o"`, label: "gpt-4o", canonical: `"model":"gpt-4o"`},
		{name: "a binding", model: `{"ref":"brain"}`, ref: "brain", canonical: `"model":{"ref":"brain"}`},
		{name: "no model", model: ``, canonical: `"kind":"process"`},
		{name: "an empty ref", model: `{"ref":""}`, field: "model.ref"},
		{name: "no ref", model: `{}`, field: "model.ref"},
		{name: "a ref with a space", model: `{"ref":"my model"}`, field: "model.ref"},
		{name: "an unknown member", model: `{"ref":"brain","key":"sk-1"}`, field: "model.key"},
		{name: "a number", model: `7`, field: "model"},
		{name: "a label with a space", model: `"gpt 4"`, field: "model"},
	} {
		doc := head + "}"
		if c.model != "" {
			doc = head + `,"model":` + c.model + "}"
		}
		s, err := registry.Parse(registry.Harness, []byte(doc), true)
		if c.field != "" {
			if !errors.Is(err, derrors.ErrInvalid) || !strings.Contains(err.Error(), c.field) {
				t.Errorf("%s: %v, want a refusal naming %s", c.name, err, c.field)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		m := s.Harness().Model
		if m.Label != c.label || m.Ref != c.ref || m.Binding() != c.ref {
			t.Errorf("%s: model = %+v, want label %q ref %q", c.name, m, c.label, c.ref)
		}
		if !strings.Contains(string(s.Canonical()), c.canonical) {
			t.Errorf("%s: canonical %s lacks %s", c.name, s.Canonical(), c.canonical)
		}
		if c.model == "" && strings.Contains(string(s.Canonical()), `"model"`) {
			t.Errorf("%s: canonical %s has a model", c.name, s.Canonical())
		}
	}
	// A label's digest is what it was when model was a plain string.
	s, err := registry.Parse(registry.Harness, []byte(head+`,"model":"gpt-4o"}`), true)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"command":["run"],"id":"h","kind":"process","model":"gpt-4o","version":"1"}`
	if string(s.Canonical()) != want {
		t.Errorf("canonical = %s, want %s", s.Canonical(), want)
	}
}

// FuzzHarnessModel: any model member either parses to a form that
// encodes back to itself or is refused as invalid; it never panics.
func FuzzHarnessModel(f *testing.F) {
	for _, s := range []string{`"gpt-4o"`, `{"ref":"brain"}`, `{"ref":""}`, `{}`, `7`, `null`, `[]`, `{"ref":1}`, `"a\u0000b"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, model string) {
		doc := `{"id":"h","version":"1","kind":"process","command":["run"],"model":` + model + `}`
		s, err := registry.Parse(registry.Harness, []byte(doc), true)
		if err != nil {
			if !errors.Is(err, derrors.ErrInvalid) {
				t.Fatalf("%s: %v is not ErrInvalid", model, err)
			}
			return
		}
		again, err := registry.Parse(registry.Harness, s.Canonical(), true)
		if err != nil || again.Digest() != s.Digest() {
			t.Fatalf("%s: the canonical form %s does not parse back alike: %v", model, s.Canonical(), err)
		}
	})
}
