// Package judge computes what a model-backed judge is given (spec §2.5):
// its effective rubric, criteria and prompt template, the prompt text
// rendered from a case's evidence, and how that evidence covers the
// judge's requirements. It is pure: the grader that calls the model and
// POST /judges/preview both render through Render, so the preview shows
// byte for byte what the model is sent. It also holds the record of a
// code-judge try (try.go).
package judge

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
	"svc/internal/platform/derrors"
)

// Effective holds a judge's values at judge-run time (spec §2.5).
type Effective struct {
	// RubricText is the registered rubric's text when the judge names one,
	// else the inline string.
	RubricText string `json:"rubric"`
	// RubricRef is "id@version" of the registered rubric used, "" for an
	// inline rubric or none.
	RubricRef string `json:"rubricRef,omitempty"`
	// Criteria are the judge's own, else the rubric's.
	Criteria []registry.Criterion `json:"criteria,omitempty"`
	// PromptTemplate is the judge's own, else the rubric's; "" means the
	// default template.
	PromptTemplate string `json:"promptTemplate,omitempty"`
	// PassThreshold re-decides the overall pass only.
	PassThreshold *float64 `json:"passThreshold,omitempty"`
	// Inputs are a legacy model judge's inputs (trace, dom, screenshot);
	// empty means trace only.
	Inputs []string `json:"inputs,omitempty"`
}

// EffectiveValues returns the effective values of judge j. rubric is the
// registered rubric j's rubric reference resolved to (nil when j has an
// inline rubric or none); override, when not nil, replaces j's rubric (a
// preview's rubric?). A reference that did not resolve, or resolved to
// another rubric, is an ErrInvalid whose text says which; the grader makes
// it a skip score.
func EffectiveValues(j *registry.JudgeSpec, override *registry.RubricInput, rubric *registry.RubricSpec) (Effective, error) {
	if j == nil {
		return Effective{}, derrors.Invalidf("no judge")
	}
	var (
		in       *registry.RubricInput
		criteria []registry.Criterion
		tmpl     string
		eff      Effective
	)
	switch {
	case j.Model != nil:
		in, criteria, tmpl = j.Model.Rubric, j.Model.Criteria, j.Model.PromptTemplate
		eff.PassThreshold, eff.Inputs = j.Model.PassThreshold, j.Model.Inputs
	case j.Harness != nil:
		in, criteria, tmpl = j.Harness.Rubric, j.Harness.Criteria, j.Harness.PromptTemplate
	}
	if override != nil {
		in = override
	}
	if in != nil && in.Ref != nil {
		if rubric == nil {
			return Effective{}, derrors.Invalidf("rubric %s@%s does not resolve: register it or fix the judge's rubric reference", in.Ref.ID, in.Ref.Version)
		}
		if rubric.ID != in.Ref.ID || (in.Ref.Version != registry.LatestVersion && rubric.Version != in.Ref.Version) {
			return Effective{}, derrors.Invalidf("rubric %s@%s resolved to %s@%s", in.Ref.ID, in.Ref.Version, rubric.ID, rubric.Version)
		}
		eff.RubricText, eff.RubricRef = rubric.Text, rubric.ID+"@"+rubric.Version
		if len(criteria) == 0 {
			criteria = rubric.Criteria
		}
		if tmpl == "" {
			tmpl = rubric.PromptTemplate
		}
	} else if in != nil {
		eff.RubricText = in.Text
	}
	eff.Criteria, eff.PromptTemplate = criteria, tmpl
	return eff, nil
}

// MaxDefaultTrace bounds {trace} in the default template, in characters.
const MaxDefaultTrace = 6000

// MaxSlot bounds any other bound placeholder, in characters, so one huge
// DOM or trace cannot make a prompt no model accepts.
const MaxSlot = 200_000

// MaxCustomSlot bounds a custom evidence slot, in characters: a text
// artifact fills one with up to 1 MB.
const MaxCustomSlot = 1 << 20

// CustomSlots lists the custom evidence slots of e's template (the
// default template has none): the placeholders that are not standard.
func CustomSlots(e Effective) []string {
	if e.PromptTemplate == "" {
		return nil
	}
	var out []string
	for _, name := range registry.Placeholders(e.PromptTemplate) {
		if !standard[name] {
			out = append(out, name)
		}
	}
	return out
}

// standard are the placeholders Render binds itself.
var standard = map[string]bool{"task": true, "rubric": true, "criteria": true, "final_answer": true,
	"response": true, "dom": true, "trace": true, registry.PlaceholderVerdictInstruction: true}

// DefaultTemplate is the prompt of a judge with no template of its own or
// of its rubric.
const DefaultTemplate = `You are grading the work of an AI agent on one task.

## Task
{task}

## Rubric
{rubric}

## Criteria
{criteria}

## Final answer
{final_answer}

## Response
{response}

## Page DOM
{dom}

## Trace
{trace}

{verdict_instruction}`

// Evidence is what a prompt is rendered from: one case and its result.
type Evidence struct {
	Case     registry.EvalCase
	Trace    []eval.TraceEvent
	Snapshot *eval.Snapshot
	Evidence *eval.Evidence
	// Slots bind custom evidence slots by name.
	Slots map[string]string
}

// Slot reports one placeholder of the template.
type Slot struct {
	Name      string `json:"name"`
	Present   bool   `json:"present"`
	Chars     int    `json:"chars"`
	Truncated bool   `json:"truncated"`
	// Custom marks a custom evidence slot (not a standard placeholder).
	Custom bool `json:"custom,omitempty"`
	// Attachment marks an input sent beside the text, not in it: the
	// screenshot (Chars is then the length of its base64).
	Attachment bool `json:"attachment,omitempty"`
}

// Rendered is a rendered prompt with what went into it.
type Rendered struct {
	Prompt   string `json:"prompt"`
	Template string `json:"template"` // "default" or "custom"
	Slots    []Slot `json:"placeholders"`
	// Images are sent beside the prompt as image parts of the same user
	// message (data URLs): the browser snapshot's screenshot when the
	// judge's inputs name it.
	Images   []string `json:"-"`
	Warnings []string `json:"warnings"`
}

// placeholder matches {name}, the syntax registry.Placeholders reads.
var placeholder = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// Render renders e's template (the default when it has none) over ev.
// Every standard placeholder is bound (empty when the case lacks that
// evidence); a custom slot is bound from ev.Slots, and an unbound one
// stays verbatim in the text with a warning. The text is what the model
// is sent as the one user message.
func Render(e Effective, ev Evidence) Rendered {
	tmpl, kind := e.PromptTemplate, "custom"
	if tmpl == "" {
		tmpl, kind = DefaultTemplate, "default"
	}
	traceCap := MaxSlot
	if kind == "default" {
		traceCap = MaxDefaultTrace
	}
	values := map[string]string{
		"task":                                 taskText(ev.Case.Task),
		"rubric":                               e.RubricText,
		"criteria":                             criteriaText(e.Criteria),
		"final_answer":                         finalAnswer(ev),
		"response":                             response(ev),
		registry.PlaceholderVerdictInstruction: VerdictInstruction(e.Criteria),
	}
	if allows(e.Inputs, registry.InputDOM) && ev.Snapshot != nil {
		values["dom"] = ev.Snapshot.DOM
	} else {
		values["dom"] = ""
	}
	if allows(e.Inputs, registry.InputTrace) || len(e.Inputs) == 0 {
		values["trace"] = traceText(ev.Trace)
	} else {
		values["trace"] = ""
	}
	r := Rendered{Template: kind, Warnings: []string{}}
	bound := map[string]string{}
	for _, name := range registry.Placeholders(tmpl) {
		v, std := values[name]
		slot := Slot{Name: name, Custom: !std}
		if !std {
			var ok bool
			if v, ok = ev.Slots[name]; !ok {
				r.Warnings = append(r.Warnings, fmt.Sprintf("custom evidence slot {%s} is not bound by this evidence: it stays verbatim in the prompt", name))
				r.Slots = append(r.Slots, slot)
				continue
			}
		}
		limit := MaxSlot
		switch {
		case name == "trace":
			limit = traceCap
		case !std:
			limit = MaxCustomSlot
		}
		v, slot.Truncated = clip(v, limit)
		slot.Chars, slot.Present = utf8.RuneCountInString(v), v != ""
		if slot.Truncated {
			r.Warnings = append(r.Warnings, fmt.Sprintf("{%s} was cut to %d characters", name, limit))
		}
		bound[name] = v
		r.Slots = append(r.Slots, slot)
	}
	if allows(e.Inputs, registry.InputScreenshot) {
		slot := Slot{Name: registry.InputScreenshot, Attachment: true}
		if ev.Snapshot != nil && ev.Snapshot.Screenshot != "" {
			url := ScreenshotURL(ev.Snapshot.Screenshot)
			r.Images = append(r.Images, url)
			slot.Present, slot.Chars = true, len(ev.Snapshot.Screenshot)
		} else {
			r.Warnings = append(r.Warnings, "the judge's inputs name the screenshot, and this case's snapshot has none: the model gets the text only")
		}
		r.Slots = append(r.Slots, slot)
	}
	r.Prompt = placeholder.ReplaceAllStringFunc(tmpl, func(m string) string {
		if v, ok := bound[m[1:len(m)-1]]; ok {
			return v
		}
		return m
	})
	return r
}

// allows reports whether inputs name input.
func allows(inputs []string, input string) bool { return slices.Contains(inputs, input) }

// clip cuts s to at most n characters, saying whether it did.
func clip(s string, n int) (string, bool) {
	if utf8.RuneCountInString(s) <= n {
		return s, false
	}
	i, count := 0, 0
	for i = range s {
		if count == n {
			break
		}
		count++
	}
	return s[:i], true
}

// taskText is the case's task: a string as it is, anything else as JSON.
func taskText(t any) string {
	switch v := t.(type) {
	case nil:
		return ""
	case string:
		return v
	}
	b, err := json.Marshal(t)
	if err != nil {
		return fmt.Sprint(t)
	}
	return string(b)
}

// finalAnswer is the extracted final answer, else the prompt snapshot's
// output.
func finalAnswer(ev Evidence) string {
	if ev.Evidence != nil && ev.Evidence.FinalAnswer != "" {
		return ev.Evidence.FinalAnswer
	}
	if ev.Snapshot != nil {
		return ev.Snapshot.Output
	}
	return ""
}

// response is the agent's full response: the prompt snapshot's output,
// else the last assistant message of the trace.
func response(ev Evidence) string {
	if ev.Snapshot != nil && ev.Snapshot.Output != "" {
		return ev.Snapshot.Output
	}
	for i := len(ev.Trace) - 1; i >= 0; i-- {
		if e := ev.Trace[i]; e.Kind == "message" && e.Role == "assistant" {
			return e.Content
		}
	}
	return ""
}

// criteriaText lists the criteria, one a line.
func criteriaText(cs []registry.Criterion) string {
	var b strings.Builder
	for i, c := range cs {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "- %s (weight %s)", c.ID, strconv.FormatFloat(c.EffectiveWeight(), 'g', -1, 64))
		if c.Description != "" {
			b.WriteString(": " + c.Description)
		}
	}
	return b.String()
}

// traceText is the trace as JSON lines, one event a line.
func traceText(tr []eval.TraceEvent) string {
	var b strings.Builder
	for i, e := range tr {
		line, err := json.Marshal(e)
		if err != nil {
			continue
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.Write(line)
	}
	return b.String()
}

// VerdictInstruction is {verdict_instruction}: the one JSON object the
// model must answer with (ParseVerdict reads it).
func VerdictInstruction(cs []registry.Criterion) string {
	s := `Answer with one JSON object and nothing else: {"score": <number from 0 to 1>, "pass": <true or false>, "reason": "<one sentence>"`
	if len(cs) == 0 {
		return s + "}."
	}
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.ID
	}
	return s + `, "criteria": {"<criterion id>": {"score": <number from 0 to 1>, "reason": "<one sentence>"}}}. Score every criterion: ` + strings.Join(ids, ", ") + "."
}

// ScreenshotURL is a snapshot's base64 screenshot as the data URL of an
// image part: its media type is sniffed from its first bytes (PNG when
// they say nothing).
func ScreenshotURL(b64 string) string {
	if strings.HasPrefix(b64, "data:") {
		return b64
	}
	head := b64
	if len(head) > 64 {
		head = head[:64]
	}
	mt := "image/png"
	if raw, err := base64.StdEncoding.DecodeString(head[:len(head)/4*4]); err == nil {
		if t := imageType(raw); t != "" {
			mt = t
		}
	}
	return "data:" + mt + ";base64," + b64
}

// imageSignatures are the image signatures of the WHATWG MIME sniffing
// standard (what net/http's DetectContentType matches for images), so the
// domain sniffs without the HTTP stack: a prefix, or for WebP a RIFF
// header whose bytes 8 to 14 say WEBPVP.
var imageSignatures = []struct{ prefix, mediaType string }{
	{"\x89PNG\r\n\x1a\n", "image/png"},
	{"\xff\xd8\xff", "image/jpeg"},
	{"GIF87a", "image/gif"},
	{"GIF89a", "image/gif"},
	{"BM", "image/bmp"},
	{"\x00\x00\x01\x00", "image/x-icon"},
	{"\x00\x00\x02\x00", "image/x-icon"},
}

// imageType is raw's image media type by its first bytes, or "".
func imageType(raw []byte) string {
	if len(raw) >= 14 && string(raw[:4]) == "RIFF" && string(raw[8:14]) == "WEBPVP" {
		return "image/webp"
	}
	for _, s := range imageSignatures {
		if strings.HasPrefix(string(raw), s.prefix) {
			return s.mediaType
		}
	}
	return ""
}
