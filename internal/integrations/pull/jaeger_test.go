package pull

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"svc/internal/domain/eval"
	"svc/internal/domain/trace"
	"svc/internal/integrations/pull/jaegertest"
	"svc/internal/testing/testwait"
)

// TestPullFromRealJaeger: an agent's spans, sent by the OpenTelemetry Go
// SDK to a real Jaeger (v2, memory storage), are listed by the otel kind
// through Jaeger's query API v3 under their service name, and fetched as
// the events a harness's spans make: the chat with its model and tokens,
// the tool call, the failed step.
func TestPullFromRealJaeger(t *testing.T) {
	j := jaegertest.Start(t)
	ctx := t.Context()

	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(j.OTLPURL), otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "qa-agent"))))
	tr := tp.Tracer("agent")
	rctx, root := tr.Start(ctx, "invoke_agent")
	_, chat := tr.Start(rctx, "chat gpt-4o")
	chat.SetAttributes(attribute.String("gen_ai.operation.name", "chat"), attribute.String("gen_ai.request.model", "gpt-4o"),
		attribute.Int("gen_ai.usage.input_tokens", 812), attribute.Int("gen_ai.usage.output_tokens", 64))
	time.Sleep(2 * time.Millisecond)
	chat.End()
	_, tool := tr.Start(rctx, "execute_tool calculator")
	tool.SetAttributes(attribute.String("gen_ai.operation.name", "execute_tool"), attribute.String("gen_ai.tool.name", "calculator"),
		attribute.String("gen_ai.tool.call.arguments", `{"expression":"2+2"}`))
	time.Sleep(2 * time.Millisecond)
	tool.End()
	_, failed := tr.Start(rctx, "read file")
	failed.SetStatus(codes.Error, "no such file")
	failed.End()
	root.End()
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatalf("exporting to Jaeger: %v", err)
	}
	traceID := root.SpanContext().TraceID().String()

	c, err := New(Config{Kind: KindOTel, Endpoint: j.QueryURL, Project: "qa-agent"}, &http.Client{Timeout: 10 * time.Second}, "")
	if err != nil {
		t.Fatal(err)
	}
	// Jaeger stores what its receiver's batch hands on: wait for it.
	var got Trace
	testwait.UntilValue(t, 30*time.Second, "the trace with its 4 spans in Jaeger", func() (int, bool) {
		got, err = c.Fetch(ctx, traceID)
		return len(got.Spans), err == nil && len(got.Spans) == 4
	})
	var kinds []string
	for _, e := range got.Events(trace.SpanAttrMapping{}) {
		kinds = append(kinds, e.Kind+":"+e.Name)
		if err := e.Validate(); err != nil {
			t.Errorf("event %+v does not validate: %v", e, err)
		}
	}
	for _, want := range []string{"span:invoke_agent", "llm_call:chat gpt-4o", "tool_call:calculator", "error:read file"} {
		if !slices.Contains(kinds, want) {
			t.Errorf("events %v lack %s", kinds, want)
		}
	}
	if _, u := eval.Extract(got.Events(trace.SpanAttrMapping{}), ""); u.InputTokens != 812 || u.OutputTokens != 64 {
		t.Errorf("usage %+v, want 812 input and 64 output tokens", u)
	}

	list, err := c.List(ctx, 10)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	i := slices.IndexFunc(list, func(s Summary) bool { return s.TraceID == traceID })
	if i < 0 {
		t.Fatalf("List = %+v, want trace %s", list, traceID)
	}
	if s := list[i]; s.Spans != 4 || s.Name != "invoke_agent" || s.InputTokens != 812 || s.Status != "error" {
		t.Errorf("summary %+v, want 4 spans of invoke_agent, 812 input tokens, status error", s)
	}
}
