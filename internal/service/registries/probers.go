package registries

import (
	"context"

	"svc/internal/domain/registry"
)

// Probers reach a remote runtime's cluster: Probe (POST /runtimes/probe)
// and, at registration, reading the server a kubeconfig names to check its
// secret's binding. The drivers implement them (internal/probers wires
// drivers/nomad and drivers/k8s, as cmd/svc does); the service takes them
// as functions so that the API, which builds the service, never links the
// drivers. A nil function makes that part unavailable: the probe answers
// unreachable saying so, and a kubeconfig's server is treated as unknown.
type Probers struct {
	Nomad            func(ctx context.Context, c NomadProbe) (reachable bool, detail string)
	K8s              func(ctx context.Context, c K8sProbe) (reachable bool, detail string)
	KubeconfigServer func(kubeconfig []byte, context string) (string, error)
}

// NomadProbe is what a Nomad probe dials (registry.NomadConnection).
type NomadProbe = registry.NomadConnection

// K8sProbe is what a Kubernetes probe dials (registry.K8sConnection).
type K8sProbe = registry.K8sConnection

// WithK8sOperatorNamespaces offers the control plane's own cluster
// credentials to k8s runtimes without credentials of their own, in these
// namespaces only (SVC_K8S_OPERATOR_NAMESPACES). Without it such runtimes
// are refused at probe and at dispatch.
func WithK8sOperatorNamespaces(ns []string) Option {
	return func(s *Service) { s.k8sOperatorNamespaces = ns }
}

// k8sBase is the part of a k8s runtime's connection that needs no secret.
func (s *Service) k8sBase(rt *registry.RuntimeSpec) K8sProbe {
	return K8sProbe{Server: rt.Server, Context: rt.Context, Namespace: rt.Namespace, Guard: s.probeGuard,
		OperatorNamespaces: s.k8sOperatorNamespaces}
}

// WithProbers gives the service the runtime probers.
func WithProbers(p Probers) Option {
	return func(s *Service) { s.probers = p }
}

// kubeconfigServer is the server kc names for context, through the
// probers; ok is false when this process cannot read kubeconfigs.
func (s *Service) kubeconfigServer(kc []byte, context string) (server string, ok bool, err error) {
	if s.probers.KubeconfigServer == nil {
		return "", false, nil
	}
	server, err = s.probers.KubeconfigServer(kc, context)
	return server, true, err
}
