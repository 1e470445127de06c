package gate

import (
	"encoding/hex"
	"maps"
	"slices"
	"strings"

	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
)

// The axes of an experiment, in the order Diff reads them.
const (
	AxisDataset = "dataset"
	AxisHarness = "harness" // the treatment: what a comparison is meant to vary
	AxisGrading = "grading"
	AxisJudges  = "judges"
	AxisPolicy  = "policy"
	AxisRuntime = "runtime"
)

// Axes returns the experiment axes in reading order.
func Axes() []string {
	return []string{AxisDataset, AxisHarness, AxisGrading, AxisJudges, AxisPolicy, AxisRuntime}
}

// Readings of an axis: held, treatment (the harness varied), unverified,
// or a named confound.
const (
	Held       = "held"
	Treatment  = "treatment"
	Unverified = "unverified"

	ConfoundDifferentDataset = "different_dataset" // the dataset ids differ: never comparable
	ConfoundDatasetChanged   = "dataset_changed"   // same dataset, other content (version or cases)
	ConfoundGradingChanged   = "grading_changed"
	ConfoundJudgesChanged    = "judges_changed"
	ConfoundPolicyChanged    = "policy_changed"
	ConfoundRuntimeChanged   = "runtime_changed"
)

// isConfound reports whether an axis reading names a confound.
func isConfound(v string) bool { return v != Held && v != Treatment && v != Unverified }

// digestCmp is the result of comparing two stamps.
type digestCmp int

const (
	digestUnknown digestCmp = iota // a stamp is absent, unresolved or malformed
	digestEqual
	digestDiffer
)

// compareDigest compares two stamps of possibly different generations: a
// legacy bare 16-hex stamp is the first 16 hex digits of the sha256, so it
// compares with a full one by prefix.
func compareDigest(a, b string) digestCmp {
	ha, oka := digestHex(a)
	hb, okb := digestHex(b)
	if !oka || !okb {
		return digestUnknown
	}
	n := min(len(ha), len(hb))
	if ha[:n] == hb[:n] {
		return digestEqual
	}
	return digestDiffer
}

// digestHex returns the lower-case hex of a stamp, or false when it is not
// a sha256 or legacy stamp.
func digestHex(s string) (string, bool) {
	h, full := strings.CutPrefix(s, registry.DigestPrefix)
	if (full && len(h) != 64) || (!full && len(h) != 16) {
		return "", false
	}
	if _, err := hex.DecodeString(h); err != nil {
		return "", false
	}
	return strings.ToLower(h), true
}

// experiment reads every axis from the two scorecards' manifests.
func experiment(b, c *side) map[string]string {
	return map[string]string{
		AxisDataset: datasetAxis(b, c),
		AxisHarness: harnessAxis(b.sc, c.sc),
		AxisGrading: gradingAxis(b.sc, c.sc),
		AxisJudges:  judgesAxis(b.sc, c.sc),
		AxisPolicy:  policyAxis(b, c),
		AxisRuntime: runtimeAxis(b.sc, c.sc),
	}
}

// datasetAxis compares the dataset: other ids are different datasets; the
// dataset version digest decides, else the versions and the digests of the
// cases decided on both sides.
func datasetAxis(b, c *side) string {
	if b.sc.Dataset.ID != c.sc.Dataset.ID {
		return ConfoundDifferentDataset
	}
	bm, cm := b.sc.Manifest, c.sc.Manifest
	if bm != nil && cm != nil {
		switch compareDigest(bm.Dataset, cm.Dataset) {
		case digestEqual:
			return Held
		case digestDiffer:
			return ConfoundDatasetChanged
		}
	}
	if b.sc.Dataset.Version != c.sc.Dataset.Version {
		return ConfoundDatasetChanged
	}
	// No dataset digest (_adhoc, _traces, an old seal): the cases decide.
	if bm == nil || cm == nil {
		return Unverified
	}
	return combine(func(yield func(digestCmp) bool) {
		for id := range b.cases {
			if _, ok := c.cases[id]; ok && !yield(compareDigest(bm.Cases[id], cm.Cases[id])) {
				return
			}
		}
	}, ConfoundDatasetChanged)
}

// combine folds digest comparisons: any difference is the confound, then
// any unknown is unverified; all equal is held, and none at all unverified.
func combine(cmps func(yield func(digestCmp) bool), confound string) string {
	seen, unknown := false, false
	for r := range cmps {
		switch r {
		case digestDiffer:
			return confound
		case digestUnknown:
			unknown = true
		}
		seen = true
	}
	if !seen || unknown {
		return Unverified
	}
	return Held
}

// harnessAxis is held when the harness spec digests agree and treatment
// when they or the references differ. The harness model closure follows
// from the spec, so the spec digest covers it.
func harnessAxis(b, c *eval.Scorecard) string {
	if b.Manifest != nil && c.Manifest != nil {
		switch compareDigest(b.Manifest.Harness, c.Manifest.Harness) {
		case digestEqual:
			return Held
		case digestDiffer:
			return Treatment
		}
	}
	if b.Harness != c.Harness {
		return Treatment
	}
	return Unverified
}

// gradingAxis compares the grading plans: per case over the cases both
// sides seal, when both grade each case by its own graders; the plan
// digest when both override graders for the batch. One overriding and the
// other not, or one stripping grading (an experiment), is a change.
func gradingAxis(b, c *eval.Scorecard) string {
	if ungraded(b) != ungraded(c) {
		return ConfoundGradingChanged
	}
	bm, cm := b.Manifest, c.Manifest
	if bm == nil || cm == nil {
		return Unverified
	}
	switch {
	case bm.GradingCases != nil && cm.GradingCases != nil:
		return combine(func(yield func(digestCmp) bool) {
			for id, d := range bm.GradingCases {
				if e, ok := cm.GradingCases[id]; ok && !yield(compareDigest(d, e)) {
					return
				}
			}
		}, ConfoundGradingChanged)
	case bm.GradingCases == nil && cm.GradingCases == nil:
		return combine(func(yield func(digestCmp) bool) {
			yield(compareDigest(bm.GradingPlan, cm.GradingPlan))
		}, ConfoundGradingChanged)
	default:
		return ConfoundGradingChanged
	}
}

func ungraded(sc *eval.Scorecard) bool { return sc.Orchestration != nil && sc.Orchestration.Ungraded }

// judgeSeal is the seal of the judge whose verdicts a batch holds now.
type judgeSeal struct {
	version, digest string
	// rescored is set when a later scoring revision sealed it; such seals
	// are registry spec digests, not the manifest's closure digests, so
	// the two kinds cannot be compared byte for byte.
	rescored bool
}

// effectiveJudges returns the judges behind a batch's current scores: the
// manifest's, each replaced by its seal in later scoring revisions (a
// re-score replaces that judge's verdicts and keeps the others). known is
// false when the batch has neither a manifest nor a revision.
func effectiveJudges(sc *eval.Scorecard) (judges map[string]judgeSeal, known bool) {
	judges = map[string]judgeSeal{}
	if sc.Manifest != nil {
		for _, j := range sc.Manifest.Judges {
			judges[j.ID] = judgeSeal{version: j.Version, digest: j.Digest}
		}
	}
	for _, rev := range sc.Scoring {
		for _, j := range rev.Judges {
			if cur, ok := judges[j.ID]; ok && !cur.rescored && compareDigest(cur.digest, j.Digest) == digestEqual {
				continue // the initial revision re-seals the manifest's judges
			}
			judges[j.ID] = judgeSeal{version: j.Version, digest: j.Digest, rescored: true}
		}
	}
	return judges, sc.Manifest != nil || len(sc.Scoring) > 0
}

// judgesAxis compares the judges behind both sides' scores.
func judgesAxis(b, c *eval.Scorecard) string {
	bj, bk := effectiveJudges(b)
	cj, ck := effectiveJudges(c)
	if !bk || !ck {
		return Unverified
	}
	if !slices.Equal(slices.Sorted(maps.Keys(bj)), slices.Sorted(maps.Keys(cj))) {
		return ConfoundJudgesChanged
	}
	unknown := false
	for id, x := range bj {
		y := cj[id]
		if x.rescored != y.rescored {
			// Seals of two kinds: only the versions can tell a change.
			if exactVersion(x.version) && exactVersion(y.version) && x.version != y.version {
				return ConfoundJudgesChanged
			}
			unknown = true
			continue
		}
		switch compareDigest(x.digest, y.digest) {
		case digestDiffer:
			return ConfoundJudgesChanged
		case digestUnknown:
			unknown = true
		}
	}
	if unknown {
		return Unverified
	}
	return Held
}

// exactVersion reports whether a recorded version names one version.
func exactVersion(v string) bool { return v != "" && v != "latest" }

// policyAxis compares what decides verdicts: the policies' metrics as a
// set. Critical markers decide no verdict, so they are not compared.
func policyAxis(b, c *side) string {
	if b.unresolvable() || c.unresolvable() {
		return Unverified
	}
	norm := func(p eval.VerdictPolicy) []string {
		m := slices.Clone(p.Metrics)
		slices.Sort(m)
		return slices.Compact(m)
	}
	if slices.Equal(norm(b.policy), norm(c.policy)) {
		return Held
	}
	return ConfoundPolicyChanged
}

// runtimeAxis compares the sealed runtimes.
func runtimeAxis(b, c *eval.Scorecard) string {
	if b.Manifest == nil || c.Manifest == nil {
		return Unverified
	}
	if b.Manifest.Runtime == c.Manifest.Runtime {
		return Held
	}
	return ConfoundRuntimeChanged
}
