package registries

import (
	"context"

	"svc/internal/domain/registry"
	"svc/internal/platform/derrors"
	"svc/store"
)

// K8sConnection is how the control plane reaches the cluster of the k8s
// runtime rt on behalf of workspace, with the spec's auth precedence
// (§2.6): the value of its kubeconfigSecret, else its server with the
// value of its authSecret, else its context in the control plane's own
// kubeconfig; the secret's allowedHosts; the namespace; and the probe
// guard every connection dials through. It is what POST /runtimes/probe
// sends (Probe), for the worker running a case on the runtime, so the two
// see a runtime's credentials the same way.
//
// A secret bound to hosts that do not include where its credential would
// go is an error wrapping derrors.ErrInvalid; missing, when not empty,
// says why a named secret cannot be used (not stored, not openable).
func (s *Service) K8sConnection(ctx context.Context, workspace string, rt *registry.RuntimeSpec) (c K8sProbe, missing string, err error) {
	if rt == nil || rt.Kind != registry.RuntimeK8s {
		return K8sProbe{}, "", derrors.Invalidf("not a k8s runtime")
	}
	c = s.k8sBase(rt)
	kc, hosts, miss, err := s.openSecret(ctx, workspace, "kubeconfigSecret", rt.KubeconfigSecret, "")
	if err != nil || miss != "" {
		return K8sProbe{}, miss, err
	}
	if kc != nil {
		if server, readable, err := s.kubeconfigServer(kc, rt.Context); readable && err == nil {
			if err := checkBound("kubeconfigSecret", store.Secret{Name: rt.KubeconfigSecret, AllowedHosts: hosts}, server); err != nil {
				return K8sProbe{}, "", err
			}
		}
		c.Kubeconfig, c.AllowedHosts = kc, hosts
		return c, "", nil
	}
	tok, hosts, miss, err := s.openSecret(ctx, workspace, "authSecret", rt.AuthSecret, rt.Server)
	if err != nil || miss != "" {
		return K8sProbe{}, miss, err
	}
	c.Token, c.AllowedHosts = string(tok), hosts
	return c, "", nil
}
