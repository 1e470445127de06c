package pull

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"svc/internal/domain/trace"
	"svc/internal/platform/derrors"
)

// An OTLP-JSON trace query API: Jaeger's API v3 (GET
// /api/v3/traces/{trace_id} answers {"result": TracesData}, several such
// objects for a large trace; GET /api/v3/traces?query.service_name=...
// searches) or Tempo's (GET /api/v2/traces/{id} answers {"trace":
// TracesData}; /api/traces/{id} {"batches": [...]}). The endpoint is the
// query service's base URL; one whose path ends in /traces (Tempo's
// /api/traces or /api/v2/traces) has the trace id appended to it, any
// other /api/v3/traces/{id}. Decoding is traces.DecodeOTLP (protojson of
// go.opentelemetry.io/proto/otlp) and the door's FlattenSpans, so spans
// pulled from Jaeger become the same events as spans sent to the door.

// otelBody is one object of an answer: TracesData under one of the names
// the APIs use.
type otelBody struct {
	Result        json.RawMessage `json:"result"`
	Trace         json.RawMessage `json:"trace"`
	Batches       json.RawMessage `json:"batches"`
	ResourceSpans json.RawMessage `json:"resourceSpans"`
	Error         *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// decodeOTelTraces decodes an answer of a trace query API: one or more
// JSON objects, each holding TracesData. It returns the spans and the
// root spans' keys.
func decodeOTelTraces(data []byte) ([]trace.Span, map[string]bool, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var spans []trace.Span
	roots := map[string]bool{}
	for {
		var b otelBody
		err := dec.Decode(&b)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, err
		}
		if b.Error != nil && b.Error.Message != "" {
			return nil, nil, fmt.Errorf("the API answered an error: %s", clip(sanitize(b.Error.Message), 200))
		}
		var rs json.RawMessage
		switch {
		case len(b.ResourceSpans) > 0:
			rs = b.ResourceSpans
		case len(b.Batches) > 0:
			rs = b.Batches
		default:
			inner := b.Result
			if len(inner) == 0 {
				inner = b.Trace
			}
			if len(inner) == 0 || string(inner) == "null" {
				continue
			}
			var td otelBody
			if err := json.Unmarshal(inner, &td); err != nil {
				return nil, nil, err
			}
			rs = td.ResourceSpans
			if len(rs) == 0 {
				rs = td.Batches
			}
		}
		if len(rs) == 0 || string(rs) == "null" {
			continue
		}
		req, err := trace.DecodeOTLP(append(append([]byte(`{"resourceSpans":`), rs...), '}'), trace.EncodingJSON)
		if err != nil {
			return nil, nil, err
		}
		for _, r := range req.GetResourceSpans() {
			for _, ss := range r.GetScopeSpans() {
				for _, sp := range ss.GetSpans() {
					if len(sp.GetParentSpanId()) == 0 {
						roots[hex.EncodeToString(sp.GetTraceId())+"/"+hex.EncodeToString(sp.GetSpanId())] = true
					}
				}
			}
		}
		flat, _ := trace.FlattenSpans(req) // spans without valid ids are left out, as the door leaves them
		spans = append(spans, flat...)
		if len(spans) > maxSpans {
			spans = spans[:maxSpans]
			break
		}
	}
	return spans, roots, nil
}

// otelTrace is the trace of traceID among spans.
func otelTrace(traceID string, spans []trace.Span, roots map[string]bool) Trace {
	t := Trace{ID: traceID}
	want := strings.ToLower(traceID)
	for _, s := range spans {
		if s.TraceID != want {
			continue
		}
		t.Spans = append(t.Spans, s)
		if roots[s.Key] && t.FinalAnswer == "" {
			for _, k := range []string{"gen_ai.output.messages", "gen_ai.completion", "output.value"} {
				if v, ok := s.Attributes[k]; ok {
					t.FinalAnswer = answerText(v)
					break
				}
			}
		}
	}
	return t
}

func (c *Client) otelTracesPath() string {
	if strings.HasSuffix(strings.TrimRight(c.base.Path, "/"), "/traces") {
		return ""
	}
	return "/api/v3/traces"
}

func (c *Client) fetchOTel(ctx context.Context, traceID string) (Trace, error) {
	id := strings.ToLower(strings.TrimSpace(traceID))
	if b, err := hex.DecodeString(id); err != nil || len(b) != 16 {
		return Trace{}, derrors.Invalidf("runId %q: an otel source reads a trace by its id, 32 hex digits", clip(traceID, 80))
	}
	what := "reading trace " + id
	data, err := c.do(ctx, http.MethodGet, c.otelTracesPath()+"/"+id, nil, nil, what)
	if err != nil {
		return Trace{}, err
	}
	spans, roots, err := decodeOTelTraces(data)
	if err != nil {
		return Trace{}, c.decodeError(what, err)
	}
	t := otelTrace(id, spans, roots)
	if len(t.Spans) == 0 {
		return Trace{}, c.notFound(what)
	}
	return t, nil
}

// listWindow is how far back a listing of an otel source searches.
const listWindow = 24 * time.Hour

func (c *Client) listOTel(ctx context.Context, limit int) ([]Summary, error) {
	if c.cfg.Project == "" {
		return nil, derrors.Invalidf("the otel source has no project: set project to the service name whose traces to list (Jaeger's query.service_name)")
	}
	if c.otelTracesPath() == "" {
		return nil, derrors.Invalidf("listing is offered for Jaeger's API v3 only; give the Jaeger query service's base URL as endpoint")
	}
	now := time.Now().UTC()
	const what = "searching traces"
	// Jaeger v2's gateway reads query.num_traces (and answers 500 without
	// it); query.search_depth is the field's name in the API's proto,
	// which grpc-gateway-based versions read. Each ignores the other.
	data, err := c.do(ctx, http.MethodGet, "/api/v3/traces", url.Values{
		"query.service_name":   {c.cfg.Project},
		"query.start_time_min": {now.Add(-listWindow).Format(time.RFC3339Nano)},
		"query.start_time_max": {now.Format(time.RFC3339Nano)},
		"query.num_traces":     {strconv.Itoa(limit)},
		"query.search_depth":   {strconv.Itoa(limit)},
	}, nil, what)
	var e *Error
	if errors.As(err, &e) && e.Status == http.StatusNotFound && strings.Contains(e.Msg, "No traces found") {
		// Jaeger answers a search that finds nothing with 404 and this
		// message; another 404 is a wrong endpoint, and stays an error.
		return []Summary{}, nil
	}
	if err != nil {
		return nil, err
	}
	spans, _, err := decodeOTelTraces(data)
	if err != nil {
		return nil, c.decodeError(what, err)
	}
	return otelSummaries(spans, limit), nil
}

// otelSummaries groups spans by trace, newest first.
func otelSummaries(spans []trace.Span, limit int) []Summary {
	byTrace := map[string][]trace.Span{}
	var order []string
	for _, s := range spans {
		if _, ok := byTrace[s.TraceID]; !ok {
			order = append(order, s.TraceID)
		}
		byTrace[s.TraceID] = append(byTrace[s.TraceID], s)
	}
	out := make([]Summary, 0, len(order))
	for _, id := range order {
		s := Summary{TraceID: id}
		summarize(&s, byTrace[id])
		for _, sp := range byTrace[id] {
			if s.Start != nil && sp.Start.Equal(*s.Start) {
				s.Name = sp.Name
				break
			}
		}
		out = append(out, s)
	}
	// Newest first: by start time, descending.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && startOf(out[j]).After(startOf(out[j-1])); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

func startOf(s Summary) time.Time {
	if s.Start == nil {
		return time.Time{}
	}
	return *s.Start
}
