package scoring

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
	"svc/internal/platform/derrors"
)

func TestDefaultPolicyDigest(t *testing.T) {
	// The default policy's document is pinned: changing it would turn every
	// stamped default@1 batch unresolvable.
	want := registry.Digest([]byte(`{"id":"default","version":"1"}`))
	if got := PolicyDigest(DefaultPolicy()); got != want {
		t.Errorf("PolicyDigest(default) = %s, want %s", got, want)
	}
	if got, want := Stamp(DefaultPolicy()), (eval.PolicyStamp{ID: "default", Version: "1", Digest: want}); got != want {
		t.Errorf("Stamp(default) = %+v, want %+v", got, want)
	}
}

func TestComposePolicy(t *testing.T) {
	base := DefaultPolicy()
	tests := []struct {
		name     string
		base     eval.VerdictPolicy
		critical []eval.CaseMatcher
		want     []eval.CaseMatcher
		wantErr  string // substring of the error; "" for success
	}{
		{name: "none", base: base, want: nil},
		{
			name:     "deduplicated and sorted",
			base:     eval.VerdictPolicy{ID: "p", Version: "2", CriticalCases: []eval.CaseMatcher{{Prefix: "auth/"}}},
			critical: []eval.CaseMatcher{{CaseID: "z"}, {Prefix: "auth/"}, {CaseID: "a"}, {CaseID: "z"}},
			want:     []eval.CaseMatcher{{Prefix: "auth/"}, {CaseID: "a"}, {CaseID: "z"}},
		},
		{name: "empty matcher", base: base, critical: []eval.CaseMatcher{{CaseID: "a"}, {}}, wantErr: "criticalCases[1]"},
		{name: "both set", base: base, critical: []eval.CaseMatcher{{CaseID: "a", Prefix: "a"}}, wantErr: "criticalCases[0]"},
		{
			name:    "bad matcher in the base",
			base:    eval.VerdictPolicy{ID: "p", Version: "1", CriticalCases: []eval.CaseMatcher{{}}},
			wantErr: "verdict policy p@1: criticalCases[0]",
		},
		{name: "base without id", base: eval.VerdictPolicy{Version: "1"}, wantErr: "id and version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ComposePolicy(tt.base, tt.critical)
			if tt.wantErr != "" {
				if !errors.Is(err, derrors.ErrInvalid) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ComposePolicy error = %v, want ErrInvalid containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got.CriticalCases); diff != "" {
				t.Errorf("criticalCases (-want +got):\n%s", diff)
			}
			if got.ID != tt.base.ID || got.Version != tt.base.Version {
				t.Errorf("composed %s@%s, want the base's %s@%s", got.ID, got.Version, tt.base.ID, tt.base.Version)
			}
		})
	}
}

func TestComposePolicyOrderIndependent(t *testing.T) {
	a, err := ComposePolicy(DefaultPolicy(), []eval.CaseMatcher{{CaseID: "x"}, {Prefix: "y"}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := ComposePolicy(DefaultPolicy(), []eval.CaseMatcher{{Prefix: "y"}, {CaseID: "x"}, {CaseID: "x"}})
	if err != nil {
		t.Fatal(err)
	}
	if PolicyDigest(a) != PolicyDigest(b) {
		t.Errorf("the same matchers in another order give another digest")
	}
	if PolicyDigest(a) == PolicyDigest(DefaultPolicy()) {
		t.Errorf("critical cases do not change the digest")
	}
}

func TestIsCritical(t *testing.T) {
	p := eval.VerdictPolicy{ID: "p", Version: "1", CriticalCases: []eval.CaseMatcher{{CaseID: "login"}, {Prefix: "pay/"}}}
	tests := []struct {
		caseID string
		want   bool
	}{
		{"login", true},
		{"login2", false},
		{"pay/refund", true},
		{"pay", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := IsCritical(p, tt.caseID); got != tt.want {
			t.Errorf("IsCritical(%q) = %v, want %v", tt.caseID, got, tt.want)
		}
	}
}

func TestResolvePolicy(t *testing.T) {
	composed, err := ComposePolicy(DefaultPolicy(), []eval.CaseMatcher{{CaseID: "login"}})
	if err != nil {
		t.Fatal(err)
	}
	composedStamp := Stamp(composed)
	defaultStamp := Stamp(DefaultPolicy())
	legacy := composedStamp
	legacy.Digest = strings.TrimPrefix(composedStamp.Digest, registry.DigestPrefix)[:16]
	other := eval.VerdictPolicy{ID: "other", Version: "1"}
	forged := defaultStamp
	forged.Digest = PolicyDigest(composed) // default@1 naming another document

	tests := []struct {
		name       string
		stamp      *eval.PolicyStamp
		manifest   *eval.Manifest
		wantStatus string
		wantReason string // substring
		want       eval.VerdictPolicy
	}{
		{name: "no stamp", wantStatus: PolicyLegacyDefault, want: DefaultPolicy()},
		{name: "no stamp, manifest ignored", manifest: &eval.Manifest{Policy: &composed}, wantStatus: PolicyLegacyDefault, want: DefaultPolicy()},
		{name: "embedded matches", stamp: &composedStamp, manifest: &eval.Manifest{Policy: &composed}, wantStatus: PolicyResolved, want: composed},
		{name: "embedded matches a legacy 16-hex stamp", stamp: &legacy, manifest: &eval.Manifest{Policy: &composed}, wantStatus: PolicyResolved, want: composed},
		{name: "known policy without manifest", stamp: &defaultStamp, wantStatus: PolicyResolved, want: DefaultPolicy()},
		{name: "known policy, manifest without policy", stamp: &defaultStamp, manifest: &eval.Manifest{}, wantStatus: PolicyResolved, want: DefaultPolicy()},
		{name: "known policy, embedded document differs", stamp: &defaultStamp, manifest: &eval.Manifest{Policy: &other}, wantStatus: PolicyResolved, want: DefaultPolicy()},
		{name: "composed, no manifest", stamp: &composedStamp, wantStatus: PolicyUnresolvable, wantReason: "no manifest", want: DefaultPolicy()},
		{name: "composed, manifest without policy", stamp: &composedStamp, manifest: &eval.Manifest{}, wantStatus: PolicyUnresolvable, wantReason: "embeds no policy", want: DefaultPolicy()},
		{name: "digest mismatch", stamp: &composedStamp, manifest: &eval.Manifest{Policy: &other}, wantStatus: PolicyUnresolvable, wantReason: "does not hash to the stamp", want: DefaultPolicy()},
		{name: "unknown id@version", stamp: &eval.PolicyStamp{ID: "strict", Version: "9", Digest: PolicyDigest(other)}, wantStatus: PolicyUnresolvable, wantReason: "not a known policy", want: DefaultPolicy()},
		{name: "known id whose document no longer hashes", stamp: &forged, wantStatus: PolicyUnresolvable, wantReason: "built-in document no longer hashes", want: DefaultPolicy()},
		{name: "malformed digest", stamp: &eval.PolicyStamp{ID: "default", Version: "1", Digest: "md5:abc"}, manifest: &eval.Manifest{Policy: &composed}, wantStatus: PolicyUnresolvable, wantReason: "malformed", want: DefaultPolicy()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, res := ResolvePolicy(tt.stamp, tt.manifest)
			if res.Status != tt.wantStatus || !strings.Contains(res.Reason, tt.wantReason) {
				t.Errorf("resolution = %+v, want status %s with reason containing %q", res, tt.wantStatus, tt.wantReason)
			}
			if tt.wantStatus != PolicyUnresolvable && res.Reason != "" {
				t.Errorf("reason %q on a %s resolution", res.Reason, res.Status)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("policy (-want +got):\n%s", diff)
			}
		})
	}
}
