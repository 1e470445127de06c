package api_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"svc/api"
	"svc/internal/testing/testwait"
)

var generatedID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

func TestRequestID(t *testing.T) {
	tests := []struct {
		name     string
		incoming string
		keep     bool
	}{
		{"none", "", false},
		{"sane kept", "req-42.a_b:c", true},
		{"uuid kept", "3f1c2a9e-7b4d-4c1e-9a57-2d9b1f0e6c11", true},
		{"longest kept", strings.Repeat("a", 128), true},
		{"too long replaced", strings.Repeat("a", 129), false},
		{"space replaced", "has space", false},
		{"log injection replaced", "x\",\"level\":\"ERROR", false},
	}
	_, client, _ := newServer(t, api.Options{})
	seen := map[string]bool{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, path := range []string{"/healthz", "/no/such/route"} {
				req := client.NewRequest(t, http.MethodGet, path, nil)
				if tt.incoming != "" {
					req.Header.Set("X-Request-Id", tt.incoming)
				}
				res := client.Do(t, req)
				got := res.Header.Get("X-Request-Id")
				switch {
				case tt.keep && got != tt.incoming:
					t.Errorf("%s: X-Request-Id = %q, want the incoming %q", path, got, tt.incoming)
				case !tt.keep && (got == tt.incoming || !generatedID.MatchString(got) || seen[got]):
					t.Errorf("%s: X-Request-Id = %q, want a new sane id", path, got)
				}
				seen[got] = true
				if res.Status >= 400 {
					if info := res.ErrorInfo(t); info.RequestID != got {
						t.Errorf("%s: error requestId %q != header %q", path, info.RequestID, got)
					}
				}
			}
		})
	}
}

func TestAccessLog(t *testing.T) {
	const (
		tokenSecret = "secret-bearer-token"
		querySecret = "secret-query-value"
		bodySecret  = "secret-body-value"
	)
	s, client, logs := newServer(t, api.Options{})
	registerBind(s, client)

	req := client.NewRequest(t, http.MethodGet, "/openapi.json?token="+querySecret, nil)
	req.Header.Set("Authorization", "Bearer "+tokenSecret)
	req.Header.Set("X-Request-Id", "access-log-1")
	res := client.Do(t, req)

	rec := logs.Find(t, "for GET /openapi.json", func(rec map[string]any) bool {
		return rec["msg"] == "http request" && rec["request_id"] == "access-log-1"
	})
	for k, want := range map[string]any{
		"level": "INFO", "method": "GET", "route": "/openapi.json", "status": float64(200), "bytes": float64(len(res.Body)),
	} {
		if rec[k] != want {
			t.Errorf("log %s = %v, want %v", k, rec[k], want)
		}
	}
	if d, ok := rec["duration_ms"].(float64); !ok || d < 0 {
		t.Errorf("log duration_ms = %v, want a non-negative number", rec["duration_ms"])
	}

	breq := client.NewRequest(t, http.MethodPost, "/test/bind", strings.NewReader(`{"name":"`+bodySecret+`"}`))
	breq.Header.Set("Cookie", "session="+tokenSecret)
	breq.Header.Set("X-Request-Id", "access-log-2")
	client.Do(t, breq)
	logs.Find(t, "for POST /test/bind", func(rec map[string]any) bool {
		return rec["request_id"] == "access-log-2" && rec["route"] == "unmatched"
	})

	for _, secret := range []string{tokenSecret, querySecret, bodySecret} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the log holds %q:\n%s", secret, logs.String())
		}
	}
}

func TestProbeRoutesLogAtDebug(t *testing.T) {
	_, client, logs := newServer(t, api.Options{})
	req := client.NewRequest(t, http.MethodGet, "/healthz", nil)
	req.Header.Set("X-Request-Id", "probe-1")
	client.Do(t, req)
	rec := logs.Find(t, "for the probe", func(rec map[string]any) bool { return rec["request_id"] == "probe-1" })
	if rec["level"] != "DEBUG" {
		t.Errorf("probe logged at %v, want DEBUG", rec["level"])
	}
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	_, client, _ := newServer(t, api.Options{Registry: reg, Version: "v-test"})
	client.Get(t, "/healthz")
	client.Get(t, "/healthz")
	client.Get(t, "/no/such/route/42")
	client.Do(t, client.NewRequest(t, http.MethodDelete, "/healthz", nil))

	want := []struct {
		method, route, status string
		count                 float64
	}{
		{"GET", "/healthz", "200", 2},
		{"GET", "unmatched", "404", 1},
		{"DELETE", "unmatched", "405", 1},
	}
	var families map[string]*dto.MetricFamily
	testwait.UntilValue(t, 5*time.Second, "the request counts in /metrics", func() (string, bool) {
		res := client.Get(t, "/metrics")
		if res.Status != http.StatusOK {
			t.Fatalf("status = %d, want 200", res.Status)
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		var err error
		families, err = parser.TextToMetricFamilies(strings.NewReader(string(res.Body)))
		if err != nil {
			t.Fatalf("metrics are not the text format: %v", err)
		}
		return "\n" + string(res.Body), counterValue(families["svc_http_requests_total"], "DELETE", "unmatched", "405") == 1
	})

	for _, w := range want {
		if got := counterValue(families["svc_http_requests_total"], w.method, w.route, w.status); got != w.count {
			t.Errorf("svc_http_requests_total{method=%q,route=%q,status=%q} = %v, want %v", w.method, w.route, w.status, got, w.count)
		}
	}
	hist := families["svc_http_request_duration_seconds"]
	var observed uint64
	for _, m := range hist.GetMetric() {
		if labels(m)["route"] == "/healthz" && labels(m)["status"] == "200" {
			observed = m.GetHistogram().GetSampleCount()
		}
	}
	if observed != 2 {
		t.Errorf("svc_http_request_duration_seconds{route=/healthz} count = %d, want 2", observed)
	}
	for _, m := range families["svc_http_requests_total"].GetMetric() {
		if r := labels(m)["route"]; strings.Contains(r, "/no/such") {
			t.Errorf("a raw path became a route label: %q", r)
		}
	}
	for _, name := range []string{"go_goroutines", "go_memstats_alloc_bytes", "process_open_fds"} {
		if families[name] == nil {
			t.Errorf("runtime metric %s is missing", name)
		}
	}
	if b := families["svc_build_info"]; b == nil || labels(b.GetMetric()[0])["version"] != "v-test" {
		t.Errorf("svc_build_info = %v, want version v-test", b)
	}
}

func TestTwoServersShareARegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	api.New(api.Options{Registry: reg})
	api.New(api.Options{Registry: reg}) // must not panic on the second registration
}

func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

func counterValue(f *dto.MetricFamily, method, route, status string) float64 {
	for _, m := range f.GetMetric() {
		l := labels(m)
		if l["method"] == method && l["route"] == route && l["status"] == status {
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// TestHeaderLimit: header fields past api.MaxHeaderBytes are refused with
// 431 in the one error shape, before authentication reads them; up to the
// limit they pass.
func TestHeaderLimit(t *testing.T) {
	_, client, _ := newServer(t, api.Options{})
	tests := []struct {
		name   string
		header string
		size   int
		status int
	}{
		{"100 KB custom header", "X-Padding", 100 << 10, http.StatusRequestHeaderFieldsTooLarge},
		{"100 KB Authorization", "Authorization", 100 << 10, http.StatusRequestHeaderFieldsTooLarge},
		{"just under the limit", "X-Padding", api.MaxHeaderBytes - 1024, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := client.NewRequest(t, http.MethodGet, "/healthz", nil)
			req.Header.Set(tt.header, "Bearer "+strings.Repeat("a", tt.size))
			res := client.Do(t, req)
			if res.Status != tt.status {
				t.Fatalf("status %d, want %d; body %.300s", res.Status, tt.status, res.Body)
			}
			if tt.status < 400 {
				return
			}
			info := res.ErrorInfo(t)
			if info.Code != api.CodeBadRequest || info.RequestID != res.Header.Get("X-Request-Id") ||
				info.Details["limitBytes"] != float64(api.MaxHeaderBytes) || len(info.Message) > 200 {
				t.Errorf("error = %+v, want BAD_REQUEST naming the limit, with the request id", info)
			}
		})
	}
}
