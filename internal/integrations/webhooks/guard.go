package webhooks

import (
	"svc/internal/platform/netguard"
)

// Resolver looks up a host's addresses; *net.Resolver satisfies it, and tests
// inject a fake so no real DNS is needed.
type Resolver = netguard.Resolver

// Guard decides whether the service may call a webhook URL. It refuses
// addresses inside the service's own network unless SVC_WEBHOOK_ALLOW names
// the host or the address. The guard itself lives in package netguard,
// which runtime probes share with their own allow list.
type Guard = netguard.Guard

// names word the webhook guard's errors.
var names = netguard.Names{
	Setting:      "SVC_WEBHOOK_ALLOW",
	Field:        "webhookUrl",
	Target:       "webhook",
	UserinfoHint: "deliveries are signed with the webhook secret instead",
}

// NewGuard parses allow (SVC_WEBHOOK_ALLOW): comma-separated CIDRs
// ("10.0.0.0/8"), IP addresses, host names ("hooks.internal"), suffix
// wildcards ("*.internal.example", subdomains only) and any of the last three
// with a port ("hooks.internal:8443", "[::1]:9000"). An empty list allows no
// private address. A bad entry is an error that names it.
func NewGuard(allow string) (*Guard, error) {
	return netguard.New(allow, names)
}

// DefaultClientTimeout bounds a whole delivery when Client is given no timeout,
// so a slow receiver cannot hold a worker forever.
const DefaultClientTimeout = netguard.DefaultClientTimeout

// unwrapURLError drops url.Error's copy of the raw URL, which may hold a token.
func unwrapURLError(err error) error { return netguard.UnwrapURLError(err) }
