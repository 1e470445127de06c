package app

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"

	"svc/drivers"
	"svc/drivers/local"
	"svc/internal/platform/config"
)

// TestLocalDriverPolicy: which worker runs local jobs, and how (issue 11):
// the local runtime is dev-only under SVC_REQUIRE_AUTH unless an operator
// turns it on, and jobs never run as root.
func TestLocalDriverPolicy(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct {
		name    string
		role    string
		set     func(*config.Config)
		wantErr string // in the job's error; "" runs the job
	}{
		{"dev runs jobs", "dev", nil, ""},
		{"worker without auth runs jobs", "worker", nil, ""},
		{"worker with auth refuses", "worker", func(c *config.Config) { c.RequireAuth = true }, "SVC_LOCAL_RUNTIME=on"},
		{"operator turns it on", "worker", func(c *config.Config) { c.RequireAuth = true; c.LocalRuntime = "on" }, ""},
		{"off is off", "dev", func(c *config.Config) { c.LocalRuntime = "off" }, "SVC_LOCAL_RUNTIME=off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Defaults()
			if tc.set != nil {
				tc.set(&cfg)
			}
			d, err := LocalDriver(t.Context(), cfg, tc.role, t.TempDir(), log)
			if err != nil {
				t.Fatalf("LocalDriver: %v", err)
			}
			res, err := d.Run(t.Context(), drivers.Job{RunID: "policy", Command: []string{"/bin/sh", "-c", "id -u"}})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Run error = %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if os.Geteuid() == 0 && strings.TrimSpace(res.Stdout) == "0" {
				t.Errorf("a job ran as root")
			}
		})
	}
}

// TestLocalNetworkPolicy: what local jobs reach under SVC_LOCAL_NETWORK
// (issue 30, finding 3): by default (auto) the isolated network, where a
// service on the host's loopback is out of reach unless
// SVC_LOCAL_NETWORK_ALLOW names it; without slirp4netns, svc dev falls
// back to the host's network saying what to install, a worker refuses
// local jobs, and isolated stops start-up.
func TestLocalNetworkPolicy(t *testing.T) {
	if local.FindSlirp() == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed on this CI machine (.ci/run installs it)", local.SlirpName)
		}
		t.Skipf("%s is not installed", local.SlirpName)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	probe := fmt.Sprintf(`if exec 3<>/dev/tcp/%s/%s; then echo open; else echo refused; fi`, host, port)
	noSlirp := t.TempDir() // a PATH without slirp4netns
	for _, tc := range []struct {
		name    string
		role    string
		set     func(*config.Config)
		path    string
		want    string // the probe's answer
		wantErr string // in LocalDriver's error, or else the job's
		wantLog string
	}{
		{name: "dev isolates", role: "dev", want: "refused"},
		{name: "worker isolates", role: "worker", want: "refused"},
		{name: "allowed address", role: "worker", set: func(c *config.Config) { c.LocalNetworkAllow = ln.Addr().String() }, want: "open"},
		{name: "host on request", role: "worker", set: func(c *config.Config) { c.LocalNetwork = "host" }, want: "open"},
		{name: "dev without slirp4netns", role: "dev", path: noSlirp, want: "open", wantLog: "apt-get install slirp4netns"},
		{name: "worker without slirp4netns", role: "worker", path: noSlirp, wantErr: "SVC_LOCAL_NETWORK=host"},
		{name: "isolated without slirp4netns", role: "dev", path: noSlirp, set: func(c *config.Config) { c.LocalNetwork = "isolated" }, wantErr: "SVC_LOCAL_NETWORK=isolated"},
		{name: "allow a public address", role: "dev", set: func(c *config.Config) { c.LocalNetworkAllow = "198.51.100.1:80" }, wantErr: "SVC_LOCAL_NETWORK_ALLOW=198.51.100.1:80: 198.51.100.1:80 is a public address"},
		{name: "allow an IPv6 network", role: "dev", set: func(c *config.Config) { c.LocalNetworkAllow = "fd00::/8" }, wantErr: "no IPv6 way out"},
		{name: "allowed networks", role: "worker", set: func(c *config.Config) { c.LocalNetworkAllow = "10.1.0.0/16, 10.9.8.7:8000" }, want: "refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.path != "" {
				t.Setenv("PATH", tc.path)
			}
			cfg := config.Defaults()
			if tc.set != nil {
				tc.set(&cfg)
			}
			var logs strings.Builder
			log := slog.New(slog.NewTextHandler(&logs, nil))
			d, err := LocalDriver(t.Context(), cfg, tc.role, t.TempDir(), log)
			if err == nil {
				defer d.Close()
			}
			if err != nil {
				if tc.wantErr == "" || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("LocalDriver: %v", err)
				}
				return
			}
			res, err := d.Run(t.Context(), drivers.Job{RunID: "net-policy", Command: []string{"/bin/bash", "-c", probe}})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Run error = %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if got := strings.TrimSpace(res.Stdout); got != tc.want {
				t.Errorf("a job connecting to a host loopback listener: %q, want %q", got, tc.want)
			}
			if !strings.Contains(logs.String(), tc.wantLog) {
				t.Errorf("the log does not say %q:\n%s", tc.wantLog, logs.String())
			}
		})
	}
}
