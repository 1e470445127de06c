package scorecards

import (
	"errors"
	"testing"

	"svc/internal/platform/derrors"
)

// FuzzDecodeIngest: the body decoder of POST /scorecards/ingest never
// panics, and refuses with ErrInvalid only; what it accepts holds one
// valid event list per trace.
func FuzzDecodeIngest(f *testing.F) {
	for _, seed := range []string{
		`{"traces":[{"caseId":"a","trace":[{"kind":"tool_call","name":"t"}]}]}`,
		`{"dataset":{"id":"ds","version":"latest"},"traces":[{"caseId":"a","trace":[{"kind":"llm_call","inputTokens":3,"costUsd":0.1}]}]}`,
		`{"traces":[{"trace":[{"kind":"span","name":"s","attributes":{"k":1},"startTime":"2026-01-01T00:00:00Z"}]}]}`,
		`{"traces":[{"caseId":"a","trace":[{"kind":"nope"}]}]}`,
		`{"traces":[{"caseId":"a","trace":[3,null,"x"]}]}`,
		`{"traces":[{"caseId":"a","trace":[{"kind":"llm_call","inputTokens":"x"}]}]}`,
		`{"judges":[{"id":""}],"traces":[]}`,
		`{"traces":null}`,
		`[]`, `null`, ``, `{`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := DecodeIngest(body)
		if err != nil {
			if !errors.Is(err, derrors.ErrInvalid) {
				t.Fatalf("refusal %v is not ErrInvalid", err)
			}
			return
		}
		if len(req.Traces) == 0 || len(req.events) != len(req.Traces) {
			t.Fatalf("accepted %d traces with %d decoded event lists", len(req.Traces), len(req.events))
		}
		for i, evs := range req.events {
			if len(evs) != len(req.Traces[i].Trace) {
				t.Fatalf("trace %d: %d events decoded of %d", i, len(evs), len(req.Traces[i].Trace))
			}
			for j := range evs {
				if err := evs[j].Validate(); err != nil {
					t.Fatalf("trace %d event %d accepted but invalid: %v", i, j, err)
				}
			}
		}
	})
}
