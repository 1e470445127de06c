package models

import (
	"context"

	"svc/auth"
	"svc/internal/domain/manifest"
	"svc/internal/domain/registry"
	"svc/internal/service/registries"
)

// JudgeResolver resolves a judge's closure (manifest.JudgeClosure) as who
// sees it now (manifest.LiveResolver): a model binding of who's workspace
// through s, a rubric or a delegated harness through reg; either may be
// nil, resolving nothing. The batch submit and verify-manifest resolve
// through it, the worker's re-score through the same LiveResolver.
func JudgeResolver(ctx context.Context, s *Service, reg *registries.Service, who auth.Principal) manifest.Resolver {
	var version func(string) (string, error)
	if s != nil {
		version = func(name string) (string, error) { return s.Version(ctx, who.Workspace, name) }
	}
	var resolve func(registry.Kind, string, string) (registry.Resolved, error)
	if reg != nil {
		resolve = func(kind registry.Kind, id, v string) (registry.Resolved, error) {
			return reg.Resolve(ctx, who, kind, id, v)
		}
	}
	return manifest.LiveResolver(version, resolve)
}
