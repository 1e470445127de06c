// Package jaegertest runs a real Jaeger (v2, the OpenTelemetry
// Collector-based all-in-one, built from the module proxy by build.sh) for
// the otel pull kind's test: spans go in through its OTLP/HTTP receiver and
// come out of its query service's API v3, as they would from a team's own
// Jaeger.
package jaegertest

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"svc/internal/testing/testbin"
)

// Version is the Jaeger build.sh builds.
const Version = "v1.76.0"

// BinDir is where build.sh puts the binary: $SVC_JAEGER_BIN, else
// ~/.cache/svc-jaeger/<Version>.
func BinDir() string { return testbin.Dir("SVC_JAEGER_BIN", "svc-jaeger", Version) }

// Jaeger is a running Jaeger with in-memory storage.
type Jaeger struct {
	// QueryURL is the query service (its UI and API v3), http on 127.0.0.1.
	QueryURL string
	// OTLPURL is the OTLP/HTTP traces endpoint (…/v1/traces).
	OTLPURL string
}

// config is a Jaeger v2 configuration: the OTLP/HTTP receiver into memory
// storage, and the query service on its own port; nothing else listens.
const config = `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: 127.0.0.1:%[1]d
    grpc:
      endpoint: 127.0.0.1:%[2]d
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 10000
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%[3]d
processors:
  batch:
    timeout: 50ms
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`

// Start runs Jaeger for t and stops it when t ends. It skips t when the
// binary is not built (run build.sh), unless CI=true, where that is a
// failure.
func Start(t testing.TB) *Jaeger {
	t.Helper()
	bin := filepath.Join(BinDir(), "jaeger")
	testbin.Require(t, bin, fmt.Sprintf("jaegertest: jaeger is not built in %s; run traces/pull/jaegertest/build.sh (or set SVC_JAEGER_BIN)", BinDir()))
	dir := t.TempDir()
	query, grpc, otlp := testbin.FreePort(t), testbin.FreePort(t), testbin.FreePort(t)
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, config, query, grpc, otlp), 0o600); err != nil {
		t.Fatal(err)
	}
	exited, logPath := testbin.Start(t, dir, "jaeger", bin, "--config", cfg)
	j := &Jaeger{QueryURL: "http://127.0.0.1:" + strconv.Itoa(query), OTLPURL: "http://127.0.0.1:" + strconv.Itoa(otlp) + "/v1/traces"}
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-exited:
			t.Fatalf("jaegertest: jaeger exited:\n%s", testbin.Tail(logPath))
		default:
		}
		if up(j.QueryURL+"/api/v3/services") && up(j.OTLPURL) {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("jaegertest: jaeger did not answer within a minute:\n%s", testbin.Tail(logPath))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// up reports whether url answers HTTP at all.
func up(url string) bool {
	resp, err := http.Get(url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return true
}
