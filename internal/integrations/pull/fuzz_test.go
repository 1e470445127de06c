package pull

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"svc/internal/domain/trace"
)

// seed adds every recorded fixture to f's corpus.
func seed(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"observations": null}`))
}

// checkTrace asserts what every decoder promises of any input: events
// that validate and encode as JSON.
func checkTrace(t *testing.T, tr Trace) {
	for _, e := range tr.Events(trace.SpanAttrMapping{}) {
		if e.Kind != "message" && e.Name == "" {
			t.Fatalf("event without a name: %+v", e)
		}
		if _, err := json.Marshal(e); err != nil {
			t.Fatalf("event does not encode: %v", err)
		}
	}
}

func FuzzDecodeLangfuse(f *testing.F) {
	seed(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if tr, err := decodeLangfuseTrace(data); err == nil {
			checkTrace(t, tr)
		}
		_, _ = decodeLangfuseList(data)
	})
}

func FuzzDecodeLangSmith(f *testing.F) {
	seed(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		root, err1 := decodeLangSmithRun(data)
		q, err2 := decodeLangSmithQuery(data)
		if err1 == nil && err2 == nil {
			checkTrace(t, langsmithTrace(root, q.Runs))
			langsmithSummaries(q)
		}
	})
}

func FuzzDecodePhoenix(f *testing.F) {
	seed(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := decodePhoenixSpans(data)
		if err != nil {
			return
		}
		tr := Trace{ID: "t"}
		for _, s := range p.Data {
			tr.Spans = append(tr.Spans, phoenixSpanOf(s))
		}
		checkTrace(t, tr)
		phoenixSummaries(p, 10)
	})
}

func FuzzDecodeMLflow(f *testing.F) {
	seed(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if tr, err := decodeMLflowData("tr-1", data); err == nil {
			checkTrace(t, tr)
		}
		if s, err := decodeMLflowSearch(data); err == nil {
			mlflowSummaries(s)
		}
	})
}

func FuzzDecodeOTel(f *testing.F) {
	seed(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		spans, roots, err := decodeOTelTraces(data)
		if err != nil {
			return
		}
		if len(spans) > 0 {
			checkTrace(t, otelTrace(spans[0].TraceID, spans, roots))
		}
		otelSummaries(spans, 10)
	})
}
