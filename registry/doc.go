// Package registry is the pure domain of the versioned registries (issue 4):
// the typed specs of datasets, harnesses, harness templates, judges, rubrics
// and runtimes; their strict decoding and validation; canonical JSON and
// content digests; `latest` resolution; version-tag normalisation;
// capability origins; and diffs between versions.
//
// Nothing here touches a database or HTTP. The store (package store) keeps
// what this package produces (VersionRecord) and the API layer maps its
// errors: every refusal wraps derrors.ErrInvalid (a *ValidationError whose
// Problems name the field path and the rule), so it answers 400.
//
// The flow of a registration:
//
//	s, err := registry.Parse(registry.Judge, body, true) // strict decode + validate
//	v, cases, err := registry.VersionRecord(owner, s)    // store rows, digest included
//	stored, created, err := st.RegisterVersion(ctx, v, team, cases)
//
// and of a read: the store's canonical spec goes back through
// Parse(kind, spec, false), which accepts the legacy judge kinds.
package registry
