package registry

import (
	"testing"
)

// release is a registered version as ResolveLatest reads it.
type release struct {
	name string
	seq  int64
	gone bool
}

func (r release) VersionName() string    { return r.name }
func (r release) RegistrationSeq() int64 { return r.seq }
func (r release) Tombstoned() bool       { return r.gone }

// versions builds live versions registered in the order given (seq 1, 2, ...).
func versions(vs ...string) []release {
	out := make([]release, len(vs))
	for i, v := range vs {
		out[i] = release{name: v, seq: int64(i + 1)}
	}
	return out
}

func TestResolveLatest(t *testing.T) {
	tombstoned := func(vs []release, i int) []release {
		vs[i].gone = true
		return vs
	}
	for _, tc := range []struct {
		name string
		in   []release
		want string // "" = none
	}{
		{"none", nil, ""},
		{"one", versions("1.0.0"), "1.0.0"},
		{"numeric not lexical", versions("1.10.0", "1.9.0"), "1.10.0"},
		{"registered out of order", versions("2.0.0", "1.0.0", "1.5.0"), "2.0.0"},
		{"major", versions("9.9.9", "10.0.0"), "10.0.0"},
		{"patch", versions("1.0.10", "1.0.9"), "1.0.10"},
		{"prerelease below release", versions("1.0.0", "1.0.0-rc.1"), "1.0.0"},
		{"prerelease above older release", versions("1.0.0", "2.0.0-rc.1"), "2.0.0-rc.1"},
		{"prerelease order", versions("1.0.0-alpha.10", "1.0.0-alpha.9", "1.0.0-beta"), "1.0.0-beta"},
		{"v prefix", versions("v1.2.0", "1.10.0"), "1.10.0"},
		{"build metadata ties go to the later", versions("1.0.0+b2", "1.0.0+b1"), "1.0.0+b1"},
		{"one non-semver: last registered", versions("1.0.0", "2.0.0", "nightly", "1.5.0"), "1.5.0"},
		{"shorthand is not semver", versions("2.0.0", "1.1"), "1.1"},
		{"dates: last registered", versions("2024-05-02", "2024-05-01"), "2024-05-01"},
		{"plain numbers: last registered", versions("10", "9"), "9"},
		{"tombstone skipped", tombstoned(versions("1.0.0", "2.0.0"), 1), "1.0.0"},
		{"tombstoned non-semver ignored", tombstoned(versions("1.0.0", "draft", "1.2.0"), 1), "1.2.0"},
		{"all tombstoned", tombstoned(versions("1.0.0"), 0), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ResolveLatest(tc.in)
			if tc.want == "" {
				if ok {
					t.Errorf("ResolveLatest = %q, want none", got.name)
				}
				return
			}
			if !ok || got.name != tc.want {
				t.Errorf("ResolveLatest = %q, %v; want %q", got.name, ok, tc.want)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	vs := versions("1.0.0", "1.1.0", "2.0.0")
	vs[2].gone = true
	for _, tc := range []struct {
		want, got string
		ok        bool
	}{
		{"1.0.0", "1.0.0", true},
		{"latest", "1.1.0", true},
		{"2.0.0", "", false}, // tombstoned
		{"3.0.0", "", false},
	} {
		v, ok := Resolve(vs, tc.want)
		if ok != tc.ok || v.name != tc.got {
			t.Errorf("Resolve(%q) = %q, %v; want %q, %v", tc.want, v.name, ok, tc.got, tc.ok)
		}
	}
}

func TestIsSemver(t *testing.T) {
	for v, want := range map[string]bool{
		"1.0.0": true, "v1.0.0": true, "0.0.1": true, "1.10.0-rc.1+build.5": true, "1.0.0+20240501": true,
		"1.0": false, "1": false, "v1": false, "01.0.0": false, "1.0.0.0": false, "latest": false,
		"": false, "vv1.0.0": false, "1.0.0-": false, "2024-05-01": false,
	} {
		if got := IsSemver(v); got != want {
			t.Errorf("IsSemver(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestValidateNames(t *testing.T) {
	for _, tc := range []struct {
		fn   func(string) error
		in   string
		okay bool
	}{
		{ValidateID, "swe-bench.lite_v2", true},
		{ValidateID, "", false},
		{ValidateID, "_shared", false},
		{ValidateID, "a:b", false},
		{ValidateVersion, "1.0.0+build.1", true},
		{ValidateVersion, "latest", false},
		{ValidateVersion, "", false},
		{ValidateVersionSelector, "latest", true},
		{ValidateVersionSelector, "LATEST", false},
		{ValidateVersionSelector, "2.0.0", true},
	} {
		if err := tc.fn(tc.in); (err == nil) != tc.okay {
			t.Errorf("validate(%q) = %v, want ok %v", tc.in, err, tc.okay)
		}
	}
}
