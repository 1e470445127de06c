// Package telemetry sets up svc's own OpenTelemetry tracing: the spans of
// its HTTP API (and whatever else uses the global tracer provider), sent
// over OTLP/HTTP to a collector of the operator's choice.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// tracesPath is where OTLP/HTTP receivers take traces, relative to the base
// URL that OTEL_EXPORTER_OTLP_ENDPOINT names.
const tracesPath = "/v1/traces"

// Setup installs a global TracerProvider that exports spans to endpoint
// with OTLP/HTTP, and the W3C trace-context and baggage propagators, so
// incoming traceparent headers continue the caller's trace. endpoint is a
// base URL (http://collector:4318), as in OTEL_EXPORTER_OTLP_ENDPOINT; the
// exporter sends to its /v1/traces. The other standard variables apply:
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (which wins over endpoint), _HEADERS,
// _COMPRESSION, _TIMEOUT, _CERTIFICATE, OTEL_TRACES_SAMPLER, OTEL_BSP_*,
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
//
// With an empty endpoint (and no OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), or
// with OTEL_SDK_DISABLED=true, tracing stays off: nothing global changes
// and shutdown does nothing. Call Setup before api.New, and call shutdown on
// the way out: it flushes the spans still buffered.
func Setup(ctx context.Context, serviceName, version string, endpoint string) (shutdown func(context.Context) error, err error) {
	noop := func(context.Context) error { return nil }
	perSignal := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") || (endpoint == "" && perSignal == "") {
		return noop, nil
	}

	var opts []otlptracehttp.Option
	if perSignal == "" {
		// The exporter itself would read OTEL_EXPORTER_OTLP_ENDPOINT, but
		// endpoint may come from elsewhere (a flag, a test), so apply it
		// with the same meaning: a base URL under which /v1/traces lives.
		u, err := url.Parse(endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return noop, fmt.Errorf("telemetry.Setup: OTLP endpoint %q: want a URL such as http://collector:4318", endpoint)
		}
		u.Path = path.Join("/", u.Path, tracesPath)
		opts = append(opts, otlptracehttp.WithEndpointURL(u.String()))
	}
	exporter, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return noop, fmt.Errorf("telemetry.Setup: creating the OTLP exporter: %w", err)
	}

	// Later options win: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES may
	// rename the service, as operators expect of every OTel SDK.
	res, err := resource.New(ctx,
		resource.WithTelemetrySDK(),
		resource.WithAttributes(
			attribute.String("service.name", serviceName),
			attribute.String("service.version", version),
		),
		resource.WithFromEnv(),
	)
	if err != nil && res == nil {
		return noop, errors.Join(fmt.Errorf("telemetry.Setup: describing the resource: %w", err), exporter.Shutdown(ctx))
	}
	if err != nil {
		// A malformed OTEL_RESOURCE_ATTRIBUTES: keep what could be read.
		slog.WarnContext(ctx, "telemetry: part of the resource description was ignored", slog.String("error", err.Error()))
	}

	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exporter),
		sdktrace.WithResource(res),
	)
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	// Export failures would otherwise go to the SDK's own stderr logger,
	// outside the JSON log operators collect.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		slog.Warn("telemetry: exporting spans failed", slog.String("error", err.Error()))
	}))
	return func(ctx context.Context) error {
		if err := tp.Shutdown(ctx); err != nil {
			return fmt.Errorf("telemetry: flushing spans: %w", err)
		}
		return nil
	}, nil
}
