package registry

import (
	"strings"

	"golang.org/x/mod/semver"
)

// IsSemver reports whether v is a full semantic version MAJOR.MINOR.PATCH
// with optional -prerelease and +build, optionally written with a leading
// "v" ("1.10.0", "v2.0.0-rc.1"). Shorthands such as "1.2" are not.
func IsSemver(v string) bool {
	sv, ok := semverOf(v)
	return ok && sv != ""
}

// semverOf returns v in x/mod/semver's form ("v" prefix) when v is a full
// semantic version.
func semverOf(v string) (string, bool) {
	core := strings.TrimPrefix(v, "v")
	sv := "v" + core
	if !semver.IsValid(sv) {
		return "", false
	}
	if end := strings.IndexAny(core, "-+"); end >= 0 {
		core = core[:end]
	}
	if strings.Count(core, ".") != 2 {
		return "", false
	}
	return sv, true
}

// Version is one registered version of an entity as `latest` sees it:
// its version string, its place in registration order and whether it is
// tombstoned. The store's version row (store.EntityVersion) implements it,
// so this package resolves store rows without depending on the store.
type Version interface {
	// VersionName is the version as registered ("1.10.0", "2024-05-01").
	VersionName() string
	// RegistrationSeq orders the versions of one entity by registration:
	// a later registration has a higher value.
	RegistrationSeq() int64
	// Tombstoned reports whether the version was deleted.
	Tombstoned() bool
}

// ResolveLatest picks the version `latest` means among versions (spec §9.2),
// ignoring tombstoned ones; false when none is live.
//
// When every live version is a semantic version (IsSemver) the highest by
// semver precedence wins: 1.10.0 above 1.9.0, a prerelease below its
// release, build metadata ignored (a tie goes to the later registered).
// Otherwise, as soon as one live version is not semver, the last
// registered (highest RegistrationSeq) wins: the entity is then treated as
// non-semver as a whole, so no ordering is invented between "2024-05-01"
// and "1.0.0".
func ResolveLatest[V Version](versions []V) (V, bool) {
	var live []V
	allSemver := true
	for _, v := range versions {
		if v.Tombstoned() {
			continue
		}
		live = append(live, v)
		if !IsSemver(v.VersionName()) {
			allSemver = false
		}
	}
	if len(live) == 0 {
		var none V
		return none, false
	}
	best := live[0]
	for _, v := range live[1:] {
		if later(v, best, allSemver) {
			best = v
		}
	}
	return best, true
}

// later reports whether a ranks above b for `latest`.
func later[V Version](a, b V, bySemver bool) bool {
	if bySemver {
		sa, _ := semverOf(a.VersionName())
		sb, _ := semverOf(b.VersionName())
		if c := semver.Compare(sa, sb); c != 0 {
			return c > 0
		}
	}
	return a.RegistrationSeq() > b.RegistrationSeq()
}

// Resolve finds the live version want names among versions: an exact
// version, or `latest` (ResolveLatest); false when there is none.
func Resolve[V Version](versions []V, want string) (V, bool) {
	if want == LatestVersion {
		return ResolveLatest(versions)
	}
	for _, v := range versions {
		if v.VersionName() == want && !v.Tombstoned() {
			return v, true
		}
	}
	var none V
	return none, false
}
