package registry

import "svc/internal/platform/netguard"

// Resolved is a version found by the registry service's Resolve: where it
// was found and its typed spec. It is the domain's, so the worker resolves
// through a small interface of its own (activities.Registry) without
// linking the service.
type Resolved struct {
	Owner   string
	Version string // `latest` resolved
	Digest  string // of the registered spec
	// Spec is the typed spec; a harness instance is already resolved
	// against its template into the self-contained harness it stands for.
	Spec Spec
	// PrivateTeam is the entity's team when that team is private: what is
	// made from the entity (a batch, its runs) is that team's to read.
	PrivateTeam string
}

// Ref is the resolved reference id@version.
func (r Resolved) Ref() Ref { return Ref{ID: r.Spec.ID(), Version: r.Version} }

// NomadConnection is what reaches a nomad runtime's cluster: the agent,
// the namespace, the ACL token and the hosts its secret is bound to,
// through the probe guard. A probe (POST /runtimes/probe) and the worker
// running a case on the runtime both dial it.
type NomadConnection struct {
	Addr, Namespace, Token string
	AllowedHosts           []string
	Guard                  *netguard.Guard
}

// K8sConnection is what reaches a Kubernetes runtime's cluster: a
// kubeconfig (with its context), or a server and a bearer token, and the
// namespace. A probe and the worker both dial it.
type K8sConnection struct {
	Server, Context, Namespace, Token string
	Kubeconfig                        []byte
	AllowedHosts                      []string
	Guard                             *netguard.Guard
	// OperatorNamespaces are where a runtime without credentials of its
	// own may use the control plane's (SVC_K8S_OPERATOR_NAMESPACES).
	OperatorNamespaces []string
}
