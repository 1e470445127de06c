package manifest

import "svc/internal/domain/registry"

// LiveResolver resolves a judge's closure (JudgeClosure) as one viewer
// sees it now, from two lookups: modelVersion, the live version of a
// model binding of the viewer's workspace, and resolve, a registry
// reference (version may be `latest`) as the viewer resolves it. A model
// resolves to "name@version", a rubric or a delegated harness to
// "id@version"; a nil lookup, one that fails, or a reference without id or
// version resolves to "" and seals as unresolved. The batch submit, a
// re-score's revision (on the worker) and verify-manifest all resolve
// through it, so one judge seals alike in all.
func LiveResolver(modelVersion func(name string) (string, error), resolve func(kind registry.Kind, id, version string) (registry.Resolved, error)) Resolver {
	ref := func(kind registry.Kind) func(registry.Ref) string {
		return func(r registry.Ref) string {
			if resolve == nil || r.ID == "" || r.Version == "" {
				return ""
			}
			res, err := resolve(kind, r.ID, r.Version)
			if err != nil {
				return ""
			}
			return res.Ref().String()
		}
	}
	return Resolver{
		Model: func(name string) string {
			if modelVersion == nil || name == "" {
				return ""
			}
			v, err := modelVersion(name)
			if err != nil {
				return ""
			}
			return name + "@" + v
		},
		Rubric: ref(registry.Rubric),
		Agent:  ref(registry.Harness),
	}
}
