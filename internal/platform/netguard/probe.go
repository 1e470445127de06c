package netguard

// ProbeSetting is the operator setting that allow-lists private runtime
// probe targets.
const ProbeSetting = "SVC_PROBE_ALLOW"

// probeGuardNames word the probe guard's own errors.
var probeGuardNames = Names{
	Setting:      ProbeSetting,
	Field:        "addr",
	Target:       "runtime",
	UserinfoHint: "put credentials in authSecret or kubeconfigSecret",
}

// NewProbeGuard parses allow (SVC_PROBE_ALLOW, the syntax of
// SVC_WEBHOOK_ALLOW) into the guard that runtime probes and the nomad and
// k8s clients dial through. It lives here, not with the drivers, so that
// the API can build it without linking them.
func NewProbeGuard(allow string) (*Guard, error) {
	return New(allow, probeGuardNames)
}
