package registries

import (
	"context"
	"errors"
	"fmt"

	"svc/internal/domain/registry"
	"svc/internal/platform/derrors"
)

// NomadConnection is how the control plane reaches the cluster of the
// nomad runtime rt on behalf of workspace: the runtime's addr and
// namespace, the value of its authSecret (read from workspace's secret
// store) with the secret's allowedHosts, and the probe guard
// (SVC_PROBE_ALLOW) that every connection dials through. POST
// /runtimes/probe and the worker running a case on the runtime both build
// their connection here, so they see a runtime's address and credentials
// the same way.
//
// A secret whose allowedHosts do not include addr's host is an error
// wrapping derrors.ErrInvalid naming both, and nothing should be sent.
// missing, when not empty, says in the user's words why the authSecret
// cannot be used (not stored, or not openable with this SVC_SECRET_KEY):
// the caller decides whether that is an unreachable probe or a failed case.
func (s *Service) NomadConnection(ctx context.Context, workspace string, rt *registry.RuntimeSpec) (c NomadProbe, missing string, err error) {
	if rt == nil || rt.Kind != registry.RuntimeNomad {
		return NomadProbe{}, "", derrors.Invalidf("not a nomad runtime")
	}
	tok, hosts, miss, err := s.openSecret(ctx, workspace, "authSecret", rt.AuthSecret, rt.Addr)
	if err != nil || miss != "" {
		return NomadProbe{}, miss, err
	}
	return NomadProbe{Addr: rt.Addr, Namespace: rt.Namespace, Token: string(tok), AllowedHosts: hosts, Guard: s.probeGuard}, "", nil
}

// openSecret returns the value of the workspace secret name (given in
// the runtime's field) and its allowedHosts, once its binding allows
// target ("" when the target is only known from the value: a kubeconfig's
// server, checked by the caller before anything is sent). An empty name
// opens nothing. A secret that is not stored or cannot be opened is a
// missing reason, not an error.
func (s *Service) openSecret(ctx context.Context, workspace, field, name, target string) (value []byte, allowedHosts []string, missing string, err error) {
	if name == "" {
		return nil, nil, "", nil
	}
	sec, err := s.store.GetSecret(ctx, workspace, name)
	if errors.Is(err, derrors.ErrNotFound) {
		return nil, nil, fmt.Sprintf("%s %q is not in the workspace secret store; PUT /secrets/%s first", field, name, name), nil
	}
	if err != nil {
		return nil, nil, "", err
	}
	if target != "" {
		if err := checkBound(field, sec, target); err != nil {
			return nil, nil, "", err
		}
	}
	if s.sealer == nil {
		return nil, nil, fmt.Sprintf("%s %q cannot be opened: SVC_SECRET_KEY is not set", field, name), nil
	}
	v, err := s.sealer.Open(workspace, name, sec.Ciphertext)
	if err != nil {
		return nil, nil, fmt.Sprintf("%s %q cannot be opened with the current SVC_SECRET_KEY; store it again", field, name), nil
	}
	return v, sec.AllowedHosts, "", nil
}
