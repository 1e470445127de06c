package pull

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"svc/internal/domain/trace"
	"svc/internal/platform/derrors"
)

// LangSmith's API (https://api.smith.langchain.com/redoc): GET
// /api/v1/runs/{run_id} reads a run; POST /api/v1/runs/query lists runs
// by trace, by project (session) and by filter, with a cursor. The API
// key goes in x-api-key. A trace is its root run and the runs under it;
// the root run's id is the trace id.

type langsmithRun struct {
	ID               string         `json:"id"`
	Name             string         `json:"name"`
	RunType          string         `json:"run_type"`
	StartTime        string         `json:"start_time"`
	EndTime          string         `json:"end_time"`
	Inputs           any            `json:"inputs"`
	Outputs          any            `json:"outputs"`
	Error            string         `json:"error"`
	Extra            map[string]any `json:"extra"`
	TraceID          string         `json:"trace_id"`
	ParentRunID      string         `json:"parent_run_id"`
	Status           string         `json:"status"`
	Tags             []string       `json:"tags"`
	PromptTokens     any            `json:"prompt_tokens"`
	CompletionTokens any            `json:"completion_tokens"`
	TotalCost        any            `json:"total_cost"`
	SessionID        string         `json:"session_id"`
}

type langsmithQuery struct {
	Runs    []langsmithRun    `json:"runs"`
	Cursors map[string]string `json:"cursors"`
}

// decodeLangSmithRun decodes GET /api/v1/runs/{run_id}.
func decodeLangSmithRun(data []byte) (langsmithRun, error) {
	var r langsmithRun
	err := json.Unmarshal(data, &r)
	return r, err
}

// decodeLangSmithQuery decodes POST /api/v1/runs/query.
func decodeLangSmithQuery(data []byte) (langsmithQuery, error) {
	var q langsmithQuery
	err := json.Unmarshal(data, &q)
	return q, err
}

// langsmithSpan converts a run: run_type llm is a GenAI chat, tool an
// execute_tool; an error is an error status; extra.metadata are
// metadata.<key>.
func langsmithSpan(r langsmithRun) trace.Span {
	attrs := map[string]any{"langsmith.run_type": r.RunType}
	if r.ParentRunID != "" {
		attrs["langsmith.parent_run_id"] = r.ParentRunID
	}
	meta, _ := r.Extra["metadata"].(map[string]any)
	flatten(attrs, "metadata.", meta)
	switch strings.ToLower(r.RunType) {
	case "llm", "embedding":
		op := "chat"
		if strings.EqualFold(r.RunType, "embedding") {
			op = "embeddings"
		}
		attrs["gen_ai.operation.name"] = op
		params, _ := r.Extra["invocation_params"].(map[string]any)
		for _, m := range []any{params["model"], params["model_name"], meta["ls_model_name"]} {
			if s, ok := m.(string); ok && s != "" {
				attrs["gen_ai.request.model"] = s
				break
			}
		}
		if n := num(r.PromptTokens); n > 0 {
			attrs["gen_ai.usage.input_tokens"] = n
		}
		if n := num(r.CompletionTokens); n > 0 {
			attrs["gen_ai.usage.output_tokens"] = n
		}
		if n := num(r.TotalCost); n > 0 {
			attrs["gen_ai.usage.cost"] = n
		}
		if r.Inputs != nil {
			attrs["gen_ai.input.messages"] = r.Inputs
		}
		if r.Outputs != nil {
			attrs["gen_ai.output.messages"] = r.Outputs
		}
	case "tool":
		attrs["gen_ai.operation.name"] = "execute_tool"
		attrs["gen_ai.tool.name"] = r.Name
		if r.Inputs != nil {
			attrs["gen_ai.tool.call.arguments"] = r.Inputs
		}
		if r.Outputs != nil {
			attrs["gen_ai.tool.call.result"] = r.Outputs
		}
	default:
		if r.Inputs != nil {
			attrs["input.value"] = r.Inputs
		}
		if r.Outputs != nil {
			attrs["output.value"] = r.Outputs
		}
	}
	failed := r.Error != "" || strings.EqualFold(r.Status, "error")
	return spanOf(r.TraceID, r.ID, r.Name, parseTime(r.StartTime), parseTime(r.EndTime), failed, r.Error, attrs)
}

// langsmithTrace assembles a trace from its root run and all its runs.
func langsmithTrace(root langsmithRun, runs []langsmithRun) Trace {
	id := root.TraceID
	if id == "" {
		id = root.ID
	}
	t := Trace{ID: sanitize(id), FinalAnswer: answerText(root.Outputs)}
	seen := map[string]bool{}
	for _, r := range append([]langsmithRun{root}, runs...) {
		if seen[r.ID] || len(t.Spans) >= maxSpans {
			continue
		}
		seen[r.ID] = true
		if r.TraceID == "" {
			r.TraceID = id
		}
		t.Spans = append(t.Spans, langsmithSpan(r))
	}
	return t
}

func (c *Client) fetchLangSmith(ctx context.Context, runID string) (Trace, error) {
	what := "reading run " + strconv.Quote(clip(runID, 80))
	var root langsmithRun
	if key, ok := strings.CutPrefix(c.cfg.Correlate, correlatePrefix); ok {
		if c.cfg.Project == "" {
			return Trace{}, derrors.Invalidf("source.project is required to correlate by metadata on langsmith: the project's (session's) id")
		}
		what = fmt.Sprintf("finding the root run whose metadata %q is %q", clip(key, 60), clip(runID, 80))
		filter := fmt.Sprintf("and(eq(metadata_key, %s), eq(metadata_value, %s))", strconv.Quote(key), strconv.Quote(runID))
		data, err := c.do(ctx, http.MethodPost, "/api/v1/runs/query", nil,
			map[string]any{"session": []string{c.cfg.Project}, "filter": filter, "is_root": true, "limit": 1}, what)
		if err != nil {
			return Trace{}, err
		}
		q, err := decodeLangSmithQuery(data)
		if err != nil {
			return Trace{}, c.decodeError(what, err)
		}
		if len(q.Runs) == 0 {
			return Trace{}, c.notFound(what)
		}
		root = q.Runs[0]
	} else {
		data, err := c.do(ctx, http.MethodGet, "/api/v1/runs/"+url.PathEscape(runID), nil, nil, what)
		if err != nil {
			return Trace{}, err
		}
		if root, err = decodeLangSmithRun(data); err != nil {
			return Trace{}, c.decodeError(what, err)
		}
	}
	traceID := root.TraceID
	if traceID == "" {
		traceID = root.ID
	}
	var runs []langsmithRun
	cursor := ""
	for page := 0; page < maxPages; page++ {
		body := map[string]any{"trace": traceID, "limit": 100}
		if cursor != "" {
			body["cursor"] = cursor
		}
		qwhat := "reading the runs of trace " + strconv.Quote(clip(traceID, 80))
		data, err := c.do(ctx, http.MethodPost, "/api/v1/runs/query", nil, body, qwhat)
		if err != nil {
			return Trace{}, err
		}
		q, err := decodeLangSmithQuery(data)
		if err != nil {
			return Trace{}, c.decodeError(qwhat, err)
		}
		runs = append(runs, q.Runs...)
		cursor = q.Cursors["next"]
		if cursor == "" || len(q.Runs) == 0 || len(runs) >= maxSpans {
			break
		}
	}
	return langsmithTrace(root, runs), nil
}

func (c *Client) listLangSmith(ctx context.Context, limit int) ([]Summary, error) {
	if c.cfg.Project == "" {
		return nil, derrors.Invalidf("the langsmith source has no project: set project to the LangSmith project's (session's) id to list its traces")
	}
	const what = "listing root runs"
	data, err := c.do(ctx, http.MethodPost, "/api/v1/runs/query", nil,
		map[string]any{"session": []string{c.cfg.Project}, "is_root": true, "limit": limit}, what)
	if err != nil {
		return nil, err
	}
	q, err := decodeLangSmithQuery(data)
	if err != nil {
		return nil, c.decodeError(what, err)
	}
	return langsmithSummaries(q), nil
}

func langsmithSummaries(q langsmithQuery) []Summary {
	out := make([]Summary, 0, len(q.Runs))
	for _, r := range q.Runs {
		id := r.TraceID
		if id == "" {
			id = r.ID
		}
		s := Summary{TraceID: sanitize(id), Name: clip(sanitize(r.Name), maxNameBytes), Start: timePtr(parseTime(r.StartTime)),
			InputTokens: int64(num(r.PromptTokens)), OutputTokens: int64(num(r.CompletionTokens)), CostUSD: num(r.TotalCost), Status: sanitize(r.Status)}
		if start, end := parseTime(r.StartTime), parseTime(r.EndTime); !start.IsZero() && end.After(start) {
			s.DurationMs = float64(end.Sub(start).Microseconds()) / 1000
		}
		out = append(out, s)
	}
	return out
}
