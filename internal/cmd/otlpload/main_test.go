package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// TestDoorPostsEveryExport: each export is a protobuf ExportTraceService
// request of the asked spans under its run id, posted once with the key;
// a partial success is an error.
func TestDoorPostsEveryExport(t *testing.T) {
	var posted atomic.Int64
	var partial atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" || r.Header.Get("Authorization") != "Bearer ak_test" ||
			proto.Unmarshal(body, &req) != nil || len(req.ResourceSpans[0].ScopeSpans[0].Spans) != 5 {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		posted.Add(1)
		resp := &coltracepb.ExportTraceServiceResponse{}
		if partial.Load() {
			resp.PartialSuccess = &coltracepb.ExportTracePartialSuccess{RejectedSpans: 1, ErrorMessage: "late"}
		}
		out, _ := proto.Marshal(resp)
		w.Write(out)
	}))
	defer srv.Close()
	o := options{url: srv.URL, key: "ak_test", clients: 3}
	var bodies [][]byte
	for i, id := range []string{"run-a", "run-b", "run-c", "run-d"} {
		b, err := encode(5, id, i%2 == 1, uint64(i))
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, b)
	}
	if err := door(t.Context(), o, bodies); err != nil || posted.Load() != 4 {
		t.Fatalf("door = %v after %d posts; want 4 posts", err, posted.Load())
	}
	partial.Store(true)
	if err := door(t.Context(), o, bodies[:1]); err == nil || !strings.Contains(err.Error(), "1 spans rejected") {
		t.Errorf("door with a partial success = %v, want the rejection", err)
	}
	if _, err := decodeOnly(bodies[0], 3, 5); err != nil {
		t.Errorf("decodeOnly: %v", err)
	}
}

// TestVariedMessagesDiffer: a varied export's spans each carry their own
// input message, and the same seed gives the same export.
func TestVariedMessagesDiffer(t *testing.T) {
	a, err := encode(50, "run-v", true, 7)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := encode(50, "run-v", true, 7)
	if string(a) != string(b) {
		t.Error("two exports of one seed differ")
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(a, &req); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, sp := range req.ResourceSpans[0].ScopeSpans[0].Spans {
		for _, kv := range sp.Attributes {
			if kv.Key == "gen_ai.input.messages" {
				seen[kv.Value.GetStringValue()] = true
			}
		}
	}
	if len(seen) != 50 {
		t.Errorf("%d distinct input messages in 50 spans, want 50", len(seen))
	}
}
