package trace

import (
	"encoding/json"
	"testing"
)

// FuzzParseTrace: whatever a harness writes to SVC_TRACE_FILE, parsing never
// panics and yields valid events that encode as JSON.
func FuzzParseTrace(f *testing.F) {
	for _, s := range []string{
		`{"kind":"tool_call","name":"x"}`, "{\"kind\":\"message\",\"role\":\"assistant\",\"content\":\"hi\"}\n\n{",
		`{"kind":"span","name":"s","attributes":{"a":[1,{"b":null}]}}`, `{"kind":"llm_call","costUsd":-1}`,
		`{"kind":"error"}`, "\xff\xfe", `{"kind":"artifact","name":"a","ts":"not a time"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		events := ParseTrace(data)
		for i := range events {
			if err := events[i].Validate(); err != nil {
				t.Fatalf("event %d is invalid: %v", i, err)
			}
		}
		if _, err := json.Marshal(events); err != nil {
			t.Fatalf("events do not encode: %v", err)
		}
		if _, _, err := SealEvents(events); err != nil {
			t.Fatalf("events do not seal: %v", err)
		}
	})
}
