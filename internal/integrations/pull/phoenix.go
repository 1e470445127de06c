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

// Phoenix's REST API (https://arize.com/docs/phoenix/sdk-api-reference/rest-api):
// GET /v1/projects/{project_identifier}/spans answers {data: [Span],
// next_cursor}, filtered by trace_id (Phoenix 13.9 and later; older
// servers ignore it, so the spans are filtered here too) and by
// parent_id=null for root spans. Attributes are OpenInference's, which
// traces.Normalize reads. The API key, when the server asks for one, is a
// bearer token.

type phoenixSpan struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Context struct {
		TraceID string `json:"trace_id"`
		SpanID  string `json:"span_id"`
	} `json:"context"`
	SpanKind      string         `json:"span_kind"`
	ParentID      *string        `json:"parent_id"`
	StartTime     string         `json:"start_time"`
	EndTime       string         `json:"end_time"`
	StatusCode    string         `json:"status_code"`
	StatusMessage string         `json:"status_message"`
	Attributes    map[string]any `json:"attributes"`
	Events        []struct {
		Name       string         `json:"name"`
		Attributes map[string]any `json:"attributes"`
	} `json:"events"`
}

type phoenixSpans struct {
	Data       []phoenixSpan `json:"data"`
	NextCursor *string       `json:"next_cursor"`
}

// decodePhoenixSpans decodes GET /v1/projects/{project}/spans.
func decodePhoenixSpans(data []byte) (phoenixSpans, error) {
	var p phoenixSpans
	err := json.Unmarshal(data, &p)
	return p, err
}

// flattenInto writes a nested attribute object as dotted keys
// ({"llm": {"model_name": "x"}} is llm.model_name), as OpenInference
// names them; arrays and scalars stay values.
func flattenInto(out map[string]any, prefix string, m map[string]any, depth int) {
	for k, v := range m {
		key := k
		if prefix != "" {
			key = prefix + "." + k
		}
		if inner, ok := v.(map[string]any); ok && depth < maxDepth {
			flattenInto(out, key, inner, depth+1)
			continue
		}
		out[key] = v
	}
}

func phoenixSpanOf(s phoenixSpan) trace.Span {
	attrs := map[string]any{}
	flattenInto(attrs, "", s.Attributes, 0)
	if _, ok := attrs["openinference.span.kind"]; !ok && s.SpanKind != "" {
		attrs["openinference.span.kind"] = s.SpanKind
	}
	failed := strings.EqualFold(s.StatusCode, "ERROR")
	sp := spanOf(s.Context.TraceID, s.Context.SpanID, s.Name, parseTime(s.StartTime), parseTime(s.EndTime), failed, s.StatusMessage, attrs)
	for _, ev := range s.Events {
		if ev.Name == "exception" {
			sp.ExceptionMessage = clip(sanitize(str(ev.Attributes["exception.message"])), 4096)
			break
		}
	}
	return sp
}

func (c *Client) phoenixPath() string {
	return "/v1/projects/" + url.PathEscape(c.cfg.Project) + "/spans"
}

func (c *Client) fetchPhoenix(ctx context.Context, traceID string) (Trace, error) {
	what := "reading the spans of trace " + strconv.Quote(clip(traceID, 80))
	t := Trace{ID: traceID}
	cursor := ""
	for page := 0; page < maxPages; page++ {
		q := url.Values{"trace_id": {traceID}, "limit": {"1000"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		data, err := c.do(ctx, http.MethodGet, c.phoenixPath(), q, nil, what)
		if err != nil {
			return Trace{}, err
		}
		p, err := decodePhoenixSpans(data)
		if err != nil {
			return Trace{}, c.decodeError(what, err)
		}
		for _, s := range p.Data {
			if s.Context.TraceID != traceID || len(t.Spans) >= maxSpans {
				continue
			}
			t.Spans = append(t.Spans, phoenixSpanOf(s))
			if s.ParentID == nil || *s.ParentID == "" {
				t.FinalAnswer = answerText(s.Attributes["output.value"])
				if t.FinalAnswer == "" {
					if out, ok := s.Attributes["output"].(map[string]any); ok {
						t.FinalAnswer = answerText(out["value"])
					}
				}
			}
		}
		if p.NextCursor == nil || *p.NextCursor == "" || len(p.Data) == 0 {
			break
		}
		cursor = *p.NextCursor
	}
	if len(t.Spans) == 0 {
		return Trace{}, c.notFound(what + " in project " + strconv.Quote(clip(c.cfg.Project, 80)))
	}
	return t, nil
}

func (c *Client) listPhoenix(ctx context.Context, limit int) ([]Summary, error) {
	const what = "listing root spans"
	data, err := c.do(ctx, http.MethodGet, c.phoenixPath(), url.Values{"parent_id": {"null"}, "limit": {strconv.Itoa(limit)}}, nil, what)
	if err != nil {
		return nil, err
	}
	p, err := decodePhoenixSpans(data)
	if err != nil {
		return nil, c.decodeError(what, err)
	}
	return phoenixSummaries(p, limit), nil
}

func phoenixSummaries(p phoenixSpans, limit int) []Summary {
	out := []Summary{}
	for _, s := range p.Data {
		if s.ParentID != nil && *s.ParentID != "" {
			continue // an older server that ignored parent_id=null
		}
		if len(out) >= limit {
			break
		}
		sp := phoenixSpanOf(s)
		sum := Summary{TraceID: sp.TraceID, Name: sp.Name}
		summarize(&sum, []trace.Span{sp})
		sum.Spans = 0 // the root alone was read
		if n := num(sp.Attributes["llm.token_count.prompt"]); n > 0 {
			sum.InputTokens = int64(n)
		}
		out = append(out, sum)
	}
	return out
}
