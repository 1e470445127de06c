package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"svc/internal/platform/derrors"
)

// Spec is a parsed, valid spec of any kind with its canonical JSON and
// digest. The zero Spec is not valid; obtain one from Parse.
type Spec struct {
	kind      Kind
	id        string
	version   string
	value     any // *DatasetSpec, *HarnessSpec, *HarnessTemplateSpec, *JudgeSpec, *RubricSpec or *RuntimeSpec
	canonical []byte
	digest    string
}

// Kind returns the spec's kind.
func (s Spec) Kind() Kind { return s.kind }

// ID returns the entity id.
func (s Spec) ID() string { return s.id }

// Version returns the version.
func (s Spec) Version() string { return s.version }

// Canonical returns the canonical JSON of the whole spec (for a dataset,
// cases included). The caller must not modify it.
func (s Spec) Canonical() []byte { return s.canonical }

// Digest returns "sha256:<hex>" of Canonical: the version's content identity.
func (s Spec) Digest() string { return s.digest }

// Value returns the typed spec: *DatasetSpec, *HarnessSpec,
// *HarnessTemplateSpec, *JudgeSpec, *RubricSpec or *RuntimeSpec. The
// caller must not modify it (Canonical would no longer describe it).
func (s Spec) Value() any { return s.value }

// Dataset returns the dataset spec, or nil for another kind.
func (s Spec) Dataset() *DatasetSpec { d, _ := s.value.(*DatasetSpec); return d }

// Harness returns the harness spec, or nil for another kind.
func (s Spec) Harness() *HarnessSpec { h, _ := s.value.(*HarnessSpec); return h }

// HarnessTemplate returns the harness template spec, or nil for another kind.
func (s Spec) HarnessTemplate() *HarnessTemplateSpec {
	t, _ := s.value.(*HarnessTemplateSpec)
	return t
}

// Judge returns the judge spec, or nil for another kind.
func (s Spec) Judge() *JudgeSpec { j, _ := s.value.(*JudgeSpec); return j }

// Rubric returns the rubric spec, or nil for another kind.
func (s Spec) Rubric() *RubricSpec { r, _ := s.value.(*RubricSpec); return r }

// Runtime returns the runtime spec, or nil for another kind.
func (s Spec) Runtime() *RuntimeSpec { r, _ := s.value.(*RuntimeSpec); return r }

// Ref returns the spec's id@version reference.
func (s Spec) Ref() Ref { return Ref{ID: s.id, Version: s.version} }

// MarshalJSON writes the canonical spec, so a Spec can be served as is.
func (s Spec) MarshalJSON() ([]byte, error) {
	if s.canonical == nil {
		return []byte("null"), nil
	}
	return s.canonical, nil
}

// SecretNames lists the workspace secrets a spec references by name
// (a runtime's authSecret and kubeconfigSecret, a harness's secretEnv),
// sorted; nil for kinds that reference none.
func (s Spec) SecretNames() []string {
	switch v := s.value.(type) {
	case *RuntimeSpec:
		return v.SecretNames()
	case *HarnessSpec:
		return v.SecretNames()
	}
	return nil
}

// Parse decodes raw strictly as a spec of kind, validates it and computes
// its canonical JSON and digest. Every refusal is a *ValidationError
// (errors.Is derrors.ErrInvalid) whose problems name the field path and the
// rule: malformed JSON, unknown members, values of the wrong type, and the
// kind's rules.
//
// forNewRegistration is true for POST bodies (register and validate), and
// false when reading a stored spec back: then the legacy judge kinds
// (model, harness) are accepted; every other rule applies either way.
func Parse(kind Kind, raw []byte, forNewRegistration bool) (Spec, error) {
	var p problems
	var value any
	switch kind {
	case Dataset:
		d := &DatasetSpec{}
		if decodeStrict(raw, d, &p) {
			d.validate(&p)
		}
		value = d
	case Harness:
		h := &HarnessSpec{}
		if decodeStrict(raw, h, &p) {
			h.validate(&p)
		}
		value = h
	case HarnessTemplate:
		t := &HarnessTemplateSpec{}
		if decodeStrict(raw, t, &p) {
			t.validate(&p)
		}
		value = t
	case Judge:
		j := &JudgeSpec{}
		if decodeStrict(raw, j, &p) {
			j.validate(&p, forNewRegistration)
		}
		value = j
	case Rubric:
		r := &RubricSpec{}
		if decodeStrict(raw, r, &p) {
			r.validate(&p)
		}
		value = r
	case Runtime:
		r := &RuntimeSpec{}
		if decodeStrict(raw, r, &p) {
			r.validate(&p)
		}
		value = r
	default:
		_, err := ParseKind(string(kind))
		return Spec{}, err
	}
	if err := p.err(kind); err != nil {
		return Spec{}, err
	}
	return newSpec(kind, value)
}

// newSpec wraps a valid typed spec with its canonical JSON and digest.
func newSpec(kind Kind, value any) (Spec, error) {
	canon, err := CanonicalJSON(value)
	if err != nil {
		// Only a number out of canonical range can get here, and the
		// parser refuses those; still the input's fault.
		return Spec{}, fmt.Errorf("%w: %s spec: %v", derrors.ErrInvalid, kind.label(), err)
	}
	s := Spec{kind: kind, value: value, canonical: canon, digest: Digest(canon)}
	switch v := value.(type) {
	case *DatasetSpec:
		s.id, s.version = v.ID, v.Version
	case *HarnessSpec:
		s.id, s.version = v.ID, v.Version
	case *HarnessTemplateSpec:
		s.id, s.version = v.ID, v.Version
	case *JudgeSpec:
		s.id, s.version = v.ID, v.Version
	case *RubricSpec:
		s.id, s.version = v.ID, v.Version
	case *RuntimeSpec:
		s.id, s.version = v.ID, v.Version
	}
	return s, nil
}

// Parts is a spec split the way it is kept: the canonical spec without a
// dataset's cases, and each case as its own canonical document with its
// digest, so that a large dataset can be read a page or a selection of
// cases at a time. JoinCases(Header, Cases) gives Canonical back.
type Parts struct {
	// Header is the canonical spec; for a dataset, everything but the cases.
	Header json.RawMessage
	// Digest is the digest of the whole spec, cases included (Spec.Digest).
	Digest string
	// CaseCount is the number of a dataset's cases; 0 for other kinds.
	CaseCount int
	// Cases are a dataset's cases in order; nil for other kinds.
	Cases []CaseDoc
}

// CaseDoc is one dataset case as its own canonical document.
type CaseDoc struct {
	ID     string
	Ord    int             // position in the dataset, from 0
	Digest string          // Digest(Doc)
	Tags   []string        // the case's tags, as in the spec
	Doc    json.RawMessage // the canonical EvalCase
}

// Parts splits the spec into its header and, for a dataset, its cases,
// each with its own canonical document and digest.
func (s Spec) Parts() (Parts, error) {
	if s.canonical == nil {
		return Parts{}, errors.New("registry.Spec.Parts: the zero Spec; use Parse")
	}
	p := Parts{Header: json.RawMessage(s.canonical), Digest: s.digest}
	d := s.Dataset()
	if d == nil {
		return p, nil
	}
	header := *d
	header.Cases = nil
	h, err := CanonicalJSON(header)
	if err != nil {
		return Parts{}, fmt.Errorf("registry.Spec.Parts: %w", err)
	}
	p.Header = h
	p.CaseCount = len(d.Cases)
	p.Cases = make([]CaseDoc, len(d.Cases))
	for i, c := range d.Cases {
		doc, err := CanonicalJSON(c)
		if err != nil {
			return Parts{}, fmt.Errorf("registry.Spec.Parts: case %q: %w", c.ID, err)
		}
		p.Cases[i] = CaseDoc{ID: c.ID, Ord: i, Digest: Digest(doc), Tags: c.Tags, Doc: doc}
	}
	return p, nil
}

// JoinCases rebuilds a dataset's full canonical spec from its header
// (Parts.Header) and its cases in any order (sorted by Ord here), so that
// Digest(JoinCases(...)) equals the version's digest and
// Parse(Dataset, ..., false) reads it back. The header and the case
// documents may be re-encoded (members reordered, spaces added, as
// PostgreSQL's jsonb returns them). A header that already holds cases is
// ErrInvalid.
func JoinCases(header json.RawMessage, cases []CaseDoc) ([]byte, error) {
	tree, err := parseTree(header)
	if err != nil {
		return nil, fmt.Errorf("%w: registry.JoinCases: header: %v", derrors.ErrInvalid, err)
	}
	obj, ok := tree.(map[string]any)
	if !ok {
		return nil, derrors.Invalidf("registry.JoinCases: the header is %s, not an object", describe(tree))
	}
	if _, has := obj["cases"]; has {
		return nil, derrors.Invalidf("registry.JoinCases: the header already holds cases")
	}
	ordered := append([]CaseDoc(nil), cases...)
	sort.SliceStable(ordered, func(i, j int) bool { return ordered[i].Ord < ordered[j].Ord })
	docs := make([]any, len(ordered))
	for i, c := range ordered {
		doc, err := parseTree(c.Doc)
		if err != nil {
			return nil, fmt.Errorf("%w: registry.JoinCases: case %q: %v", derrors.ErrInvalid, c.ID, err)
		}
		docs[i] = doc
	}
	if len(docs) > 0 {
		obj["cases"] = docs
	}
	out, err := CanonicalJSON(obj)
	if err != nil {
		return nil, fmt.Errorf("registry.JoinCases: %w", err)
	}
	return out, nil
}
