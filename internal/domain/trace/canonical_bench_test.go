package trace

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
)

// benchEvents are realistic ledger events: a tool call with JSON
// arguments and result, a long assistant message, and a span with nested
// attributes (what the OTLP door normalises a GenAI span to).
func benchEvents() map[string]eval.TraceEvent {
	ts := time.Date(2026, 11, 28, 9, 30, 12, 345678000, time.UTC)
	end := ts.Add(812 * time.Millisecond)
	para := "The OTLP door decodes each export, flattens its spans and seals a trajectory once its trace is quiet. " +
		"It keeps \"spans\" as they came, with their attributes;\nnumbers such as 0.0031 and 1e-7 are written exactly.\n\n"
	return map[string]eval.TraceEvent{
		"tool-call": {Kind: eval.EventToolCall, Name: "search_docs", TS: &ts, DurationMs: 412.5,
			Input:  json.RawMessage(`{"query":"how does the ledger seal a trajectory?","filters":{"kind":["doc","issue"],"since":"2026-01-01"},"limit":10,"rerank":true,"threshold":0.75}`),
			Output: json.RawMessage(`{"hits":[{"id":"docs/traces.md#sealing","score":0.93,"title":"Sealing"},{"id":"issue/16","score":0.81,"title":"The OTLP door"}],"took_ms":37}`)},
		"assistant-message": {Kind: eval.EventMessage, Role: "assistant", TS: &ts, Content: strings.Repeat(para, 20)},
		"span-nested-attrs": {Kind: eval.EventLLMCall, Name: "chat gpt-4o", Model: "gpt-4o", StartTime: &ts, EndTime: &end, TS: &ts,
			InputTokens: 812, OutputTokens: 143, CostUSD: 0.0031, DurationMs: 812,
			Attributes: map[string]any{
				"gen_ai.operation.name": "chat", "gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o",
				"gen_ai.request.temperature": 0.2, "gen_ai.request.max_tokens": int64(1024), "gen_ai.response.id": "chatcmpl-9f2a",
				"gen_ai.response.finish_reasons": []any{"stop"}, "http.status_code": int64(200), "service.name": "agent",
				"llm.request": map[string]any{"tools": []any{map[string]any{"name": "search_docs", "parameters": map[string]any{
					"type": "object", "required": []any{"query"}, "properties": map[string]any{"query": map[string]any{"type": "string"}, "limit": map[string]any{"type": "integer"}}}}},
					"stream": false, "seed": int64(42)},
			}},
	}
}

// BenchmarkCanonicalEvent: one event's canonical bytes by the fast writer
// (AppendCanonicalEvent, what the seal of pending spans calls) against the
// generic path (registry.CanonicalJSON: marshal, decode into a tree, write
// the tree); the stored form (AppendCanonicalStoredEvent, the form the
// OTLP door keeps for each span) against its generic path (a trip through
// the event's JSON, then registry.CanonicalJSON); and a 100-event trajectory sealed by
// SealEvents against registry.CanonicalJSON of the events (the ledger's
// sealing path). docs/benchmarks.md has the figures.
//
//	go test -run '^$' -bench CanonicalEvent -benchmem -count 4 ./internal/domain/trace
func BenchmarkCanonicalEvent(b *testing.B) {
	events := benchEvents()
	for _, name := range []string{"tool-call", "assistant-message", "span-nested-attrs"} {
		e := events[name]
		b.Run(name+"/fast", func(b *testing.B) {
			var buf []byte
			for b.Loop() {
				var err error
				if buf, err = AppendCanonicalEvent(buf[:0], &e); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(len(buf)))
		})
		b.Run(name+"/generic", func(b *testing.B) {
			var n int
			for b.Loop() {
				c, err := registry.CanonicalJSON(&e)
				if err != nil {
					b.Fatal(err)
				}
				n = len(c)
			}
			b.SetBytes(int64(n))
		})
		b.Run(name+"/stored-fast", func(b *testing.B) {
			var buf []byte
			for b.Loop() {
				var err error
				if buf, err = AppendCanonicalStoredEvent(buf[:0], &e); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(len(buf)))
		})
		b.Run(name+"/stored-generic", func(b *testing.B) {
			var n int
			for b.Loop() {
				raw, err := json.Marshal(&e)
				if err != nil {
					b.Fatal(err)
				}
				var x eval.TraceEvent
				if err := json.Unmarshal(raw, &x); err != nil {
					b.Fatal(err)
				}
				c, err := registry.CanonicalJSON(&x)
				if err != nil {
					b.Fatal(err)
				}
				n = len(c)
			}
			b.SetBytes(int64(n))
		})
	}
	var trajectory []eval.TraceEvent
	for i := range 100 {
		trajectory = append(trajectory, events[[]string{"tool-call", "assistant-message", "span-nested-attrs"}[i%3]])
	}
	b.Run("seal-100/fast", func(b *testing.B) {
		var n int
		for b.Loop() {
			c, _, err := SealEvents(trajectory)
			if err != nil {
				b.Fatal(err)
			}
			n = len(c)
		}
		b.SetBytes(int64(n))
	})
	b.Run("seal-100/generic", func(b *testing.B) {
		var n int
		for b.Loop() {
			c, err := registry.CanonicalJSON(trajectory)
			if err != nil {
				b.Fatal(err)
			}
			_ = registry.Digest(c)
			n = len(c)
		}
		b.SetBytes(int64(n))
	})
}
