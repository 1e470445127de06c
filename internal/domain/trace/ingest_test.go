package trace

import (
	"testing"

	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
)

func TestIngestResult(t *testing.T) {
	c := registry.EvalCase{ID: "a", Task: "say right", Expected: "right", Graders: []registry.Grader{
		{ID: "exact"}, {ID: "tool_calls", Params: map[string]any{"name": "lookup"}}, {ID: "usd", Params: map[string]any{"max": 0.5}}}}
	run := eval.Run{ID: "run_1", CaseID: "a", Case: &c, Origin: &eval.Origin{Source: SourceImport}}
	if !Imported(run) {
		t.Fatal("a run of origin import is not Imported")
	}
	events := []eval.TraceEvent{
		{Kind: eval.EventToolCall, Name: "lookup"},
		{Kind: eval.EventLLMCall, CostUSD: 0.75},
		{Kind: eval.EventMessage, Role: "assistant", Content: "right"},
	}
	r := IngestResult(run, Dispatch{Harness: registry.Ref{ID: "h", Version: "1.0.0"}}, events)
	if r.Provenance == nil || !r.Provenance.Ingested() || r.Provenance.Attestation != eval.AttestationSelfReported || r.Harness != "h@1.0.0" || r.Process != nil || r.Execution != nil {
		t.Errorf("result = provenance %+v, harness %s, process %+v, execution %+v; want ingested, h@1.0.0, no process or execution", r.Provenance, r.Harness, r.Process, r.Execution)
	}
	got := map[string]bool{}
	for _, s := range r.Scores {
		got[s.Metric] = s.Pass != nil && *s.Pass
	}
	want := map[string]bool{"exact": true, "tool_calls": true, "usd": false}
	for m, p := range want {
		if g, ok := got[m]; !ok || g != p {
			t.Errorf("score %s pass = %v (present %v), want %v; scores %+v", m, g, ok, p, r.Scores)
		}
	}
	if r.Pass {
		t.Error("a result over its usd bound passes")
	}
	// A case without graders (a _traces case) gets measurements only.
	bare := IngestResult(eval.Run{CaseID: "x", Case: &registry.EvalCase{ID: "x"}}, Dispatch{}, events)
	if len(bare.Scores) != 2 || !bare.Pass {
		t.Errorf("bare scores %+v pass %v, want the two default measurements and a pass", bare.Scores, bare.Pass)
	}
}
