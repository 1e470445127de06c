package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
)

// HarnessModel is what a harness says of the model it uses. Its JSON is
// either a string, a label naming the model the harness drives (sealed as
// it is; the harness brings its own access), or {ref: <binding>}, a model
// binding of the workspace (PUT /workspace/models/:name) the harness calls
// through the control plane's model proxy with a run-scoped token: the key
// stays in the workspace secret store and never reaches the job.
type HarnessModel struct {
	// Label is the string form.
	Label string
	// Ref is the binding name of the object form.
	Ref string
}

// harnessModelRef is the object form of a HarnessModel.
type harnessModelRef struct {
	Ref string `json:"ref"`
}

// IsZero reports whether the harness declares no model (omitzero).
func (m HarnessModel) IsZero() bool { return m.Label == "" && m.Ref == "" }

// Binding is the model binding the harness calls through the proxy, ""
// when it names none (no model, or a label).
func (m HarnessModel) Binding() string { return m.Ref }

// MarshalJSON writes the label as a string, the binding as {ref}.
func (m HarnessModel) MarshalJSON() ([]byte, error) {
	if m.Ref != "" {
		return json.Marshal(harnessModelRef{Ref: m.Ref})
	}
	return json.Marshal(m.Label)
}

// UnmarshalJSON reads a string or a {ref} object.
func (m *HarnessModel) UnmarshalJSON(b []byte) error {
	*m = HarnessModel{}
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '"' {
		return json.Unmarshal(b, &m.Label)
	}
	var r harnessModelRef
	if err := unmarshalStrict(b, &r); err != nil {
		return fmt.Errorf("model: want a model label (a string) or a binding reference {ref}: %w", err)
	}
	m.Ref = r.Ref
	return nil
}

// checkShape implements shaper.
func (*HarnessModel) checkShape(v any, p string, pr *problems) {
	switch m := v.(type) {
	case string:
	case map[string]any:
		checkShape(v, reflect.TypeFor[harnessModelRef](), p, pr)
		if r, ok := m["ref"]; !ok || r == "" {
			pr.add(field(p, "ref"), "required: the name of the workspace model binding the harness calls (PUT /workspace/models/:name)")
		}
	default:
		pr.add(p, "must be a model label (a string) or a model binding reference {ref: <binding name>}, not %s", describe(v))
	}
}

// bindingName is the shape of a model binding's name (a workspace secret
// name's shape: models.Put checks it with secrets.ValidName).
var bindingName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// validate checks the model of a harness at at ("model").
func (m HarnessModel) validate(p *problems, at string) {
	switch {
	case m.Label != "" && (len(m.Label) > 256 || hasSpaceOrControl(m.Label)):
		p.add(at, "must be a model reference of at most 256 characters without whitespace")
	case m.Ref != "" && !bindingName.MatchString(m.Ref):
		p.add(field(at, "ref"), "%q is not a model binding name: 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit (the name of PUT /workspace/models/:name)", clip(m.Ref))
	}
}
