package eval

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Trace event kinds (spec §2.7). Each kind requires the fields named in
// Validate; every other field is optional.
const (
	EventToolCall = "tool_call" // name; input, output
	EventLLMCall  = "llm_call"  // model?, input, output, usage, costUsd
	EventError    = "error"     // message; code
	EventMessage  = "message"   // role, content (the assistant message is role assistant)
	EventArtifact = "artifact"  // name; ref, mediaType, role
	EventSpan     = "span"      // name; attributes, startTime, endTime
)

// EventKinds lists the kinds Validate accepts.
var EventKinds = []string{EventToolCall, EventLLMCall, EventError, EventMessage, EventArtifact, EventSpan}

// TraceEvent is one step of a trajectory, a union discriminated on Kind.
type TraceEvent struct {
	Kind string     `json:"kind"`
	TS   *time.Time `json:"ts,omitempty"`
	// Name is the tool's, span's or artifact's name.
	Name string `json:"name,omitempty"`
	// Role is a message's author (user, assistant, system, tool) or an
	// artifact's role.
	Role    string `json:"role,omitempty"`
	Content string `json:"content,omitempty"`
	// Input and Output are a tool call's arguments and result, or an LLM
	// call's prompt and completion, as JSON values.
	Input  json.RawMessage `json:"input,omitempty"`
	Output json.RawMessage `json:"output,omitempty"`
	Model  string          `json:"model,omitempty"`
	// Usage of an LLM call.
	InputTokens  int64   `json:"inputTokens,omitempty"`
	OutputTokens int64   `json:"outputTokens,omitempty"`
	CostUSD      float64 `json:"costUsd,omitempty"`
	DurationMs   float64 `json:"durationMs,omitempty"`
	// Message and Code describe an error event.
	Message string `json:"message,omitempty"`
	Code    string `json:"code,omitempty"`
	// Ref and MediaType locate an artifact.
	Ref       string `json:"ref,omitempty"`
	MediaType string `json:"mediaType,omitempty"`
	// Attributes and times of a span.
	Attributes map[string]any `json:"attributes,omitempty"`
	StartTime  *time.Time     `json:"startTime,omitempty"`
	EndTime    *time.Time     `json:"endTime,omitempty"`
}

// Limits of one trace, so that a runaway harness cannot fill the store.
const (
	MaxTraceEvents = 10_000
	maxEventText   = 1 << 20
)

// Validate checks the fields each kind requires. The message says which
// field of which event to fix.
func (e *TraceEvent) Validate() error {
	need := func(field, v string) error {
		if strings.TrimSpace(v) == "" {
			return fmt.Errorf("a %s event needs %q", e.Kind, field)
		}
		return nil
	}
	switch e.Kind {
	case EventToolCall, EventSpan, EventArtifact:
		if err := need("name", e.Name); err != nil {
			return err
		}
	case EventError:
		if err := need("message", e.Message); err != nil {
			return err
		}
	case EventMessage:
		if err := need("role", e.Role); err != nil {
			return err
		}
	case EventLLMCall:
	case "":
		return fmt.Errorf("an event needs a \"kind\", one of %s", strings.Join(EventKinds, ", "))
	default:
		return fmt.Errorf("unknown event kind %q; use one of %s", e.Kind, strings.Join(EventKinds, ", "))
	}
	if e.InputTokens < 0 || e.OutputTokens < 0 || e.CostUSD < 0 || e.DurationMs < 0 {
		return fmt.Errorf("a %s event has a negative inputTokens, outputTokens, costUsd or durationMs", e.Kind)
	}
	for _, s := range []string{e.Content, e.Message, string(e.Input), string(e.Output)} {
		if len(s) > maxEventText {
			return fmt.Errorf("a %s event has a field over %d bytes", e.Kind, maxEventText)
		}
	}
	return nil
}

// ValidateTrace checks every event and the trace's length; the error names
// the index of the first bad event.
func ValidateTrace(events []TraceEvent) error {
	if len(events) > MaxTraceEvents {
		return fmt.Errorf("a trace holds at most %d events, not %d", MaxTraceEvents, len(events))
	}
	for i := range events {
		if err := events[i].Validate(); err != nil {
			return fmt.Errorf("trace[%d]: %w", i, err)
		}
	}
	return nil
}

// FinalAnswer is the content of the last assistant message of a trace, or
// "" when there is none.
func FinalAnswer(events []TraceEvent) string {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Kind == EventMessage && events[i].Role == "assistant" {
			return events[i].Content
		}
	}
	return ""
}

// Extract derives the evidence and usage of a trace. finalAnswer, when not
// empty, wins over the trace's last assistant message (a process harness
// prints its answer on stdout).
func Extract(events []TraceEvent, finalAnswer string) (Evidence, Usage) {
	var ev Evidence
	var u Usage
	ev.FinalAnswer = finalAnswer
	if ev.FinalAnswer == "" {
		ev.FinalAnswer = FinalAnswer(events)
	}
	for _, e := range events {
		switch e.Kind {
		case EventToolCall:
			ev.ToolCalls = append(ev.ToolCalls, e.Name)
			u.ToolCalls++
		case EventLLMCall:
			u.LLMCalls++
		case EventArtifact:
			ev.Artifacts = append(ev.Artifacts, Artifact{Name: e.Name, Ref: e.Ref, MediaType: e.MediaType, Role: e.Role})
		case EventSpan:
			ev.Spans = append(ev.Spans, e.Name)
		case EventError:
			ev.Errors = append(ev.Errors, e.Message)
		}
		u.InputTokens += e.InputTokens
		u.OutputTokens += e.OutputTokens
		u.CostUSD += e.CostUSD
	}
	return ev, u
}
