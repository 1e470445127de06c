package registry

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"svc/internal/platform/derrors"
)

func TestResolveInstance(t *testing.T) {
	tmpl := mustParse(t, "harness-template", true).HarnessTemplate()
	inst := mustParse(t, "harness-instance", true).Harness()
	s, err := ResolveInstance(tmpl, inst)
	if err != nil {
		t.Fatal(err)
	}
	h := s.Harness()
	if s.ID() != "web-agent-gpt" || s.Version() != "1.0.0" || h.Template != nil || h.Pins != nil {
		t.Errorf("resolved %s@%s template %v pins %v; want the instance's id and version, self-contained", s.ID(), s.Version(), h.Template, h.Pins)
	}
	if h.Services["agent"].Image != "acme/agent:2.1" || h.Model.Label != "gpt-x" || h.Services["tools"].Image != "acme/tools:1" {
		t.Errorf("pins not applied: %s", s.Canonical())
	}
	want := `{"deps":{"agent":["tools"]},"frontDoor":{"port":8080,"service":"agent"},"id":"web-agent-gpt","kind":"service","model":"gpt-x","services":{"agent":{"image":"acme/agent:2.1","ports":[8080]},"tools":{"image":"acme/tools:1","ports":[9000]}},"version":"1.0.0"}`
	if string(s.Canonical()) != want {
		t.Errorf("resolved canonical\n got %s\nwant %s", s.Canonical(), want)
	}
	// The template's default holds when an optional parameter is not pinned.
	inst2 := *inst
	inst2.Pins = map[string]any{"services.agent.image": "acme/agent:2.2"}
	s2, err := ResolveInstance(tmpl, &inst2)
	if err != nil {
		t.Fatal(err)
	}
	if s2.Harness().Model.Label != "default-model" {
		t.Errorf("model = %q, want the template's default", s2.Harness().Model)
	}
	// A null pin removes the default.
	inst2.Pins = map[string]any{"services.agent.image": "acme/agent:2.2", "model": nil}
	s3, err := ResolveInstance(tmpl, &inst2)
	if err != nil {
		t.Fatal(err)
	}
	if !s3.Harness().Model.IsZero() {
		t.Errorf("model = %q after a null pin", s3.Harness().Model)
	}
	// Resolution does not modify the template.
	if again := mustParse(t, "harness-template", true); string(again.Canonical()) != string(mustParse(t, "harness-template", true).Canonical()) {
		t.Error("template changed")
	}
}

func TestResolveInstanceRefusals(t *testing.T) {
	tmpl := mustParse(t, "harness-template", true).HarnessTemplate()
	for _, tc := range []struct {
		name string
		pins map[string]any
		ref  *Ref
		path string
		msg  string
	}{
		{name: "undeclared parameter", pins: map[string]any{"services.agent.image": "a/b", "command": []any{"x"}}, path: "pins.command", msg: "not a parameter of template web-agent-template@1.0.0"},
		{name: "required parameter missing", pins: map[string]any{"model": "m"}, path: `pins["services.agent.image"]`, msg: "requires this parameter"},
		{name: "same parameter twice", pins: map[string]any{"services.agent.image": "a/b", `services["agent"].image`: "a/c"}, path: `pins["services[\"agent\"].image"]`, msg: "pins the same parameter"},
		{name: "resolved harness invalid", pins: map[string]any{"services.agent.image": "not an image"}, path: "services.agent.image", msg: "OCI image reference"},
		{name: "pin of the wrong type", pins: map[string]any{"services.agent.image": 5}, path: "services.agent.image", msg: "must be a string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst := mustParse(t, "harness-instance", true).Harness()
			inst.Pins = tc.pins
			_, err := ResolveInstance(tmpl, inst)
			wantProblem(t, err, tc.path, tc.msg)
		})
	}
	inst := mustParse(t, "harness-instance", true).Harness()
	inst.Template = &Ref{ID: "other", Version: "1.0.0"}
	if _, err := ResolveInstance(tmpl, inst); !errors.Is(err, derrors.ErrInvalid) {
		t.Errorf("wrong template: err = %v, want ErrInvalid", err)
	}
	self := mustParse(t, "harness-process", true).Harness()
	if _, err := ResolveInstance(tmpl, self); !errors.Is(err, derrors.ErrInvalid) {
		t.Errorf("not an instance: err = %v, want ErrInvalid", err)
	}
}

func TestHarnessInstance(t *testing.T) {
	got, ok := mustParse(t, "harness-instance", true).Harness().Instance()
	want := Instance{Template: Ref{ID: "web-agent-template", Version: "1.0.0"}, Pins: map[string]any{"services.agent.image": "acme/agent:2.1", "model": "gpt-x"}}
	if !ok {
		t.Fatal("Instance() = false for an instance")
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, ok := mustParse(t, "harness-process", true).Harness().Instance(); ok {
		t.Error("Instance() = true for a self-contained harness")
	}
}

func TestSecretNames(t *testing.T) {
	for _, tc := range []struct {
		file string
		want []string
	}{
		{"runtime-k8s", []string{"gke-kubeconfig", "gke-token"}},
		{"runtime-nomad", []string{"nomad-token"}},
		{"runtime-local", nil},
		{"harness-service", []string{"openai"}},
		{"harness-process", []string{"anthropic-key"}},
		{"rubric", nil},
	} {
		got := mustParse(t, tc.file, true).SecretNames()
		if diff := cmp.Diff(tc.want, got, cmpEmptyEqual); diff != "" {
			t.Errorf("%s: SecretNames (-want +got):\n%s", tc.file, diff)
		}
	}
	if err := ValidateSecretName("nomad-token"); err != nil {
		t.Errorf("ValidateSecretName(nomad-token) = %v", err)
	}
	for _, bad := range []string{"", "has space", "sk-abcdefghijklmnopqrstuvwxyz", "eyJhbGciOi", "a/b"} {
		if err := ValidateSecretName(bad); !errors.Is(err, derrors.ErrInvalid) {
			t.Errorf("ValidateSecretName(%q) = %v, want ErrInvalid", bad, err)
		}
	}
}

// cmpEmptyEqual treats nil and empty slices as equal.
var cmpEmptyEqual = cmp.FilterValues(func(a, b []string) bool { return len(a) == 0 && len(b) == 0 }, cmp.Ignore())

func TestRuntimeDefaults(t *testing.T) {
	local := mustParse(t, "runtime-local", true).Runtime()
	nomad := mustParse(t, "runtime-nomad", true).Runtime()
	k8s := mustParse(t, "runtime-k8s", true).Runtime()
	plain := *k8s
	plain.MaxConcurrent = nil
	topo := plain
	topo.TraceSource = "svc"
	for _, tc := range []struct {
		name     string
		r        *RuntimeSpec
		max      int
		topology bool
	}{
		{"explicit", local, 4, false},
		{"explicit topology", nomad, 50, true},
		{"default", &plain, DefaultMaxConcurrent, false},
		{"default topology", &topo, DefaultTopologyMaxConcurrent, true},
	} {
		if got := tc.r.EffectiveMaxConcurrent(); got != tc.max {
			t.Errorf("%s: EffectiveMaxConcurrent = %d, want %d", tc.name, got, tc.max)
		}
		if got := tc.r.TopologyCapable(); got != tc.topology {
			t.Errorf("%s: TopologyCapable = %v, want %v", tc.name, got, tc.topology)
		}
	}
	for _, tc := range []struct {
		mut  func(*RuntimeSpec)
		want K8sAuth
	}{
		{func(*RuntimeSpec) {}, K8sAuthKubeconfig},
		{func(r *RuntimeSpec) { r.KubeconfigSecret = "" }, K8sAuthToken},
		{func(r *RuntimeSpec) { r.KubeconfigSecret, r.AuthSecret = "", "" }, K8sAuthContext},
		{func(r *RuntimeSpec) { r.KubeconfigSecret, r.AuthSecret, r.Context = "", "", "" }, K8sAuthDefault},
	} {
		r := *k8s
		tc.mut(&r)
		if got := r.K8sAuthMode(); got != tc.want {
			t.Errorf("K8sAuthMode = %s, want %s", got, tc.want)
		}
	}
}

func TestCPUMHz(t *testing.T) {
	nomad := mustParse(t, "runtime-nomad", true).Runtime() // 2400 MHz per core
	for _, tc := range []struct{ milli, mhz int }{{1000, 2400}, {500, 1200}, {1, 3}, {0, 0}, {2500, 6000}} {
		if got, ok := nomad.CPUMHz(tc.milli); !ok || got != tc.mhz {
			t.Errorf("CPUMHz(%d) = %d, %v; want %d", tc.milli, got, ok, tc.mhz)
		}
	}
	if _, ok := mustParse(t, "runtime-k8s", true).Runtime().CPUMHz(1000); ok {
		t.Error("CPUMHz without cpuMhzPerCore = ok")
	}
}

func TestCriterionEffectiveWeight(t *testing.T) {
	r := mustParse(t, "judge-model", false).Judge().Model
	if got := []float64{r.Criteria[0].EffectiveWeight(), r.Criteria[1].EffectiveWeight()}; !cmp.Equal(got, []float64{2, 1}) {
		t.Errorf("weights = %v, want [2 1]", got)
	}
}

func TestPlaceholders(t *testing.T) {
	got := Placeholders("{task} {rubric} {custom_slot} {task} { spaced } {verdict_instruction} {{x}}")
	want := []string{"task", "rubric", "custom_slot", "verdict_instruction", "x"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
