package registry

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"svc/internal/platform/derrors"
)

// HarnessTemplateSpec is a registered harness template: a harness
// configuration with named holes (parameters) that instances fill with pins.
type HarnessTemplateSpec struct {
	ID          string   `json:"id"`
	Version     string   `json:"version"`
	Description string   `json:"description,omitempty"`
	Tags        []string `json:"tags,omitempty"`
	// Parameters are the paths in Harness an instance may pin. A required
	// parameter must be pinned, and may be absent from Harness even where
	// a harness requires the value (an image, a command).
	Parameters []TemplateParameter `json:"parameters,omitempty"`
	// Harness is the configuration instances start from; its values are
	// the parameters' defaults.
	Harness HarnessConfig `json:"harness"`
}

// TemplateParameter is one pinnable path of a template.
type TemplateParameter struct {
	// Path is where the pin goes in the harness configuration, in path
	// syntax ("services.web.image", "command[1]", `env["MODEL"]`); never
	// "kind".
	Path        string `json:"path"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

// Instance is what GET /harnesses/:id/:version/instance returns: the
// template an instance is made from and its pins.
type Instance struct {
	Template Ref            `json:"template"`
	Pins     map[string]any `json:"pins"`
}

// Instance returns the template reference and pins of h, and false when h
// is a self-contained harness rather than an instance.
func (h *HarnessSpec) Instance() (Instance, bool) {
	if h.Template == nil {
		return Instance{}, false
	}
	pins := h.Pins
	if pins == nil {
		pins = map[string]any{}
	}
	return Instance{Template: *h.Template, Pins: pins}, true
}

// validate checks a template: its parameters, and its body as a harness
// whose missing required values are left to required parameters.
func (t *HarnessTemplateSpec) validate(p *problems) {
	checkID(p, "id", t.ID)
	checkVersion(p, "version", t.Version)
	checkSpecTags(p, "tags", t.Tags)

	configFields := jsonFields(reflect.TypeFor[HarnessConfig]())
	var required []string
	seen := map[string]int{}
	for i, prm := range t.Parameters {
		pp := field(index("parameters", i), "path")
		segs, err := parsePath(prm.Path)
		switch {
		case prm.Path == "":
			p.required(pp, "a path in the harness configuration")
			continue
		case err != nil:
			p.add(pp, "%v", err)
			continue
		case formatPath(segs) != prm.Path:
			p.add(pp, "write the path as %q", formatPath(segs))
			continue
		case segs[0].isIndex:
			p.add(pp, "must start with a member of the harness configuration")
			continue
		case segs[0].key == "kind":
			p.add(pp, "the harness kind cannot be a parameter")
			continue
		}
		if _, ok := configFields[segs[0].key]; !ok {
			p.add(pp, "%q is not a member of a harness configuration", segs[0].key)
			continue
		}
		for j, other := range t.Parameters[:i] {
			if _, ok := seen[other.Path]; ok && overlaps(prm.Path, other.Path) {
				p.add(pp, "overlaps parameters[%d] (%q); parameters must not contain one another", j, other.Path)
			}
		}
		seen[prm.Path] = i
		if prm.Required {
			required = append(required, prm.Path)
		}
	}

	var body problems
	t.Harness.validate(&body, "harness")
	for _, pr := range body.list {
		if pr.missing && coveredBy(strings.TrimPrefix(pr.Path, "harness."), required) {
			continue
		}
		p.push(pr)
	}
	p.truncated += body.truncated
}

// overlaps reports whether one path contains the other.
func overlaps(a, b string) bool {
	return a == b || isUnder(a, b) || isUnder(b, a)
}

// isUnder reports whether path p lies strictly inside path parent.
func isUnder(p, parent string) bool {
	return strings.HasPrefix(p, parent) && len(p) > len(parent) && (p[len(parent)] == '.' || p[len(parent)] == '[')
}

// coveredBy reports whether path p is one of paths or inside one of them.
func coveredBy(p string, paths []string) bool {
	for _, q := range paths {
		if p == q || isUnder(p, q) {
			return true
		}
	}
	return false
}

// ResolveInstance builds the self-contained harness an instance stands for:
// the template's configuration with the instance's pins applied, under the
// instance's id, version, description and tags, validated as a harness.
// Pins must name declared parameters and every required parameter must be
// pinned; a problem is ErrInvalid (a *ValidationError for the resolved
// harness). The service layer calls it at registration, to refuse an
// instance that cannot resolve, and before dispatch and diff.
func ResolveInstance(tmpl *HarnessTemplateSpec, inst *HarnessSpec) (Spec, error) {
	if inst.Template == nil {
		return Spec{}, derrors.Invalidf("harness %s@%s is not a template instance", inst.ID, inst.Version)
	}
	if *inst.Template != (Ref{ID: tmpl.ID, Version: tmpl.Version}) {
		return Spec{}, derrors.Invalidf("harness %s@%s is an instance of %s, not of %s@%s", inst.ID, inst.Version, inst.Template, tmpl.ID, tmpl.Version)
	}
	params := map[string]TemplateParameter{}
	var names []string
	for _, prm := range tmpl.Parameters {
		params[prm.Path] = prm
		names = append(names, prm.Path)
	}
	var p problems
	pinned := map[string]string{} // canonical path -> key as written
	for _, k := range sortedKeys(inst.Pins) {
		segs, err := parsePath(k)
		if err != nil {
			p.add(field("pins", k), "not a parameter path: %v", err)
			continue
		}
		canon := formatPath(segs)
		if _, ok := params[canon]; !ok {
			p.add(field("pins", k), "not a parameter of template %s@%s (parameters: %s)", tmpl.ID, tmpl.Version, listOrNone(names))
			continue
		}
		if prev, dup := pinned[canon]; dup {
			p.add(field("pins", k), "pins the same parameter as %q", prev)
			continue
		}
		pinned[canon] = k
	}
	for _, prm := range tmpl.Parameters {
		if _, ok := pinned[prm.Path]; prm.Required && !ok {
			p.required(field("pins", prm.Path), fmt.Sprintf("template %s@%s requires this parameter", tmpl.ID, tmpl.Version))
		}
	}
	if err := p.err(Harness); err != nil {
		return Spec{}, err
	}

	body, err := CanonicalJSON(tmpl.Harness)
	if err != nil {
		return Spec{}, fmt.Errorf("registry.ResolveInstance: %w", err)
	}
	tree, err := parseTree(body)
	if err != nil {
		return Spec{}, fmt.Errorf("registry.ResolveInstance: %w", err)
	}
	for _, canon := range sortedKeys(pinned) {
		segs, _ := parsePath(canon) // parsed above
		tree, err = setPath(tree, segs, inst.Pins[pinned[canon]])
		if err != nil {
			return Spec{}, derrors.Invalidf("pins[%q]: %v", pinned[canon], err)
		}
	}
	obj := tree.(map[string]any)
	obj["id"], obj["version"] = inst.ID, inst.Version
	if inst.Description != "" {
		obj["description"] = inst.Description
	}
	if len(inst.Tags) > 0 {
		tags := make([]any, len(inst.Tags))
		for i, t := range inst.Tags {
			tags[i] = t
		}
		obj["tags"] = tags
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return Spec{}, fmt.Errorf("registry.ResolveInstance: %w", err)
	}
	s, err := Parse(Harness, raw, false)
	if err != nil {
		return Spec{}, fmt.Errorf("harness %s@%s resolved from template %s@%s: %w", inst.ID, inst.Version, tmpl.ID, tmpl.Version, err)
	}
	return s, nil
}

// listOrNone joins names, or says there are none.
func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// setPath sets the value at segs inside node, creating objects on the way;
// a null value removes the member. Array elements must exist.
func setPath(node any, segs []segment, val any) (any, error) {
	if len(segs) == 0 {
		return val, nil
	}
	s := segs[0]
	if s.isIndex {
		arr, ok := node.([]any)
		if !ok {
			return nil, fmt.Errorf("%s is not an array in the template", describe(node))
		}
		if s.index >= len(arr) {
			return nil, fmt.Errorf("index %d is past the end of an array of %d", s.index, len(arr))
		}
		child, err := setPath(arr[s.index], segs[1:], val)
		if err != nil {
			return nil, err
		}
		arr[s.index] = child
		return arr, nil
	}
	var obj map[string]any
	switch x := node.(type) {
	case nil:
		obj = map[string]any{}
	case map[string]any:
		obj = x
	default:
		return nil, fmt.Errorf("%s is not an object in the template", describe(node))
	}
	if len(segs) == 1 && val == nil {
		delete(obj, s.key)
		return obj, nil
	}
	child, err := setPath(obj[s.key], segs[1:], val)
	if err != nil {
		return nil, err
	}
	obj[s.key] = child
	return obj, nil
}
