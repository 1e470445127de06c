package registry

import (
	"strings"

	"golang.org/x/mod/semver"

	"svc/store"
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

// ResolveLatest picks the version `latest` means among versions (spec §9.2),
// ignoring tombstoned ones; false when none is live.
//
// When every live version is a semantic version (IsSemver) the highest by
// semver precedence wins: 1.10.0 above 1.9.0, a prerelease below its
// release, build metadata ignored (a tie goes to the later registered).
// Otherwise, as soon as one live version is not semver, the last
// registered (highest Seq) wins: the entity is then treated as
// non-semver as a whole, so no ordering is invented between "2024-05-01"
// and "1.0.0".
func ResolveLatest(versions []store.EntityVersion) (store.EntityVersion, bool) {
	var live []store.EntityVersion
	allSemver := true
	for _, v := range versions {
		if v.DeletedAt != nil {
			continue
		}
		live = append(live, v)
		if !IsSemver(v.Version) {
			allSemver = false
		}
	}
	if len(live) == 0 {
		return store.EntityVersion{}, false
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
func later(a, b store.EntityVersion, bySemver bool) bool {
	if bySemver {
		sa, _ := semverOf(a.Version)
		sb, _ := semverOf(b.Version)
		if c := semver.Compare(sa, sb); c != 0 {
			return c > 0
		}
	}
	return a.Seq > b.Seq
}

// Resolve finds the live version want names among versions: an exact
// version, or `latest` (ResolveLatest); false when there is none.
func Resolve(versions []store.EntityVersion, want string) (store.EntityVersion, bool) {
	if want == LatestVersion {
		return ResolveLatest(versions)
	}
	for _, v := range versions {
		if v.Version == want && v.DeletedAt == nil {
			return v, true
		}
	}
	return store.EntityVersion{}, false
}
