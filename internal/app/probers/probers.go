// Package probers wires the runtime drivers' probes into the registry
// service (service.Probers): the one place, with cmd/svc, that joins the
// API's side and the drivers, so that package api never links them. The
// worker's activities build a nomad runtime's driver from the same
// connection (registry.NomadConnection, which the registry service
// returns to both), so probing and running agree.
package probers

import (
	"context"

	"svc/drivers/k8s"
	"svc/drivers/nomad"
	"svc/internal/service/registries"
)

// Drivers returns the probers of the nomad and k8s drivers.
func Drivers() registries.Probers {
	return registries.Probers{
		Nomad: func(ctx context.Context, c registries.NomadProbe) (bool, string) {
			r := nomad.Probe(ctx, NomadConfig(c))
			return r.Reachable, r.Detail
		},
		K8s: func(ctx context.Context, c registries.K8sProbe) (bool, string) {
			r := k8s.Probe(ctx, k8s.ProbeConfig{Server: c.Server, Context: c.Context, Namespace: c.Namespace, Token: c.Token,
				Kubeconfig: c.Kubeconfig, AllowedHosts: c.AllowedHosts, Guard: c.Guard, OperatorNamespaces: c.OperatorNamespaces})
			return r.Reachable, r.Detail
		},
		KubeconfigServer: k8s.KubeconfigServer,
	}
}

// NomadConfig is the driver's connection for what the registry service
// resolved (service.Service.NomadConnection): the same for a probe and for
// the worker's jobs.
func NomadConfig(c registries.NomadProbe) nomad.Config {
	return nomad.Config{Addr: c.Addr, Namespace: c.Namespace, Token: c.Token, AllowedHosts: c.AllowedHosts, Guard: c.Guard}
}
