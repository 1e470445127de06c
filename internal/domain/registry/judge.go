package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"svc/internal/platform/derrors"
)

// JudgeKind discriminates the judge union (spec §2.5).
type JudgeKind string

// The judge kinds. Only JudgeCode may be registered; the legacy kinds are
// parsed and validated when read, so existing specs stay usable.
const (
	JudgeCode    JudgeKind = "code"
	JudgeModel   JudgeKind = "model"   // legacy
	JudgeHarness JudgeKind = "harness" // legacy
)

// JudgeSpec is a registered judge version: the shared fields plus exactly
// one of Code, Model or Harness, the one Kind names. Its JSON is one flat
// object, as the spec shows it.
type JudgeSpec struct {
	Kind        JudgeKind
	ID          string
	Version     string
	Description string
	Tags        []string
	// Requires lists the evidence the judge needs; preview reports its
	// coverage.
	Requires []EvidenceRequirement

	Code    *CodeJudge    // Kind "code"
	Model   *ModelJudge   // Kind "model" (legacy)
	Harness *HarnessJudge // Kind "harness" (legacy)
}

// judgeHeader is the JSON form of the shared fields.
type judgeHeader struct {
	Kind        JudgeKind             `json:"kind"`
	ID          string                `json:"id"`
	Version     string                `json:"version"`
	Description string                `json:"description,omitempty"`
	Tags        []string              `json:"tags,omitempty"`
	Requires    []EvidenceRequirement `json:"requires,omitempty"`
}

// CodeJudge runs code over a case's evidence (spec §2.5, "Code judge
// contract"): argv[1] is the path of a JSON file {case, trace, snapshot,
// evidence}; the last thing on stdout is a Score or Score[].
type CodeJudge struct {
	// Language is "python" or "node".
	Language string `json:"language"`
	// Code is the inline source; exactly one of Code and Entrypoint.
	Code string `json:"code,omitempty"`
	// Entrypoint is the path of the judge's program inside Image.
	Entrypoint string `json:"entrypoint,omitempty"`
	// Image is a dedicated judge image; required with Entrypoint.
	Image string `json:"image,omitempty"`
	// Model binds a model the code may call.
	Model *ModelRef `json:"model,omitempty"`
	// TimeoutSec bounds one execution; 0 means the default.
	TimeoutSec int `json:"timeoutSec,omitempty"`
	// Runtime is the id of the registered runtime the judge runs on;
	// without it a try falls back to the source case's placement.
	Runtime string `json:"runtime,omitempty"`
}

// ModelRef names a model binding.
type ModelRef struct {
	Ref string `json:"ref"`
}

// ModelJudge is the legacy LLM-as-judge kind.
type ModelJudge struct {
	Model         string       `json:"model"`
	Rubric        *RubricInput `json:"rubric,omitempty"`
	Inputs        []string     `json:"inputs,omitempty"` // subset of trace, dom, screenshot
	Provider      string       `json:"provider,omitempty"`
	PassThreshold *float64     `json:"passThreshold,omitempty"`
	// PromptTemplate, if set, must contain {verdict_instruction}.
	PromptTemplate string      `json:"promptTemplate,omitempty"`
	Criteria       []Criterion `json:"criteria,omitempty"`
}

// HarnessJudge is the legacy kind that delegates judging to a harness.
type HarnessJudge struct {
	Harness        Ref          `json:"harness"`
	Rubric         *RubricInput `json:"rubric,omitempty"`
	Runtime        string       `json:"runtime,omitempty"`
	PromptTemplate string       `json:"promptTemplate,omitempty"`
	Criteria       []Criterion  `json:"criteria,omitempty"`
}

// Judge inputs a model judge may read.
const (
	InputTrace      = "trace"
	InputDOM        = "dom"
	InputScreenshot = "screenshot"
)

// RubricInput is a judge's rubric: inline text, or a reference to a
// registered rubric (whose version may be "latest", resolved and sealed at
// dispatch). Its JSON is a string or {id, version}.
type RubricInput struct {
	Text string
	Ref  *Ref
}

// MarshalJSON writes the text as a string, or the reference as an object.
func (r RubricInput) MarshalJSON() ([]byte, error) {
	if r.Ref != nil {
		return json.Marshal(r.Ref)
	}
	return json.Marshal(r.Text)
}

// UnmarshalJSON reads a string or a {id, version} object.
func (r *RubricInput) UnmarshalJSON(b []byte) error {
	*r = RubricInput{}
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '"' {
		return json.Unmarshal(b, &r.Text)
	}
	var ref Ref
	if err := unmarshalStrict(b, &ref); err != nil {
		return fmt.Errorf("rubric: want a string or {id, version}: %w", err)
	}
	r.Ref = &ref
	return nil
}

// checkShape implements shaper.
func (*RubricInput) checkShape(v any, p string, pr *problems) {
	switch v.(type) {
	case string:
	case map[string]any:
		checkShape(v, reflect.TypeFor[Ref](), p, pr)
	default:
		pr.add(p, "must be the rubric text (a string) or a reference {id, version}, not %s", describe(v))
	}
}

// Criterion is one judged criterion; its metric is judge:<judge>:<id>.
type Criterion struct {
	ID          string `json:"id"`
	Description string `json:"description,omitempty"`
	// Weight in the weighted mean of the overall score; default 1.
	Weight *float64 `json:"weight,omitempty"`
	// PassThreshold decides the criterion's pass, in [0, 1].
	PassThreshold *float64 `json:"passThreshold,omitempty"`
}

// EffectiveWeight is the criterion's weight, 1 when unset.
func (c Criterion) EffectiveWeight() float64 {
	if c.Weight == nil {
		return 1
	}
	return *c.Weight
}

// EvidenceKind is the kind of an EvidenceRequirement (a closed list).
type EvidenceKind string

// The evidence kinds of spec §2.5.
const (
	EvidenceFinalAnswer EvidenceKind = "final_answer"
	EvidenceToolCall    EvidenceKind = "tool_call"
	EvidenceArtifact    EvidenceKind = "artifact"
	EvidenceSpan        EvidenceKind = "span"
	EvidenceScreenshot  EvidenceKind = "screenshot"
	EvidenceDOM         EvidenceKind = "dom"
)

// EvidenceRequirement is one piece of evidence a judge needs.
type EvidenceRequirement struct {
	Kind EvidenceKind `json:"kind"`
	// Name: the tool of a tool_call (optional), the span's name (required).
	Name string `json:"name,omitempty"`
	// Role: the artifact's role (optional).
	Role string `json:"role,omitempty"`
}

// Prompt template placeholders (spec §2.5); any other {name} is a custom
// evidence slot.
const (
	PlaceholderVerdictInstruction = "verdict_instruction"
)

// StandardPlaceholders are the placeholders the judge runtime binds itself.
var StandardPlaceholders = []string{"task", "rubric", "criteria", "dom", "final_answer", "response", "trace", PlaceholderVerdictInstruction}

// placeholderPattern matches {name} in a prompt template.
var placeholderPattern = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// Placeholders returns the distinct {name} placeholders of a prompt
// template, in order of first appearance.
func Placeholders(template string) []string {
	var names []string
	seen := map[string]bool{}
	for _, m := range placeholderPattern.FindAllStringSubmatch(template, -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			names = append(names, m[1])
		}
	}
	return names
}

// checkPromptTemplate refuses a template without {verdict_instruction}.
func checkPromptTemplate(p *problems, at, tmpl string) {
	if tmpl != "" && !strings.Contains(tmpl, "{"+PlaceholderVerdictInstruction+"}") {
		p.add(at, "must contain {%s}, where the verdict format instruction goes", PlaceholderVerdictInstruction)
	}
}

// The flat JSON objects of each judge kind.
type (
	codeJudgeDoc struct {
		judgeHeader
		CodeJudge
	}
	modelJudgeDoc struct {
		judgeHeader
		ModelJudge
	}
	harnessJudgeDoc struct {
		judgeHeader
		HarnessJudge
	}
)

// judgeDocs maps each kind to the Go type of its flat JSON object.
var judgeDocs = map[JudgeKind]reflect.Type{
	JudgeCode:    reflect.TypeFor[codeJudgeDoc](),
	JudgeModel:   reflect.TypeFor[modelJudgeDoc](),
	JudgeHarness: reflect.TypeFor[harnessJudgeDoc](),
}

// header returns the shared fields in their JSON form.
func (j *JudgeSpec) header() judgeHeader {
	return judgeHeader{Kind: j.Kind, ID: j.ID, Version: j.Version, Description: j.Description, Tags: j.Tags, Requires: j.Requires}
}

// setHeader copies the shared fields from their JSON form.
func (j *JudgeSpec) setHeader(h judgeHeader) {
	j.Kind, j.ID, j.Version, j.Description, j.Tags, j.Requires = h.Kind, h.ID, h.Version, h.Description, h.Tags, h.Requires
}

// MarshalJSON writes the judge as one flat object.
func (j JudgeSpec) MarshalJSON() ([]byte, error) {
	switch {
	case j.Kind == JudgeCode && j.Code != nil:
		return json.Marshal(codeJudgeDoc{j.header(), *j.Code})
	case j.Kind == JudgeModel && j.Model != nil:
		return json.Marshal(modelJudgeDoc{j.header(), *j.Model})
	case j.Kind == JudgeHarness && j.Harness != nil:
		return json.Marshal(harnessJudgeDoc{j.header(), *j.Harness})
	}
	return nil, fmt.Errorf("registry.JudgeSpec: kind %q without its fields", j.Kind)
}

// UnmarshalJSON reads a flat judge object, strictly, by its kind.
func (j *JudgeSpec) UnmarshalJSON(b []byte) error {
	var k struct {
		Kind JudgeKind `json:"kind"`
	}
	if err := json.Unmarshal(b, &k); err != nil {
		return fmt.Errorf("judge: %w", err)
	}
	*j = JudgeSpec{}
	switch k.Kind {
	case JudgeCode:
		var d codeJudgeDoc
		if err := unmarshalStrict(b, &d); err != nil {
			return fmt.Errorf("code judge: %w", err)
		}
		j.setHeader(d.judgeHeader)
		j.Code = &d.CodeJudge
	case JudgeModel:
		var d modelJudgeDoc
		if err := unmarshalStrict(b, &d); err != nil {
			return fmt.Errorf("model judge: %w", err)
		}
		j.setHeader(d.judgeHeader)
		j.Model = &d.ModelJudge
	case JudgeHarness:
		var d harnessJudgeDoc
		if err := unmarshalStrict(b, &d); err != nil {
			return fmt.Errorf("harness judge: %w", err)
		}
		j.setHeader(d.judgeHeader)
		j.Harness = &d.HarnessJudge
	default:
		return derrors.Invalidf("judge kind %q: %s", k.Kind, oneOf(JudgeCode, JudgeModel, JudgeHarness))
	}
	return nil
}

// checkShape implements shaper: the flat object of the kind it names.
func (*JudgeSpec) checkShape(v any, p string, pr *problems) {
	obj, ok := v.(map[string]any)
	if !ok {
		pr.add(p, "must be a JSON object, not %s", describe(v))
		return
	}
	kind, _ := obj["kind"].(string)
	t, ok := judgeDocs[JudgeKind(kind)]
	if !ok {
		if obj["kind"] == nil {
			pr.required(field(p, "kind"), `the judge kind: "code"`)
		} else {
			pr.add(field(p, "kind"), "%q %s (model and harness judges are legacy: stored ones stay readable)", clip(kind), oneOf(JudgeCode))
		}
		return
	}
	checkShape(v, t, p, pr)
}

// validate checks a judge. forNew refuses the legacy kinds.
func (j *JudgeSpec) validate(p *problems, forNew bool) {
	checkID(p, "id", j.ID)
	checkVersion(p, "version", j.Version)
	checkSpecTags(p, "tags", j.Tags)
	checkRequires(p, "requires", j.Requires)
	if forNew && j.Kind != JudgeCode {
		p.add("kind", "only code judges can be registered; %q judges are legacy (existing ones stay readable)", j.Kind)
		return
	}
	switch j.Kind {
	case JudgeCode:
		c := j.Code
		if !in(c.Language, "python", "node") {
			if c.Language == "" {
				p.required("language", `"python" or "node"`)
			} else {
				p.add("language", "%q must be python or node", clip(c.Language))
			}
		}
		switch {
		case c.Code != "" && c.Entrypoint != "":
			p.add("code", "set either code (inline source) or entrypoint (a path in image), not both")
		case c.Code == "" && c.Entrypoint == "":
			p.required("code", "inline source in code, or an entrypoint path in image")
		case c.Entrypoint != "" && c.Image == "":
			p.required("image", "the judge image that holds entrypoint")
		}
		if c.Entrypoint != "" && hasControl(c.Entrypoint) {
			p.add("entrypoint", "must not contain control characters")
		}
		if c.Image != "" {
			checkImage(p, "image", c.Image)
		}
		if c.Model != nil && (c.Model.Ref == "" || hasSpaceOrControl(c.Model.Ref)) {
			p.add("model.ref", "must name a model binding (no whitespace)")
		}
		bounded(p, "timeoutSec", int64(c.TimeoutSec), 0, maxTimeoutSec)
		if c.Runtime != "" && !idPattern.MatchString(c.Runtime) {
			p.add("runtime", "%q must be a runtime id: %s", clip(c.Runtime), idRule)
		}
	case JudgeModel:
		m := j.Model
		if m.Model == "" {
			p.required("model", "the model")
		}
		if m.Rubric == nil {
			p.required("rubric", "the rubric text or a reference {id, version}")
		} else {
			checkRubricInput(p, "rubric", m.Rubric)
		}
		for i, input := range m.Inputs {
			if !in(input, InputTrace, InputDOM, InputScreenshot) {
				p.add(index("inputs", i), "%q must be one of trace, dom, screenshot", clip(input))
			}
		}
		checkUnit(p, "passThreshold", m.PassThreshold)
		checkPromptTemplate(p, "promptTemplate", m.PromptTemplate)
		checkCriteria(p, "criteria", m.Criteria)
	case JudgeHarness:
		h := j.Harness
		h.Harness.check(p, "harness", true)
		if h.Rubric != nil {
			checkRubricInput(p, "rubric", h.Rubric)
		}
		if h.Runtime != "" && !idPattern.MatchString(h.Runtime) {
			p.add("runtime", "%q must be a runtime id: %s", clip(h.Runtime), idRule)
		}
		checkPromptTemplate(p, "promptTemplate", h.PromptTemplate)
		checkCriteria(p, "criteria", h.Criteria)
	}
}

// checkRubricInput checks an inline rubric or a reference.
func checkRubricInput(p *problems, at string, r *RubricInput) {
	if r.Ref != nil {
		r.Ref.check(p, at, true)
		return
	}
	if strings.TrimSpace(r.Text) == "" {
		p.add(at, "the inline rubric must not be empty")
	}
}

// checkRequires checks evidence requirements against the closed list.
func checkRequires(p *problems, at string, reqs []EvidenceRequirement) {
	for i, r := range reqs {
		rp := index(at, i)
		switch r.Kind {
		case EvidenceFinalAnswer, EvidenceScreenshot, EvidenceDOM:
			if r.Name != "" || r.Role != "" {
				p.add(rp, "a %s requirement takes no name or role", r.Kind)
			}
		case EvidenceToolCall:
			if r.Role != "" {
				p.add(field(rp, "role"), "a tool_call requirement takes an optional name, not a role")
			}
		case EvidenceArtifact:
			if r.Name != "" {
				p.add(field(rp, "name"), "an artifact requirement takes an optional role, not a name")
			}
		case EvidenceSpan:
			if r.Name == "" {
				p.required(field(rp, "name"), "the span's name")
			}
			if r.Role != "" {
				p.add(field(rp, "role"), "a span requirement takes a name, not a role")
			}
		case "":
			p.required(field(rp, "kind"), "the evidence kind")
		default:
			p.add(field(rp, "kind"), "%q %s", clip(string(r.Kind)), oneOf(EvidenceFinalAnswer, EvidenceToolCall, EvidenceArtifact, EvidenceSpan, EvidenceScreenshot, EvidenceDOM))
		}
	}
}

// checkUnit records a problem unless x is unset or within [0, 1].
func checkUnit(p *problems, at string, x *float64) {
	if x != nil && (*x < 0 || *x > 1) {
		p.add(at, "must be between 0 and 1, got %v", *x)
	}
}

// checkCriteria checks criteria: id rule, unique ids, weight > 0,
// passThreshold in [0, 1].
func checkCriteria(p *problems, at string, cs []Criterion) {
	seen := map[string]int{}
	for i, c := range cs {
		cp := index(at, i)
		checkID(p, field(cp, "id"), c.ID)
		if c.ID != "" {
			if j, dup := seen[c.ID]; dup {
				p.add(field(cp, "id"), "duplicate criterion id %q (also %s[%d])", clip(c.ID), at, j)
			}
			seen[c.ID] = i
		}
		if c.Weight != nil && !(*c.Weight > 0) {
			p.add(field(cp, "weight"), "must be greater than 0 (default 1), got %v", *c.Weight)
		}
		checkUnit(p, field(cp, "passThreshold"), c.PassThreshold)
	}
}
