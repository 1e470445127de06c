package api_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// otlpJS returns node and the folder whose node_modules holds the
// OpenTelemetry JS SDK and exporters (testdata/otlp-js/install.sh puts them
// in SVC_OTLP_JS, default /tmp/svc-otlp-js). Without them the test is
// skipped, except under CI=true, where it fails saying what to install.
func otlpJS(t *testing.T) (node, dir string) {
	t.Helper()
	dir = os.Getenv("SVC_OTLP_JS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "svc-otlp-js")
	}
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(dir, "node_modules", "@opentelemetry", "exporter-trace-otlp-proto", "package.json"))
	}
	if err != nil {
		const how = "install Node.js 18 or later and run api/testdata/otlp-js/install.sh (npm install of the OpenTelemetry JS exporters into $SVC_OTLP_JS)"
		if os.Getenv("CI") == "true" {
			t.Fatalf("the OpenTelemetry JS exporters cannot run (%v): %s", err, how)
		}
		t.Skipf("the OpenTelemetry JS exporters cannot run (%v): %s", err, how)
	}
	return node, dir
}

// TestOTLPWithJavaScriptExporters: the JavaScript SDK's
// exporter-trace-otlp-http (JSON) and exporter-trace-otlp-proto
// (protobuf) send spans of a run to the door of a real server on
// loopback, and the run's spans wait normalised for its seal.
func TestOTLPWithJavaScriptExporters(t *testing.T) {
	node, cache := otlpJS(t)
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(cache, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join("testdata", "otlp-js", "export.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "export.mjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, withRequireAuth())
	a := e.tenant(t, "js")
	for _, protocol := range []string{"json", "proto"} {
		t.Run(protocol, func(t *testing.T) {
			run := e.runningRun(t, a.ws, e.subjectOf(t, bearer(a.key)), "h")
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "export.mjs"))
			cmd.Env = append(os.Environ(), "SVC_OTLP_URL="+e.client.URL, "SVC_OTLP_KEY="+a.key, "SVC_RUN_ID="+run.ID, "SVC_OTLP_PROTOCOL="+protocol)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				var exit *exec.ExitError
				if errors.As(err, &exit) || ctx.Err() != nil {
					t.Fatalf("node export.mjs: %v\nstderr:\n%s\nstdout:\n%s", err, stderr.String(), out)
				}
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"llm_call:chat claude", "tool_call:fetch"}, pendingKinds(t, e, a.ws, run.ID)); diff != "" {
				t.Errorf("the run's pending spans (-want +got):\n%s", diff)
			}
		})
	}
}
