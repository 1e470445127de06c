package config

import (
	"bytes"
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadPrecedence(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		want    func(c Config) bool
		wantErr string
	}{
		{name: "defaults", want: func(c Config) bool {
			return c.Addr == "127.0.0.1:8080" && c.DataDir == "./.svc" && c.MaxBodyBytes == 10<<20 &&
				c.TemporalNamespace == "default" && c.TaskQueue == "svc" && c.ShutdownTimeout == 20*time.Second && !c.RequireAuth
		}},
		{name: "env over default", env: map[string]string{"SVC_ADDR": "0.0.0.0:9", "SVC_REQUIRE_AUTH": "1", "DATABASE_URL": "postgres://x"},
			want: func(c Config) bool { return c.Addr == "0.0.0.0:9" && c.RequireAuth && c.DatabaseURL == "postgres://x" }},
		{name: "flag over env", env: map[string]string{"SVC_ADDR": "0.0.0.0:9"}, args: []string{"-addr", "127.0.0.1:7"},
			want: func(c Config) bool { return c.Addr == "127.0.0.1:7" }},
		{name: "secret from env", env: map[string]string{"SVC_INTERNAL_TOKEN": "s3cret"},
			want: func(c Config) bool { return c.InternalToken == "s3cret" }},
		{name: "bad env value names the variable", env: map[string]string{"SVC_MAX_BODY_BYTES": "lots"}, wantErr: "SVC_MAX_BODY_BYTES"},
		{name: "bad bool", env: map[string]string{"SVC_REQUIRE_AUTH": "maybe"}, wantErr: "SVC_REQUIRE_AUTH"},
		{name: "bad flag value names the flag", args: []string{"-shutdown-timeout", "soon"}, wantErr: "shutdown-timeout"},
		{name: "secrets are never flags", args: []string{"-internal-token", "x"}, wantErr: "not defined"},
		{name: "statement timeout defaults to 60s", want: func(c Config) bool { return c.PGStatementTimeout == 60*time.Second }},
		{name: "statement timeout from env", env: map[string]string{"SVC_PG_STATEMENT_TIMEOUT": "5m"},
			want: func(c Config) bool { return c.PGStatementTimeout == 5*time.Minute }},
		{name: "statement timeout 0 is off", env: map[string]string{"SVC_PG_STATEMENT_TIMEOUT": "0"},
			want: func(c Config) bool { return c.PGStatementTimeout == 0 }},
		{name: "negative statement timeout", env: map[string]string{"SVC_PG_STATEMENT_TIMEOUT": "-1s"}, wantErr: "SVC_PG_STATEMENT_TIMEOUT"},
		{name: "statement timeout under a millisecond", args: []string{"-pg-statement-timeout", "10us"}, wantErr: "at least 1ms"},
		{name: "world settings default", want: func(c Config) bool {
			return c.ImageStore == "" && c.WorldKeepVersions == 10 && c.WorldMaxCaptureBytes == 2<<30
		}},
		{name: "world settings from env", env: map[string]string{"SVC_IMAGE_STORE": "registry.example.com/svc", "SVC_WORLD_KEEP_VERSIONS": "0", "SVC_WORLD_MAX_CAPTURE_BYTES": "1048576"},
			want: func(c Config) bool {
				return c.ImageStore == "registry.example.com/svc" && c.WorldKeepVersions == 0 && c.WorldMaxCaptureBytes == 1<<20
			}},
		{name: "capture limit must be positive", env: map[string]string{"SVC_WORLD_MAX_CAPTURE_BYTES": "0"}, wantErr: "SVC_WORLD_MAX_CAPTURE_BYTES"},
		{name: "keep versions is a number", args: []string{"-world-keep-versions", "all"}, wantErr: "world-keep-versions"},
		{name: "worker host defaults to the machine's", want: func(c Config) bool { return c.WorkerHost == "" }},
		{name: "worker host from env", env: map[string]string{"SVC_WORKER_HOST": "box-1.sandbox_b"},
			want: func(c Config) bool { return c.WorkerHost == "box-1.sandbox_b" }},
		{name: "worker host from a flag", args: []string{"-worker-host", "w2"}, want: func(c Config) bool { return c.WorkerHost == "w2" }},
		{name: "worker host is one name", env: map[string]string{"SVC_WORKER_HOST": "a b"}, wantErr: "SVC_WORKER_HOST"},
		{name: "worker host has no queue separator", args: []string{"-worker-host", "x@y:z"}, wantErr: "worker-host"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			c, err := Load(fs, tt.args, env(tt.env))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Load error = %v, want it to mention %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if !tt.want(c) {
				t.Errorf("unexpected config: %+v", c)
			}
		})
	}
}

func TestPrintSettingsListsEverySetting(t *testing.T) {
	var b bytes.Buffer
	PrintSettings(&b)
	for _, s := range Settings {
		if !strings.Contains(b.String(), s.Env) {
			t.Errorf("settings table lacks %s", s.Env)
		}
	}
	if !strings.Contains(b.String(), "(env only)") {
		t.Error("secret settings are not marked env only")
	}
}

func TestRedacted(t *testing.T) {
	c := Config{InternalToken: "tok", DatabaseURL: "postgres://svc:hunter2@db:5432/svc"}
	r := c.Redacted()
	if strings.Contains(r.DatabaseURL, "hunter2") || r.InternalToken == "tok" {
		t.Errorf("Redacted leaks a secret: %+v", r)
	}
	if r.DatabaseURL != "postgres://svc:[redacted]@db:5432/svc" {
		t.Errorf("DatabaseURL = %q", r.DatabaseURL)
	}
}
