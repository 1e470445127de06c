package registries

import (
	"context"
	"errors"
	"unicode/utf8"

	"svc/auth"
	"svc/internal/domain/registry"
	"svc/internal/platform/derrors"
	"svc/internal/platform/netguard"
	"svc/internal/platform/secrets"
	"svc/store"
)

// MaxSecretBytes bounds a secret value: a kubeconfig or a token is far
// smaller.
const MaxSecretBytes = 64 << 10

// PutSecret seals value and stores it as the workspace secret name bound
// to allowedHosts (netguard's rules: a probe or driver sends it to no other
// host), replacing any previous value and hosts. No hosts means the
// secret may be sent nowhere, though a harness may still get it through
// secretEnv, which delivers it to the job rather than to a host.
func (s *Service) PutSecret(ctx context.Context, p auth.Principal, name, value string, allowedHosts []string) error {
	if err := secrets.ValidName(name); err != nil {
		return err
	}
	hosts, err := netguard.NormalizeHosts(allowedHosts)
	if err != nil {
		return err
	}
	switch {
	case value == "":
		return derrors.Invalidf("value is required: the secret's value, a non-empty string")
	case len(value) > MaxSecretBytes:
		return derrors.Invalidf("value is %d bytes long; the limit is %d", len(value), MaxSecretBytes)
	case !utf8.ValidString(value):
		return derrors.Invalidf("value must be valid UTF-8")
	}
	if s.sealer == nil {
		// The feature is off (503), the request is not wrong.
		return derrors.ErrNoSecretKey
	}
	sealed, err := s.sealer.Seal(p.Workspace, name, []byte(value))
	if err != nil {
		return err
	}
	_, err = s.store.PutSecret(ctx, store.Secret{Workspace: p.Workspace, Name: name, Ciphertext: sealed, AllowedHosts: hosts, CreatedBy: p.Subject, UpdatedAt: s.now()})
	return err
}

// ListSecrets returns the workspace's secrets: names, allowed hosts and
// dates, never values.
func (s *Service) ListSecrets(ctx context.Context, p auth.Principal) ([]store.Secret, error) {
	ss, err := s.store.ListSecrets(ctx, p.Workspace)
	if err != nil {
		return nil, err
	}
	for i := range ss {
		ss[i].Ciphertext = nil
		if ss[i].AllowedHosts == nil {
			ss[i].AllowedHosts = []string{}
		}
	}
	return ss, nil
}

// checkBound is nil when sec may be sent to the URL target, else the 400
// naming the runtime field, the secret and the host.
func checkBound(field string, sec store.Secret, target string) error {
	err := netguard.CheckBound(sec.AllowedHosts, target)
	var ue *netguard.UnboundError
	if errors.As(err, &ue) {
		ue.Field, ue.Secret = field, sec.Name
	}
	return err
}

// checkRuntimeBindings refuses a runtime whose credentials, when stored,
// are bound to hosts that do not include the address they would be sent
// to: authSecret and Nomad's addr or k8s's server, kubeconfigSecret and
// the server its kubeconfig names. An absent secret passes (validate
// reports it as missing); so does a kubeconfig that cannot be opened here
// (no or another SVC_SECRET_KEY) but has hosts, since the probe and the
// driver check the server again before anything is sent.
func (s *Service) checkRuntimeBindings(ctx context.Context, tx store.Tx, p auth.Principal, rt *registry.RuntimeSpec) error {
	get := func(name string) (store.Secret, bool, error) {
		sec, err := tx.GetSecret(ctx, p.Workspace, name)
		if errors.Is(err, derrors.ErrNotFound) {
			return store.Secret{}, false, nil
		}
		return sec, err == nil, err
	}
	switch {
	case rt.Kind == registry.RuntimeNomad && rt.AuthSecret != "":
		sec, ok, err := get(rt.AuthSecret)
		if err != nil || !ok {
			return err
		}
		return checkBound("authSecret", sec, rt.Addr)
	case rt.Kind == registry.RuntimeK8s && rt.K8sAuthMode() == registry.K8sAuthKubeconfig:
		sec, ok, err := get(rt.KubeconfigSecret)
		if err != nil || !ok {
			return err
		}
		unbound := &netguard.UnboundError{Field: "kubeconfigSecret", Secret: sec.Name, Target: netguard.Target{Host: "its cluster's server"}}
		if s.sealer == nil {
			if len(sec.AllowedHosts) == 0 {
				return unbound
			}
			return nil
		}
		kc, err := s.sealer.Open(p.Workspace, sec.Name, sec.Ciphertext)
		if err != nil {
			if len(sec.AllowedHosts) == 0 {
				return unbound
			}
			return nil
		}
		server, readable, err := s.kubeconfigServer(kc, rt.Context)
		switch {
		case !readable && len(sec.AllowedHosts) == 0:
			return unbound
		case !readable:
			return nil // the driver checks the server again before sending
		case err != nil:
			return derrors.Invalidf("kubeconfigSecret %q: %v", sec.Name, err)
		}
		return checkBound("kubeconfigSecret", sec, server)
	case rt.Kind == registry.RuntimeK8s && rt.K8sAuthMode() == registry.K8sAuthToken:
		sec, ok, err := get(rt.AuthSecret)
		if err != nil || !ok {
			return err
		}
		return checkBound("authSecret", sec, rt.Server)
	}
	return nil
}

// DeleteSecret deletes a workspace secret; an absent one is a no-op.
func (s *Service) DeleteSecret(ctx context.Context, p auth.Principal, name string) error {
	if err := secrets.ValidName(name); err != nil {
		return err
	}
	return s.store.DeleteSecret(ctx, p.Workspace, name)
}

// noProber is a probe's detail in a process built without the drivers.
const noProber = "this process cannot probe remote runtimes (it was built without their drivers)"

// ProbeResult is the answer of POST /runtimes/probe.
type ProbeResult struct {
	Kind      string `json:"kind"`
	Reachable bool   `json:"reachable"`
	Detail    string `json:"detail"`
}

// Probe checks whether the runtime in raw (a runtime spec, registered or
// not) answers, with the credentials its authSecret and kubeconfigSecret
// name in the workspace secret store. Credentials never appear in the
// result; a secret that is missing or cannot be opened is an unreachable
// result saying which name, not an error. A secret whose allowedHosts do
// not include the host it would be sent to is a 400 naming both, and
// nothing is sent. Every connection goes through the probe guard
// (SVC_PROBE_ALLOW); Detail never holds what the target answered. The
// drivers cap a probe at 10 s.
func (s *Service) Probe(ctx context.Context, p auth.Principal, raw []byte) (ProbeResult, error) {
	spec, err := registry.Parse(registry.Runtime, raw, true)
	if err != nil {
		return ProbeResult{}, err
	}
	rt := spec.Runtime()
	kind := string(rt.Kind)
	open := func(field, name, target string) ([]byte, []string, string, error) {
		return s.openSecret(ctx, p.Workspace, field, name, target)
	}
	switch rt.Kind {
	case registry.RuntimeLocal:
		return ProbeResult{Kind: kind, Reachable: true, Detail: "in-process"}, nil
	case registry.RuntimeRunner:
		// Nothing to dial: the runners come to the service.
		return ProbeResult{Kind: kind, Reachable: true, Detail: "self-hosted: jobs wait for the workspace's runners (svc runner)"}, nil
	case registry.RuntimeNomad:
		conn, miss, err := s.NomadConnection(ctx, p.Workspace, rt)
		if err != nil || miss != "" {
			return ProbeResult{Kind: kind, Detail: miss}, err
		}
		if s.probers.Nomad == nil {
			return ProbeResult{Kind: kind, Detail: noProber}, nil
		}
		ok, detail := s.probers.Nomad(ctx, conn)
		return ProbeResult{Kind: kind, Reachable: ok, Detail: detail}, nil
	case registry.RuntimeK8s:
		if s.probers.K8s == nil {
			return ProbeResult{Kind: kind, Detail: noProber}, nil
		}
		cfg := s.k8sBase(rt)
		kc, hosts, miss, err := open("kubeconfigSecret", rt.KubeconfigSecret, "")
		if err != nil || miss != "" {
			return ProbeResult{Kind: kind, Detail: miss}, err
		}
		if kc != nil {
			// The kubeconfig's server is where its credentials go; a
			// document that names none is left to the driver to describe
			// (it checks the binding again and sends nothing unbound).
			if server, readable, err := s.kubeconfigServer(kc, rt.Context); readable && err == nil {
				if err := checkBound("kubeconfigSecret", store.Secret{Name: rt.KubeconfigSecret, AllowedHosts: hosts}, server); err != nil {
					return ProbeResult{}, err
				}
			}
			cfg.Kubeconfig, cfg.AllowedHosts = kc, hosts
		} else {
			tok, hosts, miss, err := open("authSecret", rt.AuthSecret, rt.Server)
			if err != nil || miss != "" {
				return ProbeResult{Kind: kind, Detail: miss}, err
			}
			cfg.Token, cfg.AllowedHosts = string(tok), hosts
		}
		ok, detail := s.probers.K8s(ctx, cfg)
		return ProbeResult{Kind: kind, Reachable: ok, Detail: detail}, nil
	}
	return ProbeResult{Kind: kind, Detail: "unknown runtime kind"}, nil
}
