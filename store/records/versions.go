package records

import (
	"encoding/json"
	"fmt"

	"svc/internal/domain/registry"
	"svc/store"
)

// The store's version rows resolve `latest` in the registry directly.
var _ registry.Version = store.EntityVersion{}

// VersionRecord returns the store rows of a parsed spec under owner: the
// version (kind, owner, id, version, digest, canonical spec, case count)
// and, for a dataset, its cases, each with its own canonical document and
// digest, while the version's Spec keeps everything but the cases
// (registry.Spec.Parts). The caller fills Tags, Origin, CreatedBy and
// CreatedAt.
func VersionRecord(owner string, s registry.Spec) (store.EntityVersion, []store.DatasetCase, error) {
	p, err := s.Parts()
	if err != nil {
		return store.EntityVersion{}, nil, fmt.Errorf("records.VersionRecord(%q, %s): %w", owner, s.Ref(), err)
	}
	v := store.EntityVersion{
		Kind:      string(s.Kind()),
		Owner:     owner,
		ID:        s.ID(),
		Version:   s.Version(),
		Digest:    p.Digest,
		Spec:      p.Header,
		CaseCount: p.CaseCount,
	}
	if p.Cases == nil {
		return v, nil, nil
	}
	cases := make([]store.DatasetCase, len(p.Cases))
	for i, c := range p.Cases {
		cases[i] = store.DatasetCase{CaseID: c.ID, Ord: c.Ord, Digest: c.Digest, Tags: c.Tags, Doc: c.Doc}
	}
	return v, cases, nil
}

// JoinDataset rebuilds a dataset's full canonical spec from the stored
// header (EntityVersion.Spec) and its case rows in any order
// (registry.JoinCases), so that its digest equals the version's and
// registry.Parse(registry.Dataset, ..., false) reads it back. A header that
// already holds cases, or a case document that is not JSON, is ErrInvalid.
func JoinDataset(header json.RawMessage, cases []store.DatasetCase) ([]byte, error) {
	docs := make([]registry.CaseDoc, len(cases))
	for i, c := range cases {
		docs[i] = registry.CaseDoc{ID: c.CaseID, Ord: c.Ord, Digest: c.Digest, Tags: c.Tags, Doc: c.Doc}
	}
	out, err := registry.JoinCases(header, docs)
	if err != nil {
		return nil, fmt.Errorf("records.JoinDataset: %w", err)
	}
	return out, nil
}
