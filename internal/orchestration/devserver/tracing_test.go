package devserver_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.temporal.io/sdk/client"
)

// TestTemporalCallsAreTraced: with a global TracerProvider installed (as
// telemetry.Setup does when OTEL_EXPORTER_OTLP_ENDPOINT is set), starting a
// workflow through a client from orchestration.Dial and running it on a worker
// from orchestration.NewWorker records the SDK's spans.
func TestTemporalCallsAreTraced(t *testing.T) {
	if testing.Short() {
		t.Skip("embedded Temporal: skipped in -short mode")
	}
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() { otel.SetTracerProvider(prev); _ = tp.Shutdown(context.Background()) })

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	r := startAll(ctx, t, filepath.Join(t.TempDir(), "temporal.db"))
	defer r.stop(t)
	run, err := r.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "traced", TaskQueue: taskQueue}, timerWorkflow, timerInput{Value: "v"})
	if err != nil {
		t.Fatalf("ExecuteWorkflow: %v", err)
	}
	if err := run.Get(ctx, nil); err != nil {
		t.Fatalf("workflow: %v", err)
	}
	var names []string
	for _, s := range rec.Ended() {
		names = append(names, s.Name())
	}
	for _, want := range []string{"StartWorkflow:timerWorkflow", "RunWorkflow:timerWorkflow"} {
		if !slices.Contains(names, want) {
			t.Errorf("span %q not recorded; got %q", want, names)
		}
	}
}
