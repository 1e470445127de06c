package telemetry_test

import (
	"compress/gzip"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"svc/api"
	"svc/internal/platform/telemetry"
	"svc/internal/testing/testwait"
)

// receiver is a real OTLP/HTTP trace receiver: it takes protobuf exports,
// gzipped or not, on path, and keeps what it decoded.
type receiver struct {
	path string

	mu        sync.Mutex
	encodings []string
	spans     []receivedSpan
}

type receivedSpan struct {
	resource map[string]string
	span     *tracepb.Span
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != r.path {
		http.Error(w, "want POST "+r.path, http.StatusNotFound)
		return
	}
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		http.Error(w, "want application/x-protobuf, got "+ct, http.StatusUnsupportedMediaType)
		return
	}
	var body io.Reader = req.Body
	enc := req.Header.Get("Content-Encoding")
	if enc == "gzip" {
		gz, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = gz
	}
	data, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var export coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(data, &export); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.encodings = append(r.encodings, enc)
	for _, rs := range export.GetResourceSpans() {
		res := attrs(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				r.spans = append(r.spans, receivedSpan{resource: res, span: sp})
			}
		}
	}
	r.mu.Unlock()
	out, err := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// waitForSpan polls until a span named name has arrived.
func (r *receiver) waitForSpan(t *testing.T, name string) receivedSpan {
	t.Helper()
	var found receivedSpan
	testwait.UntilValue(t, 5*time.Second, fmt.Sprintf("span %q to reach the receiver", name), func() ([]string, bool) {
		r.mu.Lock()
		defer r.mu.Unlock()
		var names []string
		for _, s := range r.spans {
			if s.span.GetName() == name {
				found = s
				return nil, true
			}
			names = append(names, s.span.GetName())
		}
		return names, false
	})
	return found
}

func attrs(kvs []*commonpb.KeyValue) map[string]string {
	out := map[string]string{}
	for _, kv := range kvs {
		switch v := kv.GetValue().GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			out[kv.GetKey()] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			out[kv.GetKey()] = strconv.FormatInt(v.IntValue, 10)
		}
	}
	return out
}

// clearOTelEnv keeps the machine's own OTEL_* settings out of a test. The
// SDK tells a variable set to "" from an unset one, so they are unset;
// t.Setenv first so that the old values come back afterwards.
func clearOTelEnv(t *testing.T) {
	for _, k := range []string{
		"OTEL_SDK_DISABLED", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
		"OTEL_EXPORTER_OTLP_COMPRESSION", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "OTEL_SERVICE_NAME",
		"OTEL_RESOURCE_ATTRIBUTES", "OTEL_TRACES_SAMPLER", "OTEL_EXPORTER_OTLP_PROTOCOL",
	} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
}

func TestSetupExportsAPISpans(t *testing.T) {
	const (
		traceID  = "4bf92f3577b34da6a3ce929d0e0e4736"
		parentID = "00f067aa0ba902b7"
	)
	tests := []struct {
		name        string
		compression string
	}{
		{"uncompressed", ""},
		{"gzip", "gzip"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearOTelEnv(t)
			if tt.compression != "" {
				t.Setenv("OTEL_EXPORTER_OTLP_COMPRESSION", tt.compression)
			}
			rcv := &receiver{path: "/v1/traces"}
			collector := httptest.NewServer(rcv)
			defer collector.Close()

			shutdown, err := telemetry.Setup(t.Context(), "svc-test", "v1.2.3", collector.URL)
			if err != nil {
				t.Fatal(err)
			}
			s := api.New(api.Options{Logger: slog.New(slog.DiscardHandler)})
			srv := httptest.NewServer(s.Handler())
			defer srv.Close()

			req, err := http.NewRequest(http.MethodGet, srv.URL+"/openapi.json", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("traceparent", "00-"+traceID+"-"+parentID+"-01")
			res, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			// A probe route, which is deliberately not traced.
			if res, err := srv.Client().Get(srv.URL + "/healthz"); err == nil {
				res.Body.Close()
			}

			if err := shutdown(t.Context()); err != nil {
				t.Fatalf("shutdown: %v", err)
			}
			got := rcv.waitForSpan(t, "GET /openapi.json")

			if id := hex.EncodeToString(got.span.GetTraceId()); id != traceID {
				t.Errorf("trace id = %s, want the caller's %s (W3C propagation)", id, traceID)
			}
			if id := hex.EncodeToString(got.span.GetParentSpanId()); id != parentID {
				t.Errorf("parent span id = %s, want %s", id, parentID)
			}
			if k := got.span.GetKind(); k != tracepb.Span_SPAN_KIND_SERVER {
				t.Errorf("span kind = %v, want server", k)
			}
			spanAttrs := attrs(got.span.GetAttributes())
			if spanAttrs["http.route"] != "/openapi.json" {
				t.Errorf("http.route = %q, want /openapi.json; attributes %v", spanAttrs["http.route"], spanAttrs)
			}
			if spanAttrs["http.request.id"] != res.Header.Get("X-Request-Id") || spanAttrs["http.request.id"] == "" {
				t.Errorf("http.request.id = %q, want the response's X-Request-Id %q", spanAttrs["http.request.id"], res.Header.Get("X-Request-Id"))
			}
			for k, want := range map[string]string{"service.name": "svc-test", "service.version": "v1.2.3"} {
				if got.resource[k] != want {
					t.Errorf("resource %s = %q, want %q", k, got.resource[k], want)
				}
			}
			rcv.mu.Lock()
			defer rcv.mu.Unlock()
			for _, enc := range rcv.encodings {
				if enc != tt.compression {
					t.Errorf("Content-Encoding = %q, want %q", enc, tt.compression)
				}
			}
			for _, sp := range rcv.spans {
				if sp.span.GetName() == "GET /healthz" {
					t.Errorf("the probe route was traced")
				}
			}
		})
	}
}

// TestSetupHonoursTracesEndpoint: the per-signal variable is used as is
// and wins over the base endpoint, as the OTel specification has it.
func TestSetupHonoursTracesEndpoint(t *testing.T) {
	clearOTelEnv(t)
	rcv := &receiver{path: "/custom/traces"}
	collector := httptest.NewServer(rcv)
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", collector.URL+"/custom/traces")

	shutdown, err := telemetry.Setup(t.Context(), "svc-test", "v1", "http://127.0.0.1:9/ignored")
	if err != nil {
		t.Fatal(err)
	}
	_, span := otel.Tracer("test").Start(t.Context(), "probe span")
	span.End()
	if err := shutdown(t.Context()); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	rcv.waitForSpan(t, "probe span")
}

func TestSetupOff(t *testing.T) {
	tests := []struct {
		name     string
		endpoint string
		disabled string
	}{
		{"no endpoint", "", ""},
		{"SDK disabled", "http://127.0.0.1:9", "true"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearOTelEnv(t)
			if tt.disabled != "" {
				t.Setenv("OTEL_SDK_DISABLED", tt.disabled)
			}
			before := otel.GetTracerProvider()
			shutdown, err := telemetry.Setup(t.Context(), "svc-test", "v1", tt.endpoint)
			if err != nil {
				t.Fatal(err)
			}
			if otel.GetTracerProvider() != before {
				t.Errorf("Setup replaced the global tracer provider although tracing is off")
			}
			if err := shutdown(t.Context()); err != nil {
				t.Errorf("shutdown: %v", err)
			}
		})
	}
}

func TestSetupRefusesABadEndpoint(t *testing.T) {
	clearOTelEnv(t)
	for _, endpoint := range []string{"localhost:4318", "collector", "ftp://collector:4318", "http://"} {
		if _, err := telemetry.Setup(t.Context(), "svc-test", "v1", endpoint); err == nil {
			t.Errorf("Setup(%q) = nil error, want one naming the expected form", endpoint)
		}
	}
}
