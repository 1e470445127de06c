// Package manifest seals what a batch was made of (spec §2.8) and checks a
// sealed manifest against what the same references produce now. A seal is
// a set of content digests, "sha256:<64 hex>" of canonical JSON, one per
// facet: the dataset version, each case bundle, the harness spec and its
// model closure, the grading plan, each judge with its closure, and the
// composed verdict policy. It is pure: no I/O; the caller resolves the
// references and passes the clock.
package manifest

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"svc/internal/domain/eval"
	"svc/internal/domain/graders"
	"svc/internal/domain/registry"
	"svc/internal/domain/scoring"
	"svc/internal/platform/derrors"
)

// IdentityVersion is the seal generation this package writes. A new way of
// computing any digest is a new number; an old number keeps its meaning.
// Version 3 seals the answer grader a case without graders is graded with
// when it has an expected answer (caseGradingDoc); version 2 seals a
// judge's resolved closure (JudgeClosure); version 1 sealed the names only
// (legacyClosure).
const IdentityVersion = 3

// Unresolved is the closure value of a dependency that could not be
// resolved at seal time.
const Unresolved = "unresolved"

// Judge is a resolved judge with its closure: what it depends on (model
// binding, rubric, delegated agent), each "id@version" or "unresolved".
type Judge struct {
	Spec    registry.Spec
	Closure map[string]string
}

// Input is what a batch resolved its references to.
type Input struct {
	// Dataset is the resolved dataset version; zero for _adhoc and _traces.
	Dataset registry.Spec
	// Cases are the selected cases, resolved.
	Cases []registry.EvalCase
	// Harness is the resolved harness spec; zero for _traces.
	Harness registry.Spec
	// Graders is the batch-level graders override; nil means each case's
	// own graders, sealed per case.
	Graders []registry.Grader
	Judges  []Judge
	// Policy is the composed verdict policy (scoring.ComposePolicy).
	Policy  eval.VerdictPolicy
	Runtime string
	// HarnessModel is the harness's model closure when it calls a model
	// binding (model {ref}): "name@version" of the binding as resolved
	// now, or "" (sealed as unresolved). Ignored for a harness whose model
	// is a label or absent.
	HarnessModel string
}

// Seal computes the manifest of in, sealed at now. Duplicate case or judge
// ids, a spec of the wrong kind, a zero judge spec and a policy without id
// or version are ErrInvalid.
func Seal(in Input, now time.Time) (m eval.Manifest, err error) {
	defer derrors.Wrap(&err, "manifest.Seal")
	if err := checkKind("dataset", in.Dataset, registry.Dataset); err != nil {
		return eval.Manifest{}, err
	}
	if err := checkKind("harness", in.Harness, registry.Harness); err != nil {
		return eval.Manifest{}, err
	}
	if in.Policy.ID == "" || in.Policy.Version == "" {
		return eval.Manifest{}, derrors.Invalidf("the verdict policy needs an id and a version")
	}
	m = eval.Manifest{
		IdentityVersion: IdentityVersion,
		Cases:           make(map[string]string, len(in.Cases)),
		Dataset:         in.Dataset.Digest(),
		Harness:         in.Harness.Digest(),
		Runtime:         in.Runtime,
		SealedAt:        now.UTC(),
	}
	for _, c := range in.Cases {
		if _, dup := m.Cases[c.ID]; dup {
			return eval.Manifest{}, derrors.Invalidf("case %q is selected twice", c.ID)
		}
		doc, err := registry.CanonicalJSON(c)
		if err != nil {
			return eval.Manifest{}, fmt.Errorf("case %q: %w", c.ID, err)
		}
		m.Cases[c.ID] = registry.Digest(doc)
	}
	if doc := harnessModelDoc(in.Harness, in.HarnessModel); doc != nil {
		m.HarnessModel = registry.Digest(doc)
	}
	plan, err := planDoc(in, IdentityVersion)
	if err != nil {
		return eval.Manifest{}, err
	}
	m.GradingPlan = registry.Digest(plan)
	if in.Graders == nil {
		m.GradingCases = make(map[string]string, len(in.Cases))
		for _, c := range in.Cases {
			doc, err := caseGradingDoc(c, IdentityVersion)
			if err != nil {
				return eval.Manifest{}, fmt.Errorf("case %q graders: %w", c.ID, err)
			}
			m.GradingCases[c.ID] = registry.Digest(doc)
		}
	}
	seen := make(map[string]bool, len(in.Judges))
	for _, j := range in.Judges {
		sj, err := SealJudge(j)
		if err != nil {
			return eval.Manifest{}, err
		}
		if seen[sj.ID] {
			return eval.Manifest{}, derrors.Invalidf("judge %q is selected twice", sj.ID)
		}
		seen[sj.ID] = true
		m.Judges = append(m.Judges, sj)
	}
	policy := in.Policy
	policy.Metrics = slices.Clone(policy.Metrics)
	policy.CriticalCases = slices.Clone(policy.CriticalCases)
	m.Policy = &policy
	m.PolicyDigest = scoring.PolicyDigest(policy)
	return m, nil
}

// SealJudge seals one judge: its id, version and the digest of its spec
// together with its closure, so a scoring revision seals judges exactly as
// a manifest does. A zero spec or one of another kind is ErrInvalid.
func SealJudge(j Judge) (eval.SealedJudge, error) {
	if j.Spec.Canonical() == nil {
		return eval.SealedJudge{}, derrors.Invalidf("a judge without a resolved spec")
	}
	if err := checkKind("judge", j.Spec, registry.Judge); err != nil {
		return eval.SealedJudge{}, err
	}
	doc, err := judgeDoc(j)
	if err != nil {
		return eval.SealedJudge{}, fmt.Errorf("judge %s: %w", j.Spec.Ref(), err)
	}
	return eval.SealedJudge{
		ID:      j.Spec.ID(),
		Version: j.Spec.Version(),
		Digest:  registry.Digest(doc),
		Closure: maps.Clone(j.Closure),
	}, nil
}

// checkKind refuses a non-zero spec of another kind than want.
func checkKind(what string, s registry.Spec, want registry.Kind) error {
	if s.Canonical() != nil && s.Kind() != want {
		return derrors.Invalidf("the %s is a %s spec (%s)", what, s.Kind(), s.Ref())
	}
	return nil
}

// harnessModelDoc is the harness's model closure; nil when there is no
// harness. A harness calling a model binding (model {ref}) seals
// {"ref": name, "binding": closure}, closure being the binding's
// "name@version" as resolved at seal time or "unresolved"; any other
// harness seals {"model": label}, the label it declares or "unresolved"
// when it declares none (an unresolved template instance, or a harness
// that picks its own), as every earlier manifest did.
func harnessModelDoc(h registry.Spec, closure string) []byte {
	hs := h.Harness()
	if h.Canonical() == nil || hs == nil {
		return nil
	}
	if ref := hs.Model.Binding(); ref != "" {
		if closure == "" {
			closure = Unresolved
		}
		return mustCanonical(map[string]string{"ref": ref, "binding": closure})
	}
	model := hs.Model.Label
	if model == "" {
		model = Unresolved
	}
	return mustCanonical(map[string]string{"model": model})
}

// gradersDoc is the canonical JSON of a grader list; no graders is [], not
// null, so that a case with none still has a document.
func gradersDoc(gs []registry.Grader) ([]byte, error) {
	if gs == nil {
		gs = []registry.Grader{}
	}
	return registry.CanonicalJSON(gs)
}

// caseGradingDoc is what grades case c, as seal generation identity
// seals it: the canonical JSON of its graders ([] for none), except that
// from version 3 a case without graders whose expected answer is compared
// by a default answer grader (graders.AnswerDefault) seals
// {"answerDefault": grader}. An object cannot stand for a declared list,
// and a case without graders or expected seals [] in every generation,
// meaning the measurement defaults of where it runs, which never changed.
func caseGradingDoc(c registry.EvalCase, identity int) ([]byte, error) {
	if identity >= 3 && len(c.Graders) == 0 {
		if g, ok := graders.AnswerDefault(c); ok {
			return registry.CanonicalJSON(map[string]registry.Grader{"answerDefault": g})
		}
	}
	return gradersDoc(c.Graders)
}

// planDoc is the grading plan as seal generation identity seals it:
// {"graders": [...]} for a batch-level override, else {"cases": {caseId:
// digest of caseGradingDoc}}. The two shapes differ so that neither can
// stand for the other.
func planDoc(in Input, identity int) ([]byte, error) {
	if in.Graders != nil {
		gs, err := gradersDoc(in.Graders)
		if err != nil {
			return nil, fmt.Errorf("batch graders: %w", err)
		}
		return registry.CanonicalJSON(map[string]json.RawMessage{"graders": gs})
	}
	perCase := make(map[string]string, len(in.Cases))
	for _, c := range in.Cases {
		if _, dup := perCase[c.ID]; dup {
			continue // the first of a duplicated id, as everywhere here
		}
		doc, err := caseGradingDoc(c, identity)
		if err != nil {
			return nil, fmt.Errorf("case %q graders: %w", c.ID, err)
		}
		perCase[c.ID] = registry.Digest(doc)
	}
	return registry.CanonicalJSON(map[string]any{"cases": perCase})
}

// judgeDoc is {"judge": "id@version", "spec": ..., "closure": {...}}.
func judgeDoc(j Judge) ([]byte, error) {
	closure := j.Closure
	if closure == nil {
		closure = map[string]string{}
	}
	return registry.CanonicalJSON(map[string]any{
		"judge":   j.Spec.Ref().String(),
		"spec":    json.RawMessage(j.Spec.Canonical()),
		"closure": closure,
	})
}

// mustCanonical encodes a value of strings only, which cannot fail.
func mustCanonical(v any) []byte {
	b, err := registry.CanonicalJSON(v)
	if err != nil {
		panic(fmt.Sprintf("manifest: canonical JSON: %v", err))
	}
	return b
}
