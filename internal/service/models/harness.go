package models

import (
	"context"
	"errors"
	"fmt"

	"svc/internal/domain/modelproxy"
	"svc/internal/domain/registry"
	"svc/internal/platform/derrors"
	"svc/internal/platform/netguard"
)

// A harness that declares model {ref: <binding>} calls that binding
// through the model proxy (POST /model-proxy/v1/chat/completions) with a
// token minted for one attempt of one run: the key never reaches the job.
// Where the key can be had decides whether the job may start without it
// (spec §7): a managed target (the deployment's local runtime, a local,
// nomad or k8s runtime) refuses the submit with 400 when the binding or
// its key cannot be resolved; a self-hosted runner target ships the job
// without a token, and the run records that (EventHarnessModelAccess).

// Environment of a harness job that calls a model binding, and the event
// recording what it was given: the domain's (package modelproxy), which
// the worker sets.
const (
	EnvHarnessModelBaseURL  = modelproxy.EnvBaseURL
	EnvHarnessModel         = modelproxy.EnvModel
	SecretModelToken        = modelproxy.SecretToken
	EventHarnessModelAccess = modelproxy.EventHarnessModelAccess
)

// SelfHosted reports whether runtime rt is a self-hosted target (a runner
// runtime), where a job ships without a model key it cannot be given; nil
// is the deployment's own local runtime, a managed target.
func SelfHosted(rt *registry.RuntimeSpec) bool {
	return rt != nil && rt.Kind == registry.RuntimeRunner
}

// Check says whether the binding name of workspace and its key can be
// resolved, without opening the key when the service has no Sealer (the
// API's check at submit): "" when they can, else the missing reason (what
// to set). Errors are infrastructure failures.
func (s *Service) Check(ctx context.Context, workspace, name string) (missing string, err error) {
	if s.Sealer != nil {
		_, missing, err := s.Resolve(ctx, workspace, name)
		return missing, err
	}
	b, err := s.Get(ctx, workspace, name)
	if errors.Is(err, derrors.ErrNotFound) {
		return fmt.Sprintf("the workspace declares no model %q; an admin declares it with PUT /workspace/models/%s", name, name), nil
	}
	if err != nil {
		return "", err
	}
	sec, err := s.Store.GetSecret(ctx, workspace, b.KeySecret)
	if errors.Is(err, derrors.ErrNotFound) {
		return fmt.Sprintf("the key of model %q, secret %q, is not in the workspace secret store; PUT /secrets/%s first", name, b.KeySecret, b.KeySecret), nil
	}
	if err != nil {
		return "", err
	}
	if err := netguard.CheckBound(sec.AllowedHosts, b.BaseURL); err != nil {
		var ub *netguard.UnboundError
		if errors.As(err, &ub) {
			ub.Field, ub.Secret = "keySecret", b.KeySecret
		}
		return fmt.Sprintf("model %q: %v", name, err), nil
	}
	return "", nil
}

// CheckHarness is the submit's model-key rule (spec §7) for harness
// (resolved as ref) on runtime rt, named runtime ("" and nil: the
// deployment's local runtime). A harness that calls no binding, or a
// self-hosted target, passes; on a managed target a binding or key that
// cannot be resolved is ErrInvalid naming the harness, the binding and
// what to set.
func (s *Service) CheckHarness(ctx context.Context, workspace string, ref registry.Ref, hc *registry.HarnessConfig, runtime string, rt *registry.RuntimeSpec) error {
	if hc == nil || hc.Model.Binding() == "" || SelfHosted(rt) {
		return nil
	}
	name := hc.Model.Binding()
	missing, err := s.Check(ctx, workspace, name)
	if err != nil || missing == "" {
		return err
	}
	target := "the deployment's local runtime"
	if runtime != "" {
		kind := "local"
		if rt != nil {
			kind = string(rt.Kind)
		}
		target = fmt.Sprintf("%s runtime %q", kind, runtime)
	}
	return derrors.Invalidf("harness %s calls model binding %q (model.ref), and on %s, a managed target, a job cannot start without its key: %s; or run it on a self-hosted runner runtime, whose jobs ship without a model key",
		ref, name, target, missing)
}

// HarnessClosure is the model closure a manifest seals for a harness
// that calls a binding: "name@version" of the binding of workspace as it
// is now, or "" (unresolved) when the harness calls none or the binding
// is not declared.
func (s *Service) HarnessClosure(ctx context.Context, workspace string, hc *registry.HarnessConfig) string {
	if s == nil || hc == nil || hc.Model.Binding() == "" {
		return ""
	}
	name := hc.Model.Binding()
	v, err := s.Version(ctx, workspace, name)
	if err != nil {
		return ""
	}
	return name + "@" + v
}
