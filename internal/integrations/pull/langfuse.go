package pull

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"svc/internal/domain/trace"
)

// Langfuse's public API (https://api.reference.langfuse.com):
// GET /api/public/traces/{traceId} answers the trace with its
// observations in full; GET /api/public/traces lists traces, newest
// first. Authentication is HTTP basic with the project's public key as the
// user and its secret key as the password: the secret holds
// "pk-lf-...:sk-lf-...".

type langfuseTrace struct {
	ID           string                `json:"id"`
	Timestamp    string                `json:"timestamp"`
	Name         string                `json:"name"`
	Input        any                   `json:"input"`
	Output       any                   `json:"output"`
	SessionID    string                `json:"sessionId"`
	UserID       string                `json:"userId"`
	Release      string                `json:"release"`
	Version      string                `json:"version"`
	Metadata     any                   `json:"metadata"`
	Tags         []string              `json:"tags"`
	Latency      float64               `json:"latency"` // seconds
	TotalCost    float64               `json:"totalCost"`
	Observations []langfuseObservation `json:"-"`
	RawObs       json.RawMessage       `json:"observations"`
}

type langfuseObservation struct {
	ID                  string         `json:"id"`
	TraceID             string         `json:"traceId"`
	Type                string         `json:"type"`
	Name                string         `json:"name"`
	StartTime           string         `json:"startTime"`
	EndTime             string         `json:"endTime"`
	Model               string         `json:"model"`
	ModelParameters     any            `json:"modelParameters"`
	Input               any            `json:"input"`
	Output              any            `json:"output"`
	Metadata            any            `json:"metadata"`
	Level               string         `json:"level"`
	StatusMessage       string         `json:"statusMessage"`
	ParentObservationID string         `json:"parentObservationId"`
	Usage               map[string]any `json:"usage"`
	UsageDetails        map[string]any `json:"usageDetails"`
	CostDetails         map[string]any `json:"costDetails"`
	PromptTokens        float64        `json:"promptTokens"`
	CompletionTokens    float64        `json:"completionTokens"`
	CalculatedTotalCost float64        `json:"calculatedTotalCost"`
}

// decodeLangfuseTrace decodes GET /api/public/traces/{traceId}.
func decodeLangfuseTrace(data []byte) (Trace, error) {
	var t langfuseTrace
	if err := json.Unmarshal(data, &t); err != nil {
		return Trace{}, err
	}
	if len(t.RawObs) > 0 && string(t.RawObs) != "null" {
		if err := json.Unmarshal(t.RawObs, &t.Observations); err != nil {
			return Trace{}, err
		}
	}
	out := Trace{ID: t.ID, FinalAnswer: answerText(t.Output)}
	for i, o := range t.Observations {
		if i >= maxSpans {
			break
		}
		out.Spans = append(out.Spans, langfuseSpan(t, o))
	}
	return out, nil
}

// langfuseSpan converts an observation: a GENERATION is a GenAI chat, a
// TOOL an execute_tool, level ERROR an error; its metadata are
// metadata.<key>.
func langfuseSpan(t langfuseTrace, o langfuseObservation) trace.Span {
	attrs := map[string]any{
		"langfuse.observation.type": o.Type, "langfuse.trace.name": t.Name,
		"langfuse.observation.level": o.Level,
	}
	for k, v := range map[string]string{"langfuse.session.id": t.SessionID, "langfuse.user.id": t.UserID,
		"langfuse.release": t.Release, "langfuse.observation.parent_id": o.ParentObservationID} {
		if v != "" {
			attrs[k] = v
		}
	}
	if m, ok := o.Metadata.(map[string]any); ok {
		flatten(attrs, "metadata.", m)
	}
	if len(t.Tags) > 0 {
		tags := make([]any, len(t.Tags))
		for i, s := range t.Tags {
			tags[i] = s
		}
		attrs["langfuse.trace.tags"] = tags
	}
	switch strings.ToUpper(o.Type) {
	case "GENERATION", "EMBEDDING":
		op := "chat"
		if strings.EqualFold(o.Type, "EMBEDDING") {
			op = "embeddings"
		}
		attrs["gen_ai.operation.name"] = op
		if o.Model != "" {
			attrs["gen_ai.request.model"] = o.Model
		}
		in, out := o.PromptTokens, o.CompletionTokens
		for _, u := range []map[string]any{o.UsageDetails, o.Usage} {
			if in == 0 {
				in = num(u["input"])
			}
			if out == 0 {
				out = num(u["output"])
			}
		}
		if in > 0 {
			attrs["gen_ai.usage.input_tokens"] = in
		}
		if out > 0 {
			attrs["gen_ai.usage.output_tokens"] = out
		}
		cost := o.CalculatedTotalCost
		if cost == 0 {
			cost = num(o.CostDetails["total"])
		}
		if cost == 0 && o.Usage != nil {
			cost = num(o.Usage["totalCost"])
		}
		if cost > 0 {
			attrs["gen_ai.usage.cost"] = cost
		}
		if o.Input != nil {
			attrs["gen_ai.input.messages"] = o.Input
		}
		if o.Output != nil {
			attrs["gen_ai.output.messages"] = o.Output
		}
	case "TOOL":
		attrs["gen_ai.operation.name"] = "execute_tool"
		attrs["gen_ai.tool.name"] = o.Name
		if o.Input != nil {
			attrs["gen_ai.tool.call.arguments"] = o.Input
		}
		if o.Output != nil {
			attrs["gen_ai.tool.call.result"] = o.Output
		}
	default:
		if o.Input != nil {
			attrs["input.value"] = o.Input
		}
		if o.Output != nil {
			attrs["output.value"] = o.Output
		}
	}
	failed := strings.EqualFold(o.Level, "ERROR")
	return spanOf(t.ID, o.ID, o.Name, parseTime(o.StartTime), parseTime(o.EndTime), failed, o.StatusMessage, attrs)
}

func (c *Client) fetchLangfuse(ctx context.Context, id string) (Trace, error) {
	what := "reading trace " + strconv.Quote(clip(id, 80))
	data, err := c.do(ctx, http.MethodGet, "/api/public/traces/"+url.PathEscape(id), nil, nil, what)
	if err != nil {
		return Trace{}, err
	}
	t, err := decodeLangfuseTrace(data)
	if err != nil {
		return Trace{}, c.decodeError(what, err)
	}
	return t, nil
}

type langfuseList struct {
	Data []langfuseTrace `json:"data"`
}

// decodeLangfuseList decodes GET /api/public/traces.
func decodeLangfuseList(data []byte) ([]Summary, error) {
	var l langfuseList
	if err := json.Unmarshal(data, &l); err != nil {
		return nil, err
	}
	out := make([]Summary, 0, len(l.Data))
	for _, t := range l.Data {
		s := Summary{TraceID: sanitize(t.ID), Name: clip(sanitize(t.Name), maxNameBytes), Start: timePtr(parseTime(t.Timestamp)),
			DurationMs: num(t.Latency) * 1000, CostUSD: num(t.TotalCost)}
		var ids []any
		if json.Unmarshal(t.RawObs, &ids) == nil {
			s.Spans = len(ids)
		}
		out = append(out, s)
	}
	return out, nil
}

func (c *Client) listLangfuse(ctx context.Context, limit int) ([]Summary, error) {
	const what = "listing traces"
	data, err := c.do(ctx, http.MethodGet, "/api/public/traces", url.Values{"page": {"1"}, "limit": {strconv.Itoa(limit)}, "orderBy": {"timestamp.desc"}}, nil, what)
	if err != nil {
		return nil, err
	}
	out, err := decodeLangfuseList(data)
	if err != nil {
		return nil, c.decodeError(what, err)
	}
	return out, nil
}
