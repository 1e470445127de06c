package registry

import (
	"reflect"
	"sort"
	"strings"
)

// RuntimeKind discriminates runtimes (spec §2.6).
type RuntimeKind string

// The runtime kinds.
const (
	RuntimeLocal RuntimeKind = "local" // in-process on the control-plane host (dev only)
	RuntimeNomad RuntimeKind = "nomad"
	RuntimeK8s   RuntimeKind = "k8s"
	// RuntimeRunner is a self-hosted runtime: its jobs wait in a lease
	// queue for the workspace's own runners (`svc runner`), which run them
	// on machines the team owns and report the results (self_reported).
	RuntimeRunner RuntimeKind = "runner"
)

// Admission defaults (spec §2.6, §8).
const (
	// DefaultMaxConcurrent is a runtime's admission ceiling when unset.
	DefaultMaxConcurrent = 20
	// DefaultTopologyMaxConcurrent is the ceiling of a topology-capable
	// runtime when unset.
	DefaultTopologyMaxConcurrent = 8
	// MaxMaxConcurrent is the largest maxConcurrent accepted.
	MaxMaxConcurrent = 1000
)

// RuntimeSpec is a registered runtime version: where jobs run. Which
// fields a kind accepts is in runtimeFields; credentials appear only as
// names of workspace secrets (AuthSecret, KubeconfigSecret).
type RuntimeSpec struct {
	ID          string      `json:"id"`
	Version     string      `json:"version"`
	Description string      `json:"description,omitempty"`
	Tags        []string    `json:"tags,omitempty"`
	Kind        RuntimeKind `json:"kind"`

	// Addr is the Nomad API address (http or https URL).
	Addr string `json:"addr,omitempty"`
	// Image is the default job image (nomad: required; k8s: required).
	Image string `json:"image,omitempty"`
	// Runtime is the Nomad task driver (docker, podman, exec, ...).
	Runtime     string       `json:"runtime,omitempty"`
	Datacenters []string     `json:"datacenters,omitempty"`
	Namespace   string       `json:"namespace,omitempty"`
	Constraints []Constraint `json:"constraints,omitempty"`
	// CPUMhzPerCore converts declared millicores to Nomad MHz; unset, a
	// case declaring resources.cpu is refused at dispatch.
	CPUMhzPerCore *int `json:"cpuMhzPerCore,omitempty"`

	// Context is the kubeconfig context (k8s auth of last resort).
	Context      string `json:"context,omitempty"`
	RuntimeClass string `json:"runtimeClass,omitempty"`
	// Server is the Kubernetes API URL, used with AuthSecret.
	Server string `json:"server,omitempty"`
	// KubeconfigSecret names a workspace secret holding a kubeconfig.
	KubeconfigSecret string            `json:"kubeconfigSecret,omitempty"`
	NodeSelector     map[string]string `json:"nodeSelector,omitempty"`
	Tolerations      []Toleration      `json:"tolerations,omitempty"`

	// AuthSecret names a workspace secret holding the cluster token
	// (Nomad ACL token, or the Kubernetes bearer token for Server).
	AuthSecret string `json:"authSecret,omitempty"`
	// GPU is the number of GPUs reserved per job by default.
	GPU *int `json:"gpu,omitempty"`

	// MaxConcurrent is the admission ceiling: 1 to 1000; unset means
	// EffectiveMaxConcurrent's default.
	MaxConcurrent *int `json:"maxConcurrent,omitempty"`
	// MemoryBudgetMb caps the sum of in-flight declared resources.memoryMb.
	MemoryBudgetMb *int `json:"memoryBudgetMb,omitempty"`
	// TraceSource makes a nomad or k8s runtime topology-capable: it can
	// host service harnesses, whose traces it reads from this source.
	TraceSource string `json:"traceSource,omitempty"`
	// BrowserImage is the browser sidecar image of a topology-capable runtime.
	BrowserImage string `json:"browserImage,omitempty"`
}

// Constraint is a Nomad placement constraint.
type Constraint struct {
	Attribute string `json:"attribute,omitempty"`
	Operator  string `json:"operator,omitempty"` // default "="
	Value     string `json:"value,omitempty"`
}

// Toleration is a Kubernetes toleration.
type Toleration struct {
	Key               string `json:"key,omitempty"`
	Operator          string `json:"operator,omitempty"` // Equal (default) or Exists
	Value             string `json:"value,omitempty"`
	Effect            string `json:"effect,omitempty"` // NoSchedule, PreferNoSchedule, NoExecute; empty = all
	TolerationSeconds *int64 `json:"tolerationSeconds,omitempty"`
}

// runtimeFields lists, per kind, the members it accepts beyond id,
// version, description, tags and kind.
var runtimeFields = map[RuntimeKind][]string{
	RuntimeLocal: {"maxConcurrent", "memoryBudgetMb"},
	// A runner runtime's parallelism is its runners' workers: nothing to set.
	RuntimeRunner: {},
	RuntimeNomad: {"addr", "image", "runtime", "datacenters", "namespace", "authSecret", "gpu", "constraints", "cpuMhzPerCore",
		"maxConcurrent", "memoryBudgetMb", "traceSource", "browserImage"},
	RuntimeK8s: {"image", "context", "namespace", "runtimeClass", "server", "authSecret", "kubeconfigSecret", "gpu", "nodeSelector", "tolerations",
		"maxConcurrent", "memoryBudgetMb", "traceSource", "browserImage"},
}

// nomadOperators are the constraint operators Nomad accepts.
var nomadOperators = []string{"=", "==", "is", "!=", "not", ">", ">=", "<", "<=",
	"distinct_hosts", "distinct_property", "regexp", "version", "semver",
	"set_contains", "set_contains_all", "set_contains_any", "is_set", "is_not_set"}

// Limits of a runtime.
const (
	maxCPUMhzPerCore = 100_000
	maxConstraints   = 64
)

// validate checks a runtime.
func (r *RuntimeSpec) validate(p *problems) {
	checkID(p, "id", r.ID)
	checkVersion(p, "version", r.Version)
	checkSpecTags(p, "tags", r.Tags)
	allowed, ok := runtimeFields[r.Kind]
	if !ok {
		if r.Kind == "" {
			p.required("kind", "the runtime kind: local, nomad, k8s or runner")
		} else {
			p.add("kind", "%q %s", clip(string(r.Kind)), oneOf(RuntimeLocal, RuntimeNomad, RuntimeK8s, RuntimeRunner))
		}
		return
	}
	for _, name := range nonZeroFields(reflect.ValueOf(*r)) {
		if in(name, "id", "version", "description", "tags", "kind") || in(name, allowed...) {
			continue
		}
		p.add(name, "not a field of a %s runtime (its fields: %s)", r.Kind, strings.Join(allowed, ", "))
	}

	if r.MaxConcurrent != nil {
		bounded(p, "maxConcurrent", int64(*r.MaxConcurrent), 1, MaxMaxConcurrent)
	}
	if r.MemoryBudgetMb != nil {
		bounded(p, "memoryBudgetMb", int64(*r.MemoryBudgetMb), 1, maxMemoryMb)
	}
	if r.GPU != nil {
		bounded(p, "gpu", int64(*r.GPU), 0, maxGPU)
	}
	if r.Image != "" {
		checkImage(p, "image", r.Image)
	}
	if r.BrowserImage != "" {
		checkImage(p, "browserImage", r.BrowserImage)
	}
	if r.TraceSource != "" && !idPattern.MatchString(r.TraceSource) {
		p.add("traceSource", "%q must be a trace source name: %s", clip(r.TraceSource), idRule)
	}
	if r.AuthSecret != "" {
		checkSecretName(p, "authSecret", r.AuthSecret)
	}
	if r.KubeconfigSecret != "" {
		checkSecretName(p, "kubeconfigSecret", r.KubeconfigSecret)
	}

	switch r.Kind {
	case RuntimeNomad:
		if r.Addr == "" {
			p.required("addr", "the Nomad API address (http:// or https:// URL)")
		} else {
			checkURL(p, "addr", r.Addr)
		}
		if r.Image == "" {
			p.required("image", "the default job image")
		}
		if r.Runtime != "" {
			checkToken(p, "runtime", r.Runtime)
		}
		for i, dc := range r.Datacenters {
			if dc == "" || len(dc) > 128 || hasSpaceOrControl(dc) {
				p.add(index("datacenters", i), "must be a datacenter name (1 to 128 characters, no whitespace)")
			}
		}
		if r.Namespace != "" && (len(r.Namespace) > 128 || hasSpaceOrControl(r.Namespace)) {
			p.add("namespace", "must be a Nomad namespace (at most 128 characters, no whitespace)")
		}
		if r.CPUMhzPerCore != nil {
			bounded(p, "cpuMhzPerCore", int64(*r.CPUMhzPerCore), 1, maxCPUMhzPerCore)
		}
		if len(r.Constraints) > maxConstraints {
			p.add("constraints", "at most %d constraints", maxConstraints)
		}
		for i, c := range r.Constraints {
			checkConstraint(p, index("constraints", i), c)
		}
	case RuntimeK8s:
		if r.Image == "" {
			p.required("image", "the default job image")
		}
		if r.Namespace != "" && !dnsLabelPattern.MatchString(r.Namespace) {
			p.add("namespace", "%q %s", clip(r.Namespace), dnsLabelRule)
		}
		if r.RuntimeClass != "" && (len(r.RuntimeClass) > 253 || !dnsSubdomainPattern.MatchString(r.RuntimeClass)) {
			p.add("runtimeClass", "%q must be a RuntimeClass name (a DNS subdomain)", clip(r.RuntimeClass))
		}
		if r.Context != "" && (len(r.Context) > 253 || hasSpaceOrControl(r.Context)) {
			p.add("context", "must be a kubeconfig context name (at most 253 characters, no whitespace)")
		}
		if r.Server != "" {
			checkURL(p, "server", r.Server)
		}
		// The token authenticates to Server and means nothing without it.
		switch {
		case r.Server != "" && r.AuthSecret == "" && r.KubeconfigSecret == "":
			p.required("authSecret", "the secret holding the token for server (or use kubeconfigSecret)")
		case r.AuthSecret != "" && r.Server == "":
			p.required("server", "the Kubernetes API URL that authSecret's token is for")
		}
		for _, k := range sortedKeys(r.NodeSelector) {
			checkLabel(p, field("nodeSelector", k), k, r.NodeSelector[k])
		}
		for i, t := range r.Tolerations {
			checkToleration(p, index("tolerations", i), t)
		}
	}
}

// checkConstraint checks a Nomad constraint.
func checkConstraint(p *problems, at string, c Constraint) {
	op := c.Operator
	if op == "" {
		op = "="
	}
	if !in(op, nomadOperators...) {
		p.add(field(at, "operator"), "%q %s", clip(c.Operator), oneOf(nomadOperators...))
		return
	}
	if c.Attribute == "" && op != "distinct_hosts" {
		p.required(field(at, "attribute"), `the attribute to test, such as "${attr.kernel.name}"`)
	}
	if c.Value == "" && !in(op, "distinct_hosts", "distinct_property", "is_set", "is_not_set") {
		p.required(field(at, "value"), "the value to compare with")
	}
}

// checkLabel checks a Kubernetes label key and value.
func checkLabel(p *problems, at, key, value string) {
	name := key
	if prefix, n, ok := strings.Cut(key, "/"); ok {
		name = n
		if prefix == "" || len(prefix) > 253 || !dnsSubdomainPattern.MatchString(prefix) {
			p.add(at, "the label key's prefix must be a DNS subdomain")
		}
	}
	if !labelNamePattern.MatchString(name) {
		p.add(at, "the label key must be at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit (optionally after a DNS prefix and '/')")
	}
	if !labelValuePattern.MatchString(value) {
		p.add(at, "the label value must be empty or at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit")
	}
}

// checkToleration checks a Kubernetes toleration.
func checkToleration(p *problems, at string, t Toleration) {
	if !in(t.Operator, "", "Equal", "Exists") {
		p.add(field(at, "operator"), "%q must be Equal or Exists", clip(t.Operator))
	}
	if !in(t.Effect, "", "NoSchedule", "PreferNoSchedule", "NoExecute") {
		p.add(field(at, "effect"), "%q must be NoSchedule, PreferNoSchedule or NoExecute (or empty for all)", clip(t.Effect))
	}
	if t.Key == "" && t.Operator != "Exists" {
		p.add(field(at, "key"), "an empty key needs operator Exists")
	}
	if t.Key != "" {
		checkLabel(p, field(at, "key"), t.Key, "")
	}
	if t.Operator == "Exists" && t.Value != "" {
		p.add(field(at, "value"), "must be empty with operator Exists")
	}
	if t.Value != "" && !labelValuePattern.MatchString(t.Value) {
		p.add(field(at, "value"), "must be at most 63 letters, digits, '-', '_' or '.'")
	}
	if t.TolerationSeconds != nil && t.Effect != "NoExecute" {
		p.add(field(at, "tolerationSeconds"), "applies only to effect NoExecute")
	}
}

// TopologyCapable reports whether the runtime can host service harnesses:
// a nomad or k8s runtime carrying a traceSource.
func (r *RuntimeSpec) TopologyCapable() bool {
	return (r.Kind == RuntimeNomad || r.Kind == RuntimeK8s) && r.TraceSource != ""
}

// EffectiveMaxConcurrent is the runtime's admission ceiling: maxConcurrent,
// else 8 for a topology-capable runtime, else 20.
func (r *RuntimeSpec) EffectiveMaxConcurrent() int {
	switch {
	case r.MaxConcurrent != nil:
		return *r.MaxConcurrent
	case r.TopologyCapable():
		return DefaultTopologyMaxConcurrent
	}
	return DefaultMaxConcurrent
}

// CPUMHz converts declared millicores to the MHz a Nomad job asks for,
// rounding up; false when the runtime sets no cpuMhzPerCore, in which case
// a case declaring resources.cpu is refused (spec §2.6).
func (r *RuntimeSpec) CPUMHz(millicores int) (int, bool) {
	if r.CPUMhzPerCore == nil {
		return 0, false
	}
	perCore := *r.CPUMhzPerCore
	return (millicores*perCore + 999) / 1000, true
}

// K8sAuth says how a k8s runtime authenticates, by the spec's precedence.
type K8sAuth string

// The k8s authentication modes, in precedence order.
const (
	K8sAuthKubeconfig K8sAuth = "kubeconfigSecret" // a kubeconfig from the secret store
	K8sAuthToken      K8sAuth = "token"            // server + the token in authSecret
	K8sAuthContext    K8sAuth = "context"          // a context of the host's kubeconfig
	K8sAuthDefault    K8sAuth = "default"          // in-cluster or the host's current context
)

// K8sAuthMode returns how a k8s runtime authenticates: kubeconfigSecret,
// then server + authSecret, then context (spec §2.6).
func (r *RuntimeSpec) K8sAuthMode() K8sAuth {
	switch {
	case r.KubeconfigSecret != "":
		return K8sAuthKubeconfig
	case r.Server != "" && r.AuthSecret != "":
		return K8sAuthToken
	case r.Context != "":
		return K8sAuthContext
	}
	return K8sAuthDefault
}

// SecretNames lists the workspace secrets the runtime references
// (authSecret, kubeconfigSecret), sorted: runtime validate reports those
// not yet stored as missingSecrets.
func (r *RuntimeSpec) SecretNames() []string {
	var names []string
	for _, n := range []string{r.AuthSecret, r.KubeconfigSecret} {
		if n != "" && !in(n, names...) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}
