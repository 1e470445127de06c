package api

import (
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"svc/auth"
)

// httpMetrics are the request metrics. Their labels are the method, the
// route pattern (never the raw path) and the status, so the number of
// series is bounded by the route table.
type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newHTTPMetrics(reg *prometheus.Registry, version string) *httpMetrics {
	labels := []string{"method", "route", "status"}
	m := &httpMetrics{
		requests: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "svc_http_requests_total",
			Help: "HTTP requests answered, by method, route pattern and status.",
		}, labels)),
		duration: register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "svc_http_request_duration_seconds",
			Help:    "Time to answer an HTTP request, by method, route pattern and status.",
			Buckets: prometheus.DefBuckets,
		}, labels)),
	}
	build := register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "svc_build_info",
		Help: "Always 1; its labels say which build is running.",
	}, []string{"version", "go_version"}))
	build.WithLabelValues(version, runtime.Version()).Set(1)
	register(reg, collectors.NewGoCollector())
	register(reg, collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// register adds c to reg, or returns the collector already there, so that
// several servers (or a registry the caller shares) do not panic.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	err := reg.Register(c)
	if err == nil {
		return c
	}
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		if existing, ok := already.ExistingCollector.(C); ok {
			return existing
		}
	}
	panic(fmt.Sprintf("api: registering metrics: %v", err))
}

func (m *httpMetrics) observe(method, route, status string, d time.Duration) {
	m.requests.WithLabelValues(method, route, status).Inc()
	m.duration.WithLabelValues(method, route, status).Observe(d.Seconds())
}

func (s *Server) metricsRoutes() []Route {
	h := echo.WrapHandler(promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{Registry: s.registry}))
	return []Route{
		{Method: http.MethodGet, Path: "/metrics", Action: auth.Public,
			Summary: "Prometheus metrics of this process", Handler: h},
	}
}
