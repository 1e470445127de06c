package main

import (
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"

	"svc/config"
	"svc/drivers"
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
			d, err := localDriver(t.Context(), cfg, tc.role, t.TempDir(), log)
			if err != nil {
				t.Fatalf("localDriver: %v", err)
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
