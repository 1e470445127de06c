package manifest

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
	"svc/internal/domain/scoring"
)

// Facet statuses of a verification.
const (
	FacetMatch        = "match"        // the stamp verifies what the reference produces now
	FacetDrifted      = "drifted"      // the reference produces something else now
	FacetMissing      = "missing"      // the reference can no longer be found
	FacetUnverifiable = "unverifiable" // no usable stamp: absent, malformed, or of an unknown seal generation
)

// FacetResult is the verification of one facet of a manifest: "dataset",
// "case:<id>", "harness", "harness:model", "grading", "grading:<caseId>",
// "judge:<id>" or "policy". Stamped is the sealed digest, Current the
// sha256 digest of what the reference produces now ("" when missing).
type FacetResult struct {
	Facet   string `json:"facet"`
	Status  string `json:"status"`
	Stamped string `json:"stamped,omitempty"`
	Current string `json:"current,omitempty"`
	Detail  string `json:"detail,omitempty"`
}

// Verification is the result of Verify.
type Verification struct {
	// Verified is true when there is at least one facet and every facet
	// matches.
	Verified        bool          `json:"verified"`
	Facets          []FacetResult `json:"facets"`
	IdentityVersion int           `json:"identityVersion"`
}

// Verify compares a sealed manifest with what the same references produce
// now (current, resolved by the caller as at submit: the same dataset
// version, case ids, harness, judges, graders and policy).
//
// Each stamp's algorithm is read from the stamp (registry.VerifyDigest), so
// a legacy bare 16-hex stamp still verifies. A facet is missing when its
// entity cannot be found now: a stamped case absent from current.Cases (it
// is no longer in the dataset), a stamped judge absent from current.Judges
// (it no longer resolves), a zero dataset or harness spec, a zero policy.
// A facet present now that the manifest does not seal (an older manifest,
// or a case or judge not in the batch) is unverifiable, as is a malformed
// stamp. A facet neither sealed nor present (no dataset for _adhoc) is not
// listed. Manifests of identity version 0 (stamped before the field
// existed) are read as version 1; a newer version than this package knows
// leaves every facet unverifiable rather than guessing its meaning.
func Verify(m eval.Manifest, current Input) Verification {
	v := Verification{IdentityVersion: m.IdentityVersion}
	c := checker{future: m.IdentityVersion > IdentityVersion, identity: m.IdentityVersion}

	c.check("dataset", m.Dataset, specDoc(current.Dataset), "the dataset version can no longer be found")

	byID := make(map[string]registry.EvalCase, len(current.Cases))
	var currentIDs []string
	for _, cs := range current.Cases {
		if _, dup := byID[cs.ID]; !dup {
			byID[cs.ID] = cs
			currentIDs = append(currentIDs, cs.ID)
		}
	}
	caseIDs := union(m.Cases, currentIDs)
	for _, id := range caseIDs {
		doc := currentDoc{}
		if cs, ok := byID[id]; ok {
			doc = caseDoc(cs)
		}
		c.check("case:"+id, m.Cases[id], doc, "the case is no longer in the dataset")
	}

	c.check("harness", m.Harness, specDoc(current.Harness), "the harness version can no longer be found")
	if r, ok := c.result("harness:model", m.HarnessModel, currentDoc{doc: harnessModelDoc(current.Harness, current.HarnessModel)}, "the harness version can no longer be found"); ok {
		if hs := current.Harness.Harness(); r.Status == FacetDrifted && hs != nil && hs.Model.Binding() != "" {
			now := current.HarnessModel
			if now == "" {
				now = Unresolved
			}
			r.Detail = fmt.Sprintf("the harness's model binding %q resolves to %s now", hs.Model.Binding(), now)
		}
		c.add(r)
	}

	plan := currentDoc{}
	plan.doc, plan.err = planDoc(current, c.identity)
	if r, ok := c.result("grading", m.GradingPlan, plan, ""); ok {
		if r.Status == FacetDrifted {
			switch {
			case m.GradingCases != nil && current.Graders != nil:
				r.Detail = "the plan was each case's own graders and is now a batch-level override"
			case m.GradingCases == nil && current.Graders == nil:
				r.Detail = "the plan was a batch-level override and is now each case's own graders"
			case m.GradingCases != nil:
				r.Detail = "some case's graders differ or the case is gone; see the grading:<caseId> facets"
			default:
				r.Detail = "the batch-level graders differ"
			}
		}
		c.add(r)
	}
	if m.GradingCases != nil {
		for _, id := range union(m.GradingCases, currentIDs) {
			doc := currentDoc{}
			if cs, ok := byID[id]; ok {
				doc.doc, doc.err = caseGradingDoc(cs, c.identity)
			}
			c.check("grading:"+id, m.GradingCases[id], doc, "the case is no longer in the dataset")
		}
	}

	judges := make(map[string]Judge, len(current.Judges))
	var judgeIDs []string
	for _, j := range current.Judges {
		id := j.Spec.ID()
		if _, dup := judges[id]; !dup && j.Spec.Canonical() != nil {
			judges[id] = j
			judgeIDs = append(judgeIDs, id)
		}
	}
	stamped := make(map[string]eval.SealedJudge, len(m.Judges))
	for _, sj := range m.Judges {
		stamped[sj.ID] = sj
	}
	for _, id := range union(stamped, judgeIDs) {
		sj, wasSealed := stamped[id]
		doc := currentDoc{}
		j, ok := judges[id]
		if ok {
			if c.identity < 2 {
				// Sealed before closures were resolved: compare with
				// the closure that generation computed.
				j.Closure = legacyClosure(j.Spec.Judge())
			}
			doc.doc, doc.err = judgeDoc(j)
		}
		r, listed := c.result("judge:"+id, sj.Digest, doc, fmt.Sprintf("judge %s@%s can no longer be resolved", id, sj.Version))
		if !listed {
			continue
		}
		if r.Status == FacetDrifted && wasSealed && ok {
			r.Detail = judgeDrift(sj, j)
		}
		c.add(r)
	}

	policy := currentDoc{}
	if current.Policy.ID != "" {
		policy.doc = scoring.CanonicalPolicy(current.Policy)
	}
	if r, ok := c.result("policy", m.PolicyDigest, policy, "no verdict policy is given now"); ok {
		if r.Status == FacetDrifted && m.Policy != nil {
			r.Detail = policyDrift(*m.Policy, current.Policy)
		}
		c.add(r)
	}

	v.Facets = c.facets
	v.Verified = len(c.facets) > 0
	for _, f := range c.facets {
		if f.Status != FacetMatch {
			v.Verified = false
		}
	}
	return v
}

// currentDoc is the canonical document a reference produces now: nil when the
// entity is absent, or the error of encoding it.
type currentDoc struct {
	doc []byte
	err error
}

func specDoc(s registry.Spec) currentDoc { return currentDoc{doc: s.Canonical()} }

func caseDoc(c registry.EvalCase) currentDoc {
	doc, err := registry.CanonicalJSON(c)
	return currentDoc{doc: doc, err: err}
}

// checker collects facet results.
type checker struct {
	future   bool // the manifest is of a newer identity version than this package
	identity int
	facets   []FacetResult
}

func (c *checker) add(r FacetResult) { c.facets = append(c.facets, r) }

// check compares one facet and records it when it applies.
func (c *checker) check(facet, stamp string, now currentDoc, missing string) {
	if r, ok := c.result(facet, stamp, now, missing); ok {
		c.add(r)
	}
}

// result compares one facet's stamp with what its reference produces now;
// ok is false when the facet is neither sealed nor present now.
func (c *checker) result(facet, stamp string, now currentDoc, missing string) (FacetResult, bool) {
	present := now.doc != nil || now.err != nil
	if stamp == "" && !present {
		return FacetResult{}, false
	}
	r := FacetResult{Facet: facet, Stamped: stamp}
	if now.doc != nil {
		r.Current = registry.Digest(now.doc)
	}
	switch {
	case c.future:
		r.Status, r.Detail = FacetUnverifiable, fmt.Sprintf("identity version %d is newer than this service reads (%d)", c.identity, IdentityVersion)
	case stamp == "":
		r.Status, r.Detail = FacetUnverifiable, "the manifest does not seal this facet"
	case now.err != nil:
		r.Status, r.Detail = FacetUnverifiable, "cannot compute the current document: "+now.err.Error()
	case now.doc == nil:
		r.Status, r.Detail = FacetMissing, missing
	default:
		ok, err := registry.VerifyDigest(stamp, now.doc)
		switch {
		case err != nil:
			r.Status, r.Detail = FacetUnverifiable, "malformed stamp: "+err.Error()
		case ok:
			r.Status = FacetMatch
		default:
			r.Status = FacetDrifted
		}
	}
	return r, true
}

// union returns the keys of sealed, sorted, then the ids of current not
// among them, in their order: sealed facets first, extra ones after.
func union[V any](sealed map[string]V, current []string) []string {
	keys := slices.Sorted(maps.Keys(sealed))
	for _, id := range current {
		if _, ok := sealed[id]; !ok {
			keys = append(keys, id)
		}
	}
	return keys
}

// judgeDrift says what changed in a judge: its version, its closure
// entries, or else its spec.
func judgeDrift(sj eval.SealedJudge, j Judge) string {
	var parts []string
	if v := j.Spec.Version(); v != sj.Version {
		parts = append(parts, fmt.Sprintf("version %s -> %s", sj.Version, v))
	}
	keys := union(sj.Closure, slices.Sorted(maps.Keys(j.Closure)))
	for _, k := range keys {
		was, had := sj.Closure[k]
		now, has := j.Closure[k]
		switch {
		case had && !has:
			parts = append(parts, fmt.Sprintf("closure %s: %s -> (none)", k, was))
		case !had && has:
			parts = append(parts, fmt.Sprintf("closure %s: (none) -> %s", k, now))
		case was != now:
			parts = append(parts, fmt.Sprintf("closure %s: %s -> %s", k, was, now))
		}
	}
	if len(parts) == 0 {
		return "the judge spec differs"
	}
	return strings.Join(parts, "; ")
}

// policyDrift says what changed in a policy.
func policyDrift(was, now eval.VerdictPolicy) string {
	var parts []string
	if was.ID != now.ID || was.Version != now.Version {
		parts = append(parts, fmt.Sprintf("policy %s@%s -> %s@%s", was.ID, was.Version, now.ID, now.Version))
	}
	if !slices.Equal(was.Metrics, now.Metrics) {
		parts = append(parts, "metrics differ")
	}
	if !slices.Equal(was.CriticalCases, now.CriticalCases) {
		parts = append(parts, "critical cases differ")
	}
	if len(parts) == 0 {
		return "the policy document differs"
	}
	return strings.Join(parts, "; ")
}
