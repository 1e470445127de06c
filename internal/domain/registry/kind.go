package registry

import "svc/internal/platform/derrors"

// Kind names a kind of versioned registry entity; its value is the one the
// store keeps in store.Entity.Kind.
type Kind string

// The registry kinds.
const (
	Dataset         Kind = "dataset"
	Harness         Kind = "harness"
	HarnessTemplate Kind = "harness-template"
	Judge           Kind = "judge"
	Rubric          Kind = "rubric"
	Runtime         Kind = "runtime"
)

// SharedOwner is the reserved owner whose entities every workspace reads
// (owner-first lookup, `_shared` fallback). No id or workspace can spell it,
// because ids start with a letter or digit.
const SharedOwner = "_shared"

// LatestVersion is the version selector that resolves to the newest version
// (see ResolveLatest); it is never a registered version.
const LatestVersion = "latest"

// Kinds lists every registry kind, in the order the spec names them.
func Kinds() []Kind {
	return []Kind{Dataset, Harness, HarnessTemplate, Judge, Rubric, Runtime}
}

// ParseKind returns the Kind spelled s, or ErrInvalid naming the known kinds.
func ParseKind(s string) (Kind, error) {
	for _, k := range Kinds() {
		if string(k) == s {
			return k, nil
		}
	}
	return "", derrors.Invalidf("unknown registry kind %q; use one of %v", s, Kinds())
}

// String returns the kind's wire name.
func (k Kind) String() string { return string(k) }

// label is the kind in words, for messages.
func (k Kind) label() string {
	switch k {
	case HarnessTemplate:
		return "harness template"
	}
	return string(k)
}
