package manifest

import "svc/internal/domain/registry"

// The keys of a judge's closure.
const (
	// ClosureModel is the model binding a judge calls: "name@version" of
	// the workspace's binding, "none" for a code judge without a model.
	ClosureModel = "model"
	// ClosureRubric is a registered rubric a judge references.
	ClosureRubric = "rubric"
	// ClosureAgent is the harness a legacy harness judge delegates to.
	ClosureAgent = "agent"
	// ClosureRuntime is the runtime a code judge names.
	ClosureRuntime = "runtime"
)

// Resolver says what a judge's references resolve to now. Each function
// returns "id@version", or "" when the reference cannot be resolved (it
// is sealed as Unresolved). A nil function resolves nothing.
type Resolver struct {
	// Model resolves a model binding by name.
	Model func(name string) string
	// Rubric resolves a rubric reference (version may be latest).
	Rubric func(ref registry.Ref) string
	// Agent resolves the harness a harness judge delegates to.
	Agent func(ref registry.Ref) string
}

// JudgeClosure is what judge j depends on beyond its spec (spec §2.8): its
// model binding, its rubric reference's resolution and its delegated
// agent, each "id@version" or "unresolved". The batch's manifest, a
// re-score's revision and verify-manifest all compute it here, so the same
// judge over the same references has the same seal everywhere.
func JudgeClosure(j *registry.JudgeSpec, r Resolver) map[string]string {
	c := map[string]string{}
	if j == nil {
		return c
	}
	resolved := func(v string) string {
		if v == "" {
			return Unresolved
		}
		return v
	}
	model := func(name string) string {
		if r.Model == nil {
			return Unresolved
		}
		return resolved(r.Model(name))
	}
	rubric := func(in *registry.RubricInput) {
		if in == nil || in.Ref == nil {
			return // an inline rubric is part of the spec
		}
		if r.Rubric == nil {
			c[ClosureRubric] = Unresolved
			return
		}
		c[ClosureRubric] = resolved(r.Rubric(*in.Ref))
	}
	switch {
	case j.Code != nil:
		c[ClosureModel] = "none"
		if j.Code.Model != nil && j.Code.Model.Ref != "" {
			c[ClosureModel] = model(j.Code.Model.Ref)
		}
		if j.Code.Runtime != "" {
			c[ClosureRuntime] = j.Code.Runtime
		}
	case j.Model != nil:
		c[ClosureModel] = model(j.Model.Model)
		rubric(j.Model.Rubric)
	case j.Harness != nil:
		c[ClosureAgent] = Unresolved
		if r.Agent != nil {
			c[ClosureAgent] = resolved(r.Agent(j.Harness.Harness))
		}
		rubric(j.Harness.Rubric)
	}
	return c
}

// legacyClosure is the closure identity version 1 sealed: a code judge's
// model name (or "none") and runtime, "unresolved" for any legacy judge's
// model. Verify reads version-1 manifests with it.
func legacyClosure(j *registry.JudgeSpec) map[string]string {
	c := map[string]string{}
	if j == nil {
		return c
	}
	if j.Code != nil {
		c[ClosureModel] = "none"
		if j.Code.Model != nil {
			c[ClosureModel] = j.Code.Model.Ref
		}
		if j.Code.Runtime != "" {
			c[ClosureRuntime] = j.Code.Runtime
		}
	}
	if j.Model != nil || j.Harness != nil {
		c[ClosureModel] = Unresolved
	}
	return c
}
