package trace

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"

	"svc/internal/domain/eval"
)

func TestNormalize(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	end := start.Add(1500 * time.Millisecond)
	span := func(name string, attrs map[string]any) Span {
		return Span{Name: name, Start: start, End: end, Attributes: attrs}
	}
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	ignore := cmpopts.IgnoreFields(eval.TraceEvent{}, "Attributes", "TS", "StartTime", "EndTime")
	for _, tt := range []struct {
		name    string
		span    Span
		mapping SpanAttrMapping
		want    eval.TraceEvent
	}{
		{"genai chat", span("chat gpt-4o", map[string]any{
			"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.response.model": "gpt-4o-2024",
			"gen_ai.usage.input_tokens": int64(12), "gen_ai.usage.output_tokens": int64(5), "gen_ai.usage.cost": 0.25,
			"gen_ai.input.messages": `[{"role":"user"}]`, "gen_ai.output.messages": "plain text",
		}), SpanAttrMapping{}, eval.TraceEvent{Kind: eval.EventLLMCall, Name: "chat gpt-4o", Model: "gpt-4o-2024",
			InputTokens: 12, OutputTokens: 5, CostUSD: 0.25, DurationMs: 1500, Input: raw(`[{"role":"user"}]`), Output: raw(`"plain text"`)}},
		{"genai tool", span("execute_tool search", map[string]any{
			"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search", "gen_ai.tool.call.arguments": `{"q":"x"}`,
		}), SpanAttrMapping{}, eval.TraceEvent{Kind: eval.EventToolCall, Name: "search", DurationMs: 1500, Input: raw(`{"q":"x"}`)}},
		{"genai legacy usage names", span("llm", map[string]any{
			"gen_ai.system": "openai", "gen_ai.usage.prompt_tokens": "7", "gen_ai.usage.completion_tokens": int64(2),
		}), SpanAttrMapping{}, eval.TraceEvent{Kind: eval.EventLLMCall, Name: "llm", InputTokens: 7, OutputTokens: 2, DurationMs: 1500}},
		{"openinference llm", span("ChatCompletion", map[string]any{
			"openinference.span.kind": "LLM", "llm.model_name": "claude", "llm.token_count.prompt": int64(3),
			"llm.token_count.completion": int64(4), "input.value": "hi", "output.value": `{"a":1}`,
		}), SpanAttrMapping{}, eval.TraceEvent{Kind: eval.EventLLMCall, Name: "ChatCompletion", Model: "claude",
			InputTokens: 3, OutputTokens: 4, DurationMs: 1500, Input: raw(`"hi"`), Output: raw(`{"a":1}`)}},
		{"openinference tool", span("tool", map[string]any{"openinference.span.kind": "TOOL", "tool.name": "grep", "input.value": "x"}),
			SpanAttrMapping{}, eval.TraceEvent{Kind: eval.EventToolCall, Name: "grep", DurationMs: 1500, Input: raw(`"x"`)}},
		{"openinference chain is a span", span("chain", map[string]any{"openinference.span.kind": "CHAIN", "llm.model_name": "x"}),
			SpanAttrMapping{}, eval.TraceEvent{Kind: eval.EventSpan, Name: "chain"}},
		{"error status", Span{Name: "step", Error: true, StatusMessage: "boom", Attributes: map[string]any{"gen_ai.operation.name": "chat"}},
			SpanAttrMapping{}, eval.TraceEvent{Kind: eval.EventError, Name: "step", Code: "SPAN_ERROR", Message: "boom"}},
		{"error from exception event", Span{Name: "step", Error: true, ExceptionMessage: "KeyError"},
			SpanAttrMapping{}, eval.TraceEvent{Kind: eval.EventError, Name: "step", Code: "SPAN_ERROR", Message: "KeyError"}},
		{"plain span", span("http GET", map[string]any{"http.method": "GET"}), SpanAttrMapping{},
			eval.TraceEvent{Kind: eval.EventSpan, Name: "http GET"}},
		{"mapping: kind by span name and fields first", span("my_llm", map[string]any{
			"acme.model": "m1", "gen_ai.request.model": "ignored", "acme.in": int64(9),
		}), SpanAttrMapping{SpanKinds: map[string]string{"my_llm": eval.EventLLMCall},
			Fields: map[string][]string{"model": {"acme.model"}, "inputTokens": {"acme.in"}}},
			eval.TraceEvent{Kind: eval.EventLLMCall, Name: "my_llm", Model: "m1", InputTokens: 9, DurationMs: 1500}},
		{"negative usage is dropped", span("llm", map[string]any{"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": int64(-4)}),
			SpanAttrMapping{}, eval.TraceEvent{Kind: eval.EventLLMCall, Name: "llm", DurationMs: 1500}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := Normalize(tt.span, tt.mapping)
			if diff := cmp.Diff(tt.want, got, ignore); diff != "" {
				t.Errorf("Normalize (-want +got):\n%s", diff)
			}
			if err := got.Validate(); err != nil {
				t.Errorf("the event does not validate: %v", err)
			}
			if got.Kind == eval.EventSpan && (got.StartTime == nil) != tt.span.Start.IsZero() {
				t.Errorf("span StartTime = %v, want the span's start", got.StartTime)
			}
		})
	}
}

func TestMappingOverlayAndValidate(t *testing.T) {
	spec := SpanAttrMapping{Fields: map[string][]string{"model": {"a"}, "toolName": {"t"}}, SpanKinds: map[string]string{"x": "span"}}
	over := SpanAttrMapping{Fields: map[string][]string{"model": {"b"}}, SpanKinds: map[string]string{"x": "llm_call", "y": "tool_call"}}
	want := SpanAttrMapping{Fields: map[string][]string{"model": {"b"}, "toolName": {"t"}}, SpanKinds: map[string]string{"x": "llm_call", "y": "tool_call"}}
	if diff := cmp.Diff(want, spec.Overlay(over)); diff != "" {
		t.Errorf("Overlay (-want +got):\n%s", diff)
	}
	for _, bad := range []SpanAttrMapping{
		{Fields: map[string][]string{"nope": {"a"}}},
		{Fields: map[string][]string{"model": {""}}},
		{SpanKinds: map[string]string{"x": "message"}},
	} {
		if bad.Validate() == nil {
			t.Errorf("Validate(%+v) = nil, want an error", bad)
		}
	}
	m, err := MappingFromMeta(map[string]any{MappingMetaKey: map[string]any{"fields": map[string]any{"model": []any{"k"}}}})
	if err != nil || m.Fields["model"][0] != "k" {
		t.Errorf("MappingFromMeta = %+v, %v", m, err)
	}
	if _, err := MappingFromMeta(map[string]any{MappingMetaKey: "nonsense"}); err == nil {
		t.Error("MappingFromMeta(a string) = nil error, want one")
	}
}

func TestThresholdCrossings(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	later := at.Add(3 * time.Second)
	events := []eval.TraceEvent{
		{Kind: eval.EventLLMCall, TS: &at, InputTokens: 100, OutputTokens: 50, CostUSD: 0.5},
		{Kind: eval.EventToolCall, Name: "a"}, {Kind: eval.EventToolCall, Name: "b"},
		{Kind: eval.EventError, Message: "x"},
		{Kind: eval.EventSpan, Name: "s", StartTime: &at, EndTime: &later},
	}
	m := Measure(events, 0)
	wantM := TraceMetrics{Events: 5, Errors: 1, ToolCalls: 2, Tokens: 150, CostUSD: 0.5, DurationMs: 3000}
	if diff := cmp.Diff(wantM, m); diff != "" {
		t.Errorf("Measure (-want +got):\n%s", diff)
	}
	i := func(v int64) *int64 { return &v }
	f := func(v float64) *float64 { return &v }
	th := Thresholds{MaxEvents: i(5), MaxErrors: i(0), MaxToolCalls: i(1), MaxTokens: i(1000), MaxCostUSD: f(0.1), MaxDurationMs: i(2000)}
	got := th.Crossings(m)
	want := []Crossing{{"maxErrors", 0, 1}, {"maxToolCalls", 1, 2}, {"maxCostUsd", 0.1, 0.5}, {"maxDurationMs", 2000, 3000}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Crossings (-want +got):\n%s", diff)
	}
	if err := (Thresholds{MaxErrors: i(-1)}).Validate(); err == nil {
		t.Error("Validate(maxErrors -1) = nil, want an error")
	}
	if got := (Thresholds{}).Crossings(m); len(got) != 0 {
		t.Errorf("no bounds crossed %v", got)
	}
}

// A span's text reaches the trajectory without NUL characters (neither
// PostgreSQL nor the store's JSON keep them) and its attributes' strings
// within maxSpanAttrBytes, whatever the exporter sent.
func TestFlattenSpansBoundsText(t *testing.T) {
	big := strings.Repeat("x", 60<<10)
	attrs := []*commonpb.KeyValue{str("nul\x00key", "a\x00b")}
	for i := range 10 {
		attrs = append(attrs, str(fmt.Sprintf("big.%d", i), big))
	}
	req := request("run_1", attrs...)
	req.ResourceSpans[0].ScopeSpans[0].Spans[0].Name = "na\x00me"
	spans, bad := FlattenSpans(req)
	if len(spans) != 1 || len(bad) != 0 {
		t.Fatalf("FlattenSpans = %d spans, %v", len(spans), bad)
	}
	e := Normalize(spans[0], SpanAttrMapping{})
	raw, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), `\u0000`) {
		t.Errorf("the event holds a NUL: %.200s", raw)
	}
	if e.Name != "name" || e.Attributes["nulkey"] != "ab" {
		t.Errorf("name %q, attributes[nulkey] %v; want the NULs dropped", e.Name, e.Attributes["nulkey"])
	}
	if len(raw) > maxSpanAttrBytes+16<<10 {
		t.Errorf("the event is %d bytes, want the attributes within %d", len(raw), maxSpanAttrBytes)
	}
}
