// Package registry is the pure domain of the versioned registries (issue 4):
// the typed specs of datasets, harnesses, harness templates, judges, rubrics
// and runtimes; their strict decoding and validation; canonical JSON and
// content digests; `latest` resolution; version-tag normalisation;
// capability origins; and diffs between versions.
//
// Nothing here touches a database or HTTP, and the package does not import
// the store: the record layer (package records) turns what this package
// produces (Spec.Parts) into store rows and back (JoinCases), `latest` is
// resolved over any Version (the store's rows implement it), and the API
// layer maps its errors: every refusal wraps derrors.ErrInvalid (a
// *ValidationError whose Problems name the field path and the rule), so it
// answers 400.
//
// The flow of a registration:
//
//	s, err := registry.Parse(registry.Judge, body, true) // strict decode + validate
//	v, cases, err := records.VersionRecord(owner, s)     // store rows, digest included
//	stored, created, err := st.RegisterVersion(ctx, v, team, cases)
//
// and of a read: the store's canonical spec (for a dataset, joined with its
// cases by records.JoinDataset) goes back through Parse(kind, spec, false),
// which accepts the legacy judge kinds.
package registry
