package app

import (
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"

	"svc/drivers"
	"svc/drivers/local"
	"svc/internal/platform/config"
	"svc/internal/service/models"
	"svc/internal/service/traces"
)

// TestActivitiesWiresEveryService: the worker the binary and the test
// stacks start has every service and setting (issue 31: the test stack
// had no trace ingest settings, no trace sources with the pull guard and
// no k8s operator namespaces, as the binary had).
func TestActivitiesWiresEveryService(t *testing.T) {
	cfg := config.Defaults()
	cfg.SecretKey = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
	cfg.HarnessOTLPEndpoint = "http://127.0.0.1:4318"
	d := local.New(local.Options{Root: t.TempDir()})
	acts, err := Activities(cfg, Deps{Logger: slog.New(slog.DiscardHandler), Driver: d}, WorkerOptions{Role: "worker"})
	if err != nil {
		t.Fatal(err)
	}
	// The worker holds the services behind its own interfaces.
	ms, _ := acts.Models.(*models.Service)
	sources, _ := acts.TraceSources.(*traces.Sources)
	switch {
	case acts.Registries == nil, acts.Sealer == nil, ms == nil, ms.Sealer == nil, ms.Guard == nil,
		acts.Guard == nil, acts.TraceIngest == nil, sources == nil, sources.Sealer == nil,
		sources.Guard == nil, acts.Judges == nil, acts.WebhookSecrets == nil:
		t.Fatalf("a service is missing: %+v", acts)
	}
	if acts.Driver != drivers.Driver(d) || acts.Judges.Driver != drivers.Driver(d) {
		t.Errorf("driver = %v, judges' = %v; want the deps' driver", acts.Driver, acts.Judges.Driver)
	}
	if host, _ := os.Hostname(); acts.Host != host {
		t.Errorf("Host = %q, want the host name %q", acts.Host, host)
	}
	if acts.OTLPEndpoint != cfg.HarnessOTLPEndpoint {
		t.Errorf("OTLPEndpoint = %q, want %q", acts.OTLPEndpoint, cfg.HarnessOTLPEndpoint)
	}
	if acts.ModelProxyURL != "" {
		t.Errorf("ModelProxyURL = %q, want none for a worker without SVC_PUBLIC_URL", acts.ModelProxyURL)
	}

	acts, err = Activities(cfg, Deps{Driver: d}, WorkerOptions{Host: "w1", ModelProxyURL: "http://127.0.0.1:1/judge-proxy/v1"})
	if err != nil {
		t.Fatal(err)
	}
	if acts.Host != "w1" || acts.ModelProxyURL != "http://127.0.0.1:1/judge-proxy/v1" {
		t.Errorf("Host, ModelProxyURL = %q, %q; want the options'", acts.Host, acts.ModelProxyURL)
	}
}

// TestActivitiesNamesTheBadSetting: a setting that cannot work stops the
// worker with its name, before the local runtime is opened.
func TestActivitiesNamesTheBadSetting(t *testing.T) {
	for _, tc := range []struct {
		set  func(*config.Config)
		want string
	}{
		{func(c *config.Config) { c.SecretKey = "short" }, "SVC_SECRET_KEY"},
		{func(c *config.Config) { c.WebhookAllow = "10.0.0.0/99" }, "SVC_WEBHOOK_ALLOW"},
		{func(c *config.Config) { c.ProbeAllow = "10.0.0.0/99" }, "SVC_PROBE_ALLOW"},
	} {
		cfg := config.Defaults()
		tc.set(&cfg)
		opened := false
		_, err := Activities(cfg, Deps{}, WorkerOptions{OpenDriver: func() (drivers.Driver, error) {
			opened = true
			return nil, errors.New("not reached")
		}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err = %v, want one naming %s", err, tc.want)
		}
		if opened {
			t.Errorf("%s: the driver was opened before the setting was checked", tc.want)
		}
	}
	opened := 0
	want := errors.New("SVC_LOCAL_USER=nobody: no such user")
	_, err := Activities(config.Defaults(), Deps{}, WorkerOptions{OpenDriver: func() (drivers.Driver, error) {
		opened++
		return nil, want
	}})
	if !errors.Is(err, want) || opened != 1 {
		t.Errorf("err = %v after %d opens, want the driver's error after one", err, opened)
	}
}

// TestModelProxyURL: where code judges reach the model proxy.
func TestModelProxyURL(t *testing.T) {
	for _, tc := range []struct {
		role, public, addr, want string
	}{
		{"worker", "https://svc.example/", ":8080", "https://svc.example/judge-proxy/v1"},
		{"dev", "https://svc.example", ":8080", "https://svc.example/judge-proxy/v1"},
		{"worker", "", ":8080", ""},
		{"dev", "", ":8080", "http://127.0.0.1:8080/judge-proxy/v1"},
		{"dev", "", "0.0.0.0:8080", "http://127.0.0.1:8080/judge-proxy/v1"},
		{"dev", "", "[::1]:8080", "http://[::1]:8080/judge-proxy/v1"},
		{"dev", "", "127.0.0.1:0", ""},
	} {
		cfg := config.Defaults()
		cfg.PublicURL, cfg.Addr = tc.public, tc.addr
		if got := ModelProxyURL(cfg, tc.role); got != tc.want {
			t.Errorf("ModelProxyURL(%s, public %q, addr %q) = %q, want %q", tc.role, tc.public, tc.addr, got, tc.want)
		}
	}
}
