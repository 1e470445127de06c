package models

import (
	"context"

	"svc/auth"
	"svc/internal/domain/manifest"
	"svc/internal/domain/registry"
	"svc/internal/service/registries"
)

// JudgeResolver resolves a judge's closure (manifest.JudgeClosure) as who
// sees it now: a model binding of who's workspace to "name@version", a
// rubric or a delegated harness to "id@version" (latest resolved). A
// reference that cannot be resolved, for whatever reason, is "" and seals
// as unresolved. The batch submit, a re-score's revision and
// verify-manifest all resolve through it, so one judge seals alike in all.
func JudgeResolver(ctx context.Context, s *Service, reg *registries.Service, who auth.Principal) manifest.Resolver {
	ref := func(kind registry.Kind) func(registry.Ref) string {
		return func(r registry.Ref) string {
			if reg == nil || r.ID == "" || r.Version == "" {
				return ""
			}
			res, err := reg.Resolve(ctx, who, kind, r.ID, r.Version)
			if err != nil {
				return ""
			}
			return res.Ref().String()
		}
	}
	return manifest.Resolver{
		Model: func(name string) string {
			if s == nil || name == "" {
				return ""
			}
			v, err := s.Version(ctx, who.Workspace, name)
			if err != nil {
				return ""
			}
			return name + "@" + v
		},
		Rubric: ref(registry.Rubric),
		Agent:  ref(registry.Harness),
	}
}
