package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	"svc/internal/platform/derrors"
)

// ChangeKind says how a value differs between base and candidate.
type ChangeKind string

// The kinds of change.
const (
	Added   ChangeKind = "added"   // only in candidate
	Removed ChangeKind = "removed" // only in base
	Changed ChangeKind = "changed" // in both, different
)

// FieldChange is one difference between two JSON documents, at the
// deepest path where both sides still have the same shape (objects by
// member, arrays by index).
type FieldChange struct {
	// Path in path syntax ("services.web.image", "command[1]"); empty when
	// the documents differ at the root.
	Path   string     `json:"path"`
	Change ChangeKind `json:"change"`
	// Base is the canonical JSON of the base value; absent when Added.
	Base json.RawMessage `json:"base,omitempty"`
	// Candidate is the canonical JSON of the candidate value; absent when
	// Removed.
	Candidate json.RawMessage `json:"candidate,omitempty"`
}

// DiffSpecs lists the differences between two JSON documents (typically
// canonical specs; GET /harnesses/:id/diff compares resolved specs),
// ordered by path: object members in byte order, array elements by
// index. Every difference is reported, "version" included. Identical
// documents give an empty, non-nil list. Malformed JSON is ErrInvalid.
func DiffSpecs(base, candidate []byte) ([]FieldChange, error) {
	a, err := parseTree(base)
	if err != nil {
		return nil, fmt.Errorf("%w: diff base: %v", derrors.ErrInvalid, err)
	}
	b, err := parseTree(candidate)
	if err != nil {
		return nil, fmt.Errorf("%w: diff candidate: %v", derrors.ErrInvalid, err)
	}
	out := []FieldChange{}
	if err := diffTree("", a, b, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// diffTree appends the differences between a and b at path.
func diffTree(path string, a, b any, out *[]FieldChange) error {
	switch x := a.(type) {
	case map[string]any:
		if y, ok := b.(map[string]any); ok {
			keys := sortedKeys(x)
			for _, k := range sortedKeys(y) {
				if _, both := x[k]; !both {
					keys = append(keys, k)
				}
			}
			sort.Strings(keys)
			for _, k := range keys {
				av, inA := x[k]
				bv, inB := y[k]
				switch {
				case !inB:
					if err := appendChange(out, field(path, k), Removed, av, nil); err != nil {
						return err
					}
				case !inA:
					if err := appendChange(out, field(path, k), Added, nil, bv); err != nil {
						return err
					}
				default:
					if err := diffTree(field(path, k), av, bv, out); err != nil {
						return err
					}
				}
			}
			return nil
		}
	case []any:
		if y, ok := b.([]any); ok {
			for i := 0; i < len(x) || i < len(y); i++ {
				var err error
				switch {
				case i >= len(y):
					err = appendChange(out, index(path, i), Removed, x[i], nil)
				case i >= len(x):
					err = appendChange(out, index(path, i), Added, nil, y[i])
				default:
					err = diffTree(index(path, i), x[i], y[i], out)
				}
				if err != nil {
					return err
				}
			}
			return nil
		}
	}
	ca, err := canonicalTree(a)
	if err != nil {
		return err
	}
	cb, err := canonicalTree(b)
	if err != nil {
		return err
	}
	if !bytes.Equal(ca, cb) {
		*out = append(*out, FieldChange{Path: path, Change: Changed, Base: ca, Candidate: cb})
	}
	return nil
}

// appendChange records an added or removed value.
func appendChange(out *[]FieldChange, path string, kind ChangeKind, a, b any) error {
	fc := FieldChange{Path: path, Change: kind}
	var err error
	if kind == Removed {
		fc.Base, err = canonicalTree(a)
	} else {
		fc.Candidate, err = canonicalTree(b)
	}
	if err != nil {
		return err
	}
	*out = append(*out, fc)
	return nil
}

// canonicalTree encodes a generic tree canonically.
func canonicalTree(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	if err := writeCanonical(&b, v); err != nil {
		return nil, fmt.Errorf("%w: %v", derrors.ErrInvalid, err)
	}
	return b.Bytes(), nil
}

// DatasetDiff is GET /datasets/:id/diff: how candidate's cases and
// metadata differ from base's.
type DatasetDiff struct {
	Base      DatasetSummary `json:"base"`
	Candidate DatasetSummary `json:"candidate"`
	// Added lists case ids only in candidate, in candidate order.
	Added []string `json:"added"`
	// Removed lists case ids only in base, in base order.
	Removed []string `json:"removed"`
	// Changed lists cases in both whose content differs, in candidate order.
	Changed []CaseChange `json:"changed"`
	// Unchanged counts cases identical on both sides.
	Unchanged int `json:"unchanged"`
	// Reordered is true when the cases on both sides appear in a
	// different relative order (order matters: it is part of the digest).
	Reordered bool `json:"reordered"`
	// Meta lists differences outside the cases (version, description,
	// tags, meta), by path.
	Meta []FieldChange `json:"meta"`
}

// DatasetSummary identifies one side of a dataset diff.
type DatasetSummary struct {
	ID        string `json:"id"`
	Version   string `json:"version"`
	Digest    string `json:"digest"`
	CaseCount int    `json:"caseCount"`
}

// CaseChange is a case present on both sides with different content.
type CaseChange struct {
	ID string `json:"id"`
	// Fields are the case's top-level members that differ, sorted
	// ("expected", "graders", ...).
	Fields          []string `json:"fields"`
	BaseDigest      string   `json:"baseDigest"`
	CandidateDigest string   `json:"candidateDigest"`
}

// DiffDatasets compares two dataset versions: added, removed and changed
// cases (matched by case id), and the metadata differences.
func DiffDatasets(base, candidate *DatasetSpec) (DatasetDiff, error) {
	d := DatasetDiff{Added: []string{}, Removed: []string{}, Changed: []CaseChange{}}
	baseDocs, err := caseDocs(base)
	if err != nil {
		return DatasetDiff{}, err
	}
	candDocs, err := caseDocs(candidate)
	if err != nil {
		return DatasetDiff{}, err
	}
	if d.Base, err = summarize(base); err != nil {
		return DatasetDiff{}, err
	}
	if d.Candidate, err = summarize(candidate); err != nil {
		return DatasetDiff{}, err
	}

	baseIdx := make(map[string]int, len(base.Cases))
	for i, c := range base.Cases {
		baseIdx[c.ID] = i
	}
	candIdx := make(map[string]int, len(candidate.Cases))
	for i, c := range candidate.Cases {
		candIdx[c.ID] = i
	}
	for _, c := range base.Cases {
		if _, ok := candIdx[c.ID]; !ok {
			d.Removed = append(d.Removed, c.ID)
		}
	}
	lastBase := -1
	for i, c := range candidate.Cases {
		j, ok := baseIdx[c.ID]
		if !ok {
			d.Added = append(d.Added, c.ID)
			continue
		}
		if j < lastBase {
			d.Reordered = true
		}
		lastBase = j
		if bytes.Equal(baseDocs[j], candDocs[i]) {
			d.Unchanged++
			continue
		}
		changes, err := DiffSpecs(baseDocs[j], candDocs[i])
		if err != nil {
			return DatasetDiff{}, err
		}
		var fields []string
		for _, ch := range changes {
			segs, err := parsePath(ch.Path)
			if err != nil || len(segs) == 0 || segs[0].isIndex {
				continue // a case is an object, so every path starts with a member
			}
			if len(fields) == 0 || fields[len(fields)-1] != segs[0].key {
				fields = append(fields, segs[0].key)
			}
		}
		d.Changed = append(d.Changed, CaseChange{ID: c.ID, Fields: fields, BaseDigest: Digest(baseDocs[j]), CandidateDigest: Digest(candDocs[i])})
	}

	bh, err := datasetHeader(base)
	if err != nil {
		return DatasetDiff{}, err
	}
	ch, err := datasetHeader(candidate)
	if err != nil {
		return DatasetDiff{}, err
	}
	if d.Meta, err = DiffSpecs(bh, ch); err != nil {
		return DatasetDiff{}, err
	}
	return d, nil
}

// caseDocs returns the canonical JSON of each case.
func caseDocs(d *DatasetSpec) ([][]byte, error) {
	docs := make([][]byte, len(d.Cases))
	for i, c := range d.Cases {
		doc, err := CanonicalJSON(c)
		if err != nil {
			return nil, fmt.Errorf("registry.DiffDatasets: case %q: %w", c.ID, err)
		}
		docs[i] = doc
	}
	return docs, nil
}

// datasetHeader returns the canonical JSON of a dataset without its cases.
func datasetHeader(d *DatasetSpec) ([]byte, error) {
	h := *d
	h.Cases = nil
	out, err := CanonicalJSON(h)
	if err != nil {
		return nil, fmt.Errorf("registry.DiffDatasets: %w", err)
	}
	return out, nil
}

// summarize identifies a dataset version with its digest.
func summarize(d *DatasetSpec) (DatasetSummary, error) {
	canon, err := CanonicalJSON(d)
	if err != nil {
		return DatasetSummary{}, fmt.Errorf("registry.DiffDatasets: %w", err)
	}
	return DatasetSummary{ID: d.ID, Version: d.Version, Digest: Digest(canon), CaseCount: len(d.Cases)}, nil
}
