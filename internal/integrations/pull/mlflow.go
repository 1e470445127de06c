package pull

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"svc/internal/domain/trace"
	"svc/internal/platform/derrors"
)

// MLflow's tracing REST API (https://mlflow.org/docs/latest/api_reference/rest-api.html):
// GET /api/2.0/mlflow/traces/{request_id}/info reads a trace's info,
// GET /api/2.0/mlflow/get-trace-artifact?request_id= its spans (the
// traces.json artifact: {"spans": [...]}, MLflow 2's span dictionaries or
// MLflow 3's OTLP-like ones), GET /api/2.0/mlflow/traces searches an
// experiment's traces (experiment_ids, filter, max_results, order_by).
// Span attribute values are JSON-encoded strings (mlflow.spanType is
// "\"LLM\""). A token is sent as a bearer token, user:password as basic.

type mlflowKV struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

type mlflowTraceInfo struct {
	RequestID       string     `json:"request_id"`
	TraceID         string     `json:"trace_id"` // MLflow 3
	ExperimentID    string     `json:"experiment_id"`
	TimestampMs     any        `json:"timestamp_ms"`
	ExecutionTimeMs any        `json:"execution_time_ms"`
	Status          string     `json:"status"`
	State           string     `json:"state"` // MLflow 3
	RequestMetadata []mlflowKV `json:"request_metadata"`
	Tags            []mlflowKV `json:"tags"`
}

func (i mlflowTraceInfo) id() string {
	if i.RequestID != "" {
		return i.RequestID
	}
	return i.TraceID
}

type mlflowSpan struct {
	Name    string `json:"name"`
	Context struct {
		SpanID  string `json:"span_id"`
		TraceID string `json:"trace_id"`
	} `json:"context"`
	ParentID      *string        `json:"parent_id"`
	StartTime     any            `json:"start_time"`
	EndTime       any            `json:"end_time"`
	StatusCode    string         `json:"status_code"`
	StatusMessage string         `json:"status_message"`
	Attributes    map[string]any `json:"attributes"`
	Events        []struct {
		Name       string         `json:"name"`
		Attributes map[string]any `json:"attributes"`
	} `json:"events"`
	// MLflow 3's OTLP-like form.
	TraceID           string `json:"trace_id"`
	SpanID            string `json:"span_id"`
	ParentSpanID      string `json:"parent_span_id"`
	StartTimeUnixNano any    `json:"start_time_unix_nano"`
	EndTimeUnixNano   any    `json:"end_time_unix_nano"`
	Status            *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"status"`
}

type mlflowData struct {
	Spans []mlflowSpan `json:"spans"`
}

// decodeMLflowData decodes a trace's traces.json artifact.
func decodeMLflowData(traceID string, data []byte) (Trace, error) {
	var d mlflowData
	if err := json.Unmarshal(data, &d); err != nil {
		return Trace{}, err
	}
	t := Trace{ID: traceID}
	for _, s := range d.Spans {
		if len(t.Spans) >= maxSpans {
			break
		}
		sp, root, out := mlflowSpanOf(traceID, s)
		t.Spans = append(t.Spans, sp)
		if root && out != nil {
			t.FinalAnswer = answerText(out)
		}
	}
	return t, nil
}

// mlflowID is an MLflow span id as hex: MLflow 2 writes "0x<hex>",
// MLflow 3 base64 of the bytes.
func mlflowID(s string) string {
	if h, ok := strings.CutPrefix(s, "0x"); ok {
		return h
	}
	if b, err := base64.StdEncoding.DecodeString(s); err == nil && (len(b) == 8 || len(b) == 16) {
		return hex.EncodeToString(b)
	}
	return s
}

// mlflowSpanOf converts a span; it reports whether the span is the root
// and the root's outputs.
func mlflowSpanOf(traceID string, s mlflowSpan) (trace.Span, bool, any) {
	attrs := map[string]any{}
	for k, v := range s.Attributes {
		if str, ok := v.(string); ok {
			var decoded any
			if json.Unmarshal([]byte(str), &decoded) == nil {
				v = decoded
			}
		}
		attrs[k] = v
	}
	kind := strings.ToUpper(str(attrs["mlflow.spanType"]))
	inputs, outputs := attrs["mlflow.spanInputs"], attrs["mlflow.spanOutputs"]
	switch kind {
	case "LLM", "CHAT_MODEL", "EMBEDDING":
		op := "chat"
		if kind == "EMBEDDING" {
			op = "embeddings"
		}
		attrs["gen_ai.operation.name"] = op
		if usage, ok := attrs["mlflow.chat.tokenUsage"].(map[string]any); ok {
			if n := num(usage["input_tokens"]); n > 0 {
				attrs["gen_ai.usage.input_tokens"] = n
			}
			if n := num(usage["output_tokens"]); n > 0 {
				attrs["gen_ai.usage.output_tokens"] = n
			}
		}
		for _, k := range []string{"mlflow.llm.model", "model", "model_name"} {
			if m := str(attrs[k]); m != "" {
				attrs["gen_ai.request.model"] = m
				break
			}
		}
		if params, ok := attrs["invocation_params"].(map[string]any); ok && attrs["gen_ai.request.model"] == nil {
			if m := str(params["model"]); m != "" {
				attrs["gen_ai.request.model"] = m
			}
		}
		if inputs != nil {
			attrs["gen_ai.input.messages"] = inputs
		}
		if outputs != nil {
			attrs["gen_ai.output.messages"] = outputs
		}
	case "TOOL":
		attrs["gen_ai.operation.name"] = "execute_tool"
		attrs["gen_ai.tool.name"] = s.Name
		if inputs != nil {
			attrs["gen_ai.tool.call.arguments"] = inputs
		}
		if outputs != nil {
			attrs["gen_ai.tool.call.result"] = outputs
		}
	default:
		if inputs != nil {
			attrs["input.value"] = inputs
		}
		if outputs != nil {
			attrs["output.value"] = outputs
		}
	}
	spanID, parent := s.Context.SpanID, ""
	if s.ParentID != nil {
		parent = *s.ParentID
	}
	start, end := unixNano(s.StartTime), unixNano(s.EndTime)
	failed, msg := strings.EqualFold(s.StatusCode, "ERROR"), s.StatusMessage
	if spanID == "" { // MLflow 3
		spanID, parent = s.SpanID, s.ParentSpanID
		start, end = unixNano(s.StartTimeUnixNano), unixNano(s.EndTimeUnixNano)
		if s.Status != nil {
			failed, msg = strings.Contains(strings.ToUpper(s.Status.Code), "ERROR"), s.Status.Message
		}
	}
	if parent != "" {
		attrs["mlflow.parent_span_id"] = mlflowID(parent)
	}
	sp := spanOf(traceID, mlflowID(spanID), s.Name, start, end, failed, msg, attrs)
	for _, ev := range s.Events {
		if ev.Name == "exception" {
			sp.ExceptionMessage = clip(sanitize(str(ev.Attributes["exception.message"])), 4096)
			break
		}
	}
	return sp, parent == "", outputs
}

type mlflowInfo struct {
	TraceInfo mlflowTraceInfo `json:"trace_info"`
}

type mlflowSearch struct {
	Traces        []mlflowTraceInfo `json:"traces"`
	NextPageToken string            `json:"next_page_token"`
}

// decodeMLflowSearch decodes GET /api/2.0/mlflow/traces.
func decodeMLflowSearch(data []byte) (mlflowSearch, error) {
	var s mlflowSearch
	err := json.Unmarshal(data, &s)
	return s, err
}

func (c *Client) fetchMLflow(ctx context.Context, runID string) (Trace, error) {
	requestID := runID
	if key, ok := strings.CutPrefix(c.cfg.Correlate, correlatePrefix); ok {
		if c.cfg.Project == "" {
			return Trace{}, derrors.Invalidf("source.project is required to correlate by metadata on mlflow: the experiment id")
		}
		if strings.ContainsAny(runID+key, "'`") {
			return Trace{}, derrors.Invalidf("runId %q and the correlate key must not contain quotes to search mlflow", clip(runID, 80))
		}
		what := fmt.Sprintf("finding the trace whose tag %q is %q", clip(key, 60), clip(runID, 80))
		data, err := c.do(ctx, http.MethodGet, "/api/2.0/mlflow/traces", url.Values{
			"experiment_ids": {c.cfg.Project}, "filter": {fmt.Sprintf("tags.`%s` = '%s'", key, runID)}, "max_results": {"1"},
		}, nil, what)
		if err != nil {
			return Trace{}, err
		}
		s, err := decodeMLflowSearch(data)
		if err != nil {
			return Trace{}, c.decodeError(what, err)
		}
		if len(s.Traces) == 0 || s.Traces[0].id() == "" {
			return Trace{}, c.notFound(what)
		}
		requestID = s.Traces[0].id()
	} else {
		what := "reading the info of trace " + strconv.Quote(clip(runID, 80))
		data, err := c.do(ctx, http.MethodGet, "/api/2.0/mlflow/traces/"+url.PathEscape(runID)+"/info", nil, nil, what)
		if err != nil {
			return Trace{}, err
		}
		var info mlflowInfo
		if err := json.Unmarshal(data, &info); err != nil {
			return Trace{}, c.decodeError(what, err)
		}
		if id := info.TraceInfo.id(); id != "" {
			requestID = id
		}
	}
	what := "reading the spans of trace " + strconv.Quote(clip(requestID, 80))
	data, err := c.do(ctx, http.MethodGet, "/api/2.0/mlflow/get-trace-artifact", url.Values{"request_id": {requestID}}, nil, what)
	if err != nil {
		return Trace{}, err
	}
	t, err := decodeMLflowData(requestID, data)
	if err != nil {
		return Trace{}, c.decodeError(what, err)
	}
	return t, nil
}

func (c *Client) listMLflow(ctx context.Context, limit int) ([]Summary, error) {
	if c.cfg.Project == "" {
		return nil, derrors.Invalidf("the mlflow source has no project: set project to the MLflow experiment id to list its traces")
	}
	const what = "searching traces"
	data, err := c.do(ctx, http.MethodGet, "/api/2.0/mlflow/traces", url.Values{
		"experiment_ids": {c.cfg.Project}, "max_results": {strconv.Itoa(limit)}, "order_by": {"timestamp_ms DESC"},
	}, nil, what)
	if err != nil {
		return nil, err
	}
	s, err := decodeMLflowSearch(data)
	if err != nil {
		return nil, c.decodeError(what, err)
	}
	return mlflowSummaries(s), nil
}

func mlflowSummaries(s mlflowSearch) []Summary {
	out := make([]Summary, 0, len(s.Traces))
	for _, i := range s.Traces {
		sum := Summary{TraceID: sanitize(i.id()), DurationMs: num(i.ExecutionTimeMs), Status: sanitize(i.Status)}
		if sum.Status == "" {
			sum.Status = sanitize(i.State)
		}
		if ms := num(i.TimestampMs); ms > 0 {
			sum.Start = timePtr(unixNano(ms * 1e6))
		}
		for _, kv := range i.Tags {
			if kv.Key == "mlflow.traceName" {
				sum.Name = clip(sanitize(kv.Value), maxNameBytes)
			}
		}
		out = append(out, sum)
	}
	return out
}
