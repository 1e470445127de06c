package registry

import (
	"path"
	"reflect"
	"sort"
	"strings"
)

// HarnessKind discriminates the two shapes of harness.
type HarnessKind string

// The harness kinds.
const (
	// HarnessProcess is a command the driver runs once per case (the
	// harness contract of ARCHITECTURE.md).
	HarnessProcess HarnessKind = "process"
	// HarnessService is a topology of long-running services reached
	// through a front door; it needs a topology-capable runtime.
	HarnessService HarnessKind = "service"
)

// HarnessSpec is a registered harness version. It is either self-contained
// (Kind and the fields of that kind, in the embedded HarnessConfig) or an
// instance of a harness template: Template and Pins, and no configuration of
// its own; ResolveInstance turns an instance into the self-contained spec it
// stands for.
type HarnessSpec struct {
	ID          string   `json:"id"`
	Version     string   `json:"version"`
	Description string   `json:"description,omitempty"`
	Tags        []string `json:"tags,omitempty"`
	// Template references the harness template this instance is made from,
	// by exact version.
	Template *Ref `json:"template,omitempty"`
	// Pins sets template parameters: parameter path -> JSON value. Keys are
	// paths in the template's harness (see HarnessTemplateSpec.Parameters).
	Pins map[string]any `json:"pins,omitempty"`
	HarnessConfig
}

// HarnessConfig is what a harness runs; a template holds one as its body.
// Which fields a kind accepts is in harnessFields.
type HarnessConfig struct {
	Kind HarnessKind `json:"kind,omitempty"`

	// Command is the argv of a process harness (no shell).
	Command []string `json:"command,omitempty"`
	// Env is the process's environment: non-secret values only.
	Env map[string]string `json:"env,omitempty"`
	// SecretEnv maps an environment variable to the NAME of a workspace
	// secret whose value the driver injects at run time, so credentials
	// never sit in the spec.
	SecretEnv map[string]string `json:"secretEnv,omitempty"`
	// WorkDir is the process's working directory inside its world.
	WorkDir string `json:"workDir,omitempty"`
	// Image is the container image a process harness runs in.
	Image string `json:"image,omitempty"`

	// Services are the containers of a service harness, by name (a DNS
	// label: services reach each other by it).
	Services map[string]Service `json:"services,omitempty"`
	// Deps orders start-up: service -> the services it waits for.
	Deps map[string][]string `json:"deps,omitempty"`
	// FrontDoor is where a case's task enters the topology.
	FrontDoor *FrontDoor `json:"frontDoor,omitempty"`
	// TraceSource names where the topology's traces are read from (a
	// workspace trace source; "svc" is the owned trace store).
	TraceSource string `json:"traceSource,omitempty"`
	// Target configures the session pool: target.acquire.capacity.
	Target *Target `json:"target,omitempty"`
	// Capacity bounds the pool's scaling: capacity.scale {min, max}.
	Capacity *Capacity `json:"capacity,omitempty"`

	// TimeoutSec bounds one case; 0 means the runtime's default.
	TimeoutSec int `json:"timeoutSec,omitempty"`
	// Model is the model the harness drives (part of its model closure):
	// a label, or a workspace model binding it calls through the model
	// proxy (HarnessModel).
	Model HarnessModel `json:"model,omitzero"`
	// Resources the harness declares; a declared gpu wins over the
	// runtime's default and routes to GPU-capable runtimes.
	Resources *Resources `json:"resources,omitempty"`
	// Meta is free-form configuration read by drivers and trace mapping
	// (for example a span attribute mapping); part of the content.
	Meta map[string]any `json:"meta,omitempty"`
}

// Service is one container of a service harness.
type Service struct {
	Image     string            `json:"image,omitempty"`
	Command   []string          `json:"command,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
	SecretEnv map[string]string `json:"secretEnv,omitempty"`
	// Ports the service listens on.
	Ports     []int      `json:"ports,omitempty"`
	Resources *Resources `json:"resources,omitempty"`
}

// FrontDoor is the service and port a case's task is sent to.
type FrontDoor struct {
	Service string `json:"service,omitempty"`
	Port    int    `json:"port,omitempty"`
	// Path is the HTTP path of the task endpoint, if the door is HTTP.
	Path string `json:"path,omitempty"`
}

// Target configures how sessions are acquired from the pool.
type Target struct {
	Acquire *Acquire `json:"acquire,omitempty"`
}

// Acquire sets the session pool size.
type Acquire struct {
	// Capacity is how many cases one warm topology serves at once.
	Capacity int `json:"capacity"`
}

// Capacity bounds how the pool of topologies scales.
type Capacity struct {
	Scale *Scale `json:"scale,omitempty"`
}

// Scale is the range of topologies kept: Min warm, at most Max.
type Scale struct {
	Min int `json:"min"`
	Max int `json:"max"`
}

// Ref references a registered entity by id and version.
type Ref struct {
	ID      string `json:"id"`
	Version string `json:"version"`
}

// String writes the reference as id@version.
func (r Ref) String() string { return r.ID + "@" + r.Version }

// checkRef checks a reference; latestOK admits the version "latest".
func (r *Ref) check(p *problems, at string, latestOK bool) {
	checkID(p, field(at, "id"), r.ID)
	if latestOK {
		checkVersionRef(p, field(at, "version"), r.Version)
	} else {
		checkVersion(p, field(at, "version"), r.Version)
	}
}

// harnessFields lists, per kind, the HarnessConfig members it accepts;
// every other member must be absent (or zero).
var harnessFields = map[HarnessKind][]string{
	HarnessProcess: {"kind", "command", "env", "secretEnv", "workDir", "image", "timeoutSec", "model", "resources", "meta"},
	HarnessService: {"kind", "services", "deps", "frontDoor", "traceSource", "target", "capacity", "timeoutSec", "model", "resources", "meta"},
}

// Limits of a harness.
const (
	maxServices = 32
	maxEnvVars  = 256
)

// validate checks a harness (self-contained or an instance).
func (h *HarnessSpec) validate(p *problems) {
	checkID(p, "id", h.ID)
	checkVersion(p, "version", h.Version)
	checkSpecTags(p, "tags", h.Tags)
	if h.Template != nil {
		h.Template.check(p, "template", false)
		if present := nonZeroFields(reflect.ValueOf(h.HarnessConfig)); len(present) > 0 {
			p.add(field("", present[0]), "an instance of a template carries only template and pins; set configuration through pins (also present: %s)", strings.Join(present, ", "))
		}
		for _, k := range sortedKeys(h.Pins) {
			if _, err := parsePath(k); err != nil {
				p.add(field("pins", k), "not a parameter path: %v", err)
			}
		}
		return
	}
	if len(h.Pins) > 0 {
		p.add("pins", "pins need a template; set template {id, version}, or drop pins")
	}
	h.HarnessConfig.validate(p, "")
}

// validate checks a harness configuration rooted at at. Absent required
// members are recorded with p.required, which a template's body may leave
// to its parameters.
func (c *HarnessConfig) validate(p *problems, at string) {
	switch c.Kind {
	case "":
		p.required(field(at, "kind"), `the harness kind: "process" or "service"`)
		return
	case HarnessProcess, HarnessService:
	default:
		p.add(field(at, "kind"), "%q %s", clip(string(c.Kind)), oneOf(HarnessProcess, HarnessService))
		return
	}
	allowed := harnessFields[c.Kind]
	for _, name := range nonZeroFields(reflect.ValueOf(*c)) {
		if !in(name, allowed...) {
			p.add(field(at, name), "not a field of a %s harness (its fields: %s)", c.Kind, strings.Join(allowed, ", "))
		}
	}
	bounded(p, field(at, "timeoutSec"), int64(c.TimeoutSec), 0, maxTimeoutSec)
	c.Model.validate(p, field(at, "model"))
	c.Resources = c.Resources.normalize()
	c.Resources.validate(p, field(at, "resources"))

	if c.Kind == HarnessProcess {
		if len(c.Command) == 0 {
			p.required(field(at, "command"), "the command to run, as an argv array")
		} else if c.Command[0] == "" {
			p.add(index(field(at, "command"), 0), "the program must not be empty")
		}
		checkEnv(p, at, c.Env, c.SecretEnv)
		switch {
		case c.WorkDir == "":
		case hasControl(c.WorkDir):
			p.add(field(at, "workDir"), "must not contain control characters")
		case !insideWorkDir(c.WorkDir):
			p.add(field(at, "workDir"), "%q must be a relative path inside the job's work directory, such as \"src\" (no leading '/', no '..' that leaves it, no '\\'): every runtime runs the harness in <work directory>/<workDir>", clip(c.WorkDir))
		}
		if c.Image != "" {
			checkImage(p, field(at, "image"), c.Image)
		}
		return
	}

	// A service harness.
	if len(c.Services) == 0 {
		p.required(field(at, "services"), "at least one service")
	}
	if len(c.Services) > maxServices {
		p.add(field(at, "services"), "at most %d services, got %d", maxServices, len(c.Services))
	}
	for _, name := range sortedKeys(c.Services) {
		sp := field(field(at, "services"), name)
		if !dnsLabelPattern.MatchString(name) {
			p.add(sp, "service name %q %s", clip(name), dnsLabelRule)
		}
		s := c.Services[name]
		if s.Image == "" {
			p.required(field(sp, "image"), "the service's image")
		} else {
			checkImage(p, field(sp, "image"), s.Image)
		}
		if len(s.Command) > 0 && s.Command[0] == "" {
			p.add(index(field(sp, "command"), 0), "the program must not be empty")
		}
		checkEnv(p, sp, s.Env, s.SecretEnv)
		seen := map[int]bool{}
		for i, port := range s.Ports {
			bounded(p, index(field(sp, "ports"), i), int64(port), 1, 65535)
			if seen[port] {
				p.add(index(field(sp, "ports"), i), "duplicate port %d", port)
			}
			seen[port] = true
		}
		s.Resources = s.Resources.normalize()
		s.Resources.validate(p, field(sp, "resources"))
		c.Services[name] = s
	}
	checkDeps(p, field(at, "deps"), c.Deps, c.Services)
	if c.FrontDoor == nil {
		p.required(field(at, "frontDoor"), "the front door {service, port} a case's task enters by")
	} else {
		fp := field(at, "frontDoor")
		fd := c.FrontDoor
		if fd.Service == "" {
			p.required(field(fp, "service"), "the service name")
		} else if _, ok := c.Services[fd.Service]; !ok && len(c.Services) > 0 {
			p.add(field(fp, "service"), "%q is not one of services (%s)", clip(fd.Service), strings.Join(sortedKeys(c.Services), ", "))
		}
		bounded(p, field(fp, "port"), int64(fd.Port), 1, 65535)
		if s, ok := c.Services[fd.Service]; ok && len(s.Ports) > 0 && !in(fd.Port, s.Ports...) {
			p.add(field(fp, "port"), "%d is not one of the ports of service %q", fd.Port, fd.Service)
		}
		if fd.Path != "" && (!strings.HasPrefix(fd.Path, "/") || hasSpaceOrControl(fd.Path)) {
			p.add(field(fp, "path"), "must start with '/' and contain no whitespace")
		}
	}
	if c.TraceSource != "" && !idPattern.MatchString(c.TraceSource) {
		p.add(field(at, "traceSource"), "%q must be a trace source name: %s", clip(c.TraceSource), idRule)
	}
	if c.Target != nil {
		tp := field(at, "target")
		if c.Target.Acquire == nil {
			p.required(field(tp, "acquire"), "acquire {capacity}")
		} else {
			bounded(p, field(field(tp, "acquire"), "capacity"), int64(c.Target.Acquire.Capacity), 1, 1000)
		}
	}
	if c.Capacity != nil {
		cp := field(at, "capacity")
		if c.Capacity.Scale == nil {
			p.required(field(cp, "scale"), "scale {min, max}")
		} else {
			sp := field(cp, "scale")
			sc := c.Capacity.Scale
			bounded(p, field(sp, "min"), int64(sc.Min), 0, 1000)
			bounded(p, field(sp, "max"), int64(sc.Max), 1, 1000)
			if sc.Min > sc.Max {
				p.add(sp, "min (%d) must not exceed max (%d)", sc.Min, sc.Max)
			}
		}
	}
}

// secretLikeWords are parts of environment variable names that mark a
// credential (GITHUB_TOKEN, DB_PASSWORD, OPENAI_API_KEY): such a variable
// belongs in secretEnv, naming a workspace secret.
var secretLikeWords = []string{"SECRET", "SECRETS", "TOKEN", "PASSWORD", "PASSWD", "PASS", "CREDENTIAL", "CREDENTIALS", "APIKEY"}

// secretLikeName reports whether an environment variable name looks like it
// holds a credential.
func secretLikeName(name string) bool {
	up := strings.ToUpper(name)
	if strings.Contains(up, "API_KEY") || strings.Contains(up, "ACCESS_KEY") || strings.Contains(up, "PRIVATE_KEY") {
		return true
	}
	for _, part := range strings.Split(up, "_") {
		if in(part, secretLikeWords...) {
			return true
		}
	}
	return false
}

// checkEnv checks an environment: names, no credentials in values, and
// secret references by name. The driver owns SVC_* and OTEL_* (the harness
// contract), so a spec may not set them.
func checkEnv(p *problems, at string, env, secretEnv map[string]string) {
	if len(env)+len(secretEnv) > maxEnvVars {
		p.add(field(at, "env"), "at most %d variables", maxEnvVars)
	}
	for _, pair := range []struct {
		member string
		m      map[string]string
	}{{"env", env}, {"secretEnv", secretEnv}} {
		for _, name := range sortedKeys(pair.m) {
			vp := field(field(at, pair.member), name)
			switch {
			case !envNamePattern.MatchString(name):
				p.add(vp, "environment variable names must match [A-Za-z_][A-Za-z0-9_]* (at most 128)")
				continue
			case strings.HasPrefix(strings.ToUpper(name), "SVC_") || strings.HasPrefix(strings.ToUpper(name), "OTEL_"):
				p.add(vp, "SVC_* and OTEL_* are set by the driver (harness contract); choose another name")
				continue
			}
			val := pair.m[name]
			if pair.member == "secretEnv" {
				checkSecretName(p, vp, val)
				continue
			}
			if _, dup := secretEnv[name]; dup {
				p.add(vp, "set in both env and secretEnv; keep one")
			}
			if secretLikeName(name) {
				p.add(vp, "looks like a credential; put the value in the workspace secret store and reference it with secretEnv {%q: \"<secret name>\"}", name)
				continue
			}
			if strings.IndexByte(val, 0) >= 0 {
				p.add(vp, "must not contain NUL characters")
			}
			for _, pre := range credentialPrefixes {
				if len(val) >= 20 && strings.HasPrefix(val, pre) {
					p.add(vp, "the value looks like a credential; put it in the workspace secret store and reference it with secretEnv")
					break
				}
			}
		}
	}
}

// checkDeps checks the start-up order: known services, no self edges, no
// cycles.
func checkDeps(p *problems, at string, deps map[string][]string, services map[string]Service) {
	for _, name := range sortedKeys(deps) {
		dp := field(at, name)
		if _, ok := services[name]; !ok {
			p.add(dp, "%q is not one of services", clip(name))
		}
		for i, d := range deps[name] {
			switch _, ok := services[d]; {
			case d == name:
				p.add(index(dp, i), "a service cannot depend on itself")
			case !ok:
				p.add(index(dp, i), "%q is not one of services", clip(d))
			}
		}
	}
	// Depth-first search for a cycle, in sorted order so the report is stable.
	const (
		unseen = iota
		active
		done
	)
	state := map[string]int{}
	var visit func(n string, trail []string) bool
	visit = func(n string, trail []string) bool {
		switch state[n] {
		case active:
			p.add(at, "cycle: %s", strings.Join(append(trail, n), " -> "))
			return true
		case done:
			return false
		}
		state[n] = active
		for _, d := range deps[n] {
			if d != n && visit(d, append(trail, n)) {
				return true
			}
		}
		state[n] = done
		return false
	}
	for _, name := range sortedKeys(deps) {
		if visit(name, nil) {
			return
		}
	}
}

// nonZeroFields lists the JSON names of the non-zero fields of struct v,
// in declaration order.
func nonZeroFields(v reflect.Value) []string {
	var names []string
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		if v.Field(i).IsZero() {
			continue
		}
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		names = append(names, name)
	}
	return names
}

// SecretNames lists the workspace secrets the harness references
// (secretEnv of the process and of every service), sorted, without
// duplicates.
func (h *HarnessSpec) SecretNames() []string {
	set := map[string]bool{}
	for _, n := range h.SecretEnv {
		set[n] = true
	}
	for _, s := range h.Services {
		for _, n := range s.SecretEnv {
			set[n] = true
		}
	}
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// insideWorkDir reports whether a harness's workDir names a directory below
// the job's work directory: what every driver accepts at dispatch
// (drivers.IsLocalPath, which this package cannot import).
func insideWorkDir(p string) bool {
	c := path.Clean(p)
	return !strings.HasPrefix(p, "/") && c != "." && c != ".." && !strings.HasPrefix(c, "../") && !strings.ContainsRune(p, '\\')
}
