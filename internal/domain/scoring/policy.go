// Package scoring decides and aggregates the judgments of a batch (spec
// §2.3, §2.7, §2.8): the verdict policy a batch is stamped with and how a
// stamp resolves later, each (case, trial)'s verdict and evidence reading,
// the per-metric summary and the score-plane digest that seals a scoring
// revision. It is pure: no I/O, no clocks.
package scoring

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
	"svc/internal/platform/derrors"
)

// The id and version of the policy a batch gets when it names none.
const (
	DefaultPolicyID      = "default"
	DefaultPolicyVersion = "1"
)

// Policy resolution statuses (spec §2.8).
const (
	PolicyResolved      = "resolved"
	PolicyLegacyDefault = "legacy_default"
	PolicyUnresolvable  = "unresolvable"
)

// DefaultPolicy is the verdict policy a batch gets when it names none:
// default@1, under which a case passes when every score with a pass verdict
// passes and the run did not fail.
func DefaultPolicy() eval.VerdictPolicy {
	return eval.VerdictPolicy{ID: DefaultPolicyID, Version: DefaultPolicyVersion}
}

// KnownPolicy returns the built-in policy document id@version, which a
// stamp may name without a manifest embedding it. Only default@1 exists.
func KnownPolicy(id, version string) (eval.VerdictPolicy, bool) {
	if id == DefaultPolicyID && version == DefaultPolicyVersion {
		return DefaultPolicy(), true
	}
	return eval.VerdictPolicy{}, false
}

// ComposePolicy returns base with the critical matchers added: the policy
// stamped at submit. Matchers are validated (exactly one of caseId or
// prefix, non-empty), deduplicated and sorted, so the same request always
// yields the same document and hence the same digest. A bad matcher is
// ErrInvalid naming it.
func ComposePolicy(base eval.VerdictPolicy, critical []eval.CaseMatcher) (eval.VerdictPolicy, error) {
	if base.ID == "" || base.Version == "" {
		return eval.VerdictPolicy{}, derrors.Invalidf("verdict policy: id and version are required, got %q@%q", base.ID, base.Version)
	}
	out := base
	out.Metrics = slices.Clone(base.Metrics)
	all := make([]eval.CaseMatcher, 0, len(base.CriticalCases)+len(critical))
	for i, m := range base.CriticalCases {
		if err := checkMatcher(fmt.Sprintf("verdict policy %s@%s: criticalCases[%d]", base.ID, base.Version, i), m); err != nil {
			return eval.VerdictPolicy{}, err
		}
		all = append(all, m)
	}
	for i, m := range critical {
		if err := checkMatcher(fmt.Sprintf("criticalCases[%d]", i), m); err != nil {
			return eval.VerdictPolicy{}, err
		}
		all = append(all, m)
	}
	slices.SortFunc(all, func(a, b eval.CaseMatcher) int {
		return cmp.Or(cmp.Compare(a.CaseID, b.CaseID), cmp.Compare(a.Prefix, b.Prefix))
	})
	out.CriticalCases = slices.Compact(all)
	if len(out.CriticalCases) == 0 {
		out.CriticalCases = nil
	}
	return out, nil
}

// checkMatcher refuses a matcher that is not exactly one of {caseId} or
// {prefix}: an empty one would match nothing (or, as a prefix, everything).
func checkMatcher(at string, m eval.CaseMatcher) error {
	if (m.CaseID == "") == (m.Prefix == "") {
		return derrors.Invalidf("%s: the case matcher {caseId: %q, prefix: %q} must have exactly one of caseId or prefix, non-empty", at, m.CaseID, m.Prefix)
	}
	return nil
}

// CanonicalPolicy returns the canonical JSON of a policy: the document
// PolicyDigest hashes and a manifest's policy seal verifies against.
func CanonicalPolicy(p eval.VerdictPolicy) []byte { return policyCanonical(p) }

// policyCanonical is the canonical JSON of a policy. A policy holds only
// strings, so encoding cannot fail.
func policyCanonical(p eval.VerdictPolicy) []byte {
	b, err := registry.CanonicalJSON(p)
	if err != nil {
		panic(fmt.Sprintf("scoring: canonical JSON of a verdict policy: %v", err))
	}
	return b
}

// PolicyDigest returns "sha256:<64 hex>" of the policy's canonical JSON.
func PolicyDigest(p eval.VerdictPolicy) string {
	return registry.Digest(policyCanonical(p))
}

// Stamp returns the {id, version, digest} a batch records of its policy.
func Stamp(p eval.VerdictPolicy) eval.PolicyStamp {
	return eval.PolicyStamp{ID: p.ID, Version: p.Version, Digest: PolicyDigest(p)}
}

// IsCritical reports whether the policy marks caseID critical: a matcher
// names it exactly or is a prefix of it.
func IsCritical(p eval.VerdictPolicy, caseID string) bool {
	for _, m := range p.CriticalCases {
		if (m.CaseID != "" && m.CaseID == caseID) || (m.Prefix != "" && strings.HasPrefix(caseID, m.Prefix)) {
			return true
		}
	}
	return false
}

// ResolvePolicy restores the policy a batch was stamped with (spec §2.8).
// It is resolved when the manifest embeds a document whose digest verifies
// the stamp, or the stamp names a known policy whose document still hashes
// to it; legacy_default when there is no stamp; unresolvable, with the
// reason, when a stamp exists but no document matching it can be produced.
// The digest algorithm is read from the stamp, so legacy 16-hex stamps
// resolve too. An unresolvable stamp still returns DefaultPolicy, so that a
// detail read can show verdicts, flagged by the resolution; comparisons
// must refuse it.
func ResolvePolicy(stamp *eval.PolicyStamp, m *eval.Manifest) (eval.VerdictPolicy, eval.PolicyResolution) {
	if stamp == nil {
		return DefaultPolicy(), eval.PolicyResolution{Status: PolicyLegacyDefault}
	}
	name := stamp.ID + "@" + stamp.Version
	unresolvable := func(reason string) (eval.VerdictPolicy, eval.PolicyResolution) {
		return DefaultPolicy(), eval.PolicyResolution{Status: PolicyUnresolvable, Reason: "policy " + name + ": " + reason}
	}
	if _, err := registry.VerifyDigest(stamp.Digest, nil); err != nil {
		return unresolvable(fmt.Sprintf("the stamped digest %q is malformed", stamp.Digest))
	}
	if m != nil && m.Policy != nil {
		if ok, _ := registry.VerifyDigest(stamp.Digest, policyCanonical(*m.Policy)); ok {
			return clonePolicy(*m.Policy), eval.PolicyResolution{Status: PolicyResolved}
		}
	}
	known, isKnown := KnownPolicy(stamp.ID, stamp.Version)
	if isKnown {
		if ok, _ := registry.VerifyDigest(stamp.Digest, policyCanonical(known)); ok {
			return known, eval.PolicyResolution{Status: PolicyResolved}
		}
	}
	switch {
	case m != nil && m.Policy != nil:
		return unresolvable("the embedded policy document does not hash to the stamp " + stamp.Digest)
	case isKnown && m == nil:
		return unresolvable("no manifest, and the built-in document no longer hashes to the stamp " + stamp.Digest)
	case isKnown:
		return unresolvable("the manifest embeds no policy, and the built-in document no longer hashes to the stamp " + stamp.Digest)
	case m == nil:
		return unresolvable("no manifest embeds its document, and it is not a known policy")
	default:
		return unresolvable("the manifest embeds no policy document, and it is not a known policy")
	}
}

// clonePolicy copies p so a caller cannot alter the manifest through it.
func clonePolicy(p eval.VerdictPolicy) eval.VerdictPolicy {
	p.Metrics = slices.Clone(p.Metrics)
	p.CriticalCases = slices.Clone(p.CriticalCases)
	return p
}
