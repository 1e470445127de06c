package api

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
)

// The input schemas of the generated tools come from the OpenAPI document
// (openapi.json), the same one the routes are checked against. An MCP
// client needs a self-contained JSON Schema, so every "#/components/..."
// reference is inlined; a schema that contains itself (directly or not) is
// put once under the tool schema's "$defs" and referenced from there.

// openapiOperation is what a tool needs of one operation of the document.
type openapiOperation struct {
	ID          string
	Summary     string
	Description string
	Params      []openapiParam
	Body        map[string]any // the JSON request body's schema, inlined; nil when none
	BodyNeeded  bool           // requestBody.required
	BodyDoc     string         // requestBody.description
	Defs        map[string]any // components the schemas above reference through "#/$defs/"
}

// openapiParam is one parameter of an operation, its $ref resolved.
type openapiParam struct {
	Name        string
	In          string // path, query or header
	Required    bool
	Description string
	Schema      map[string]any // inlined
}

// openapiOperations indexes the document's operations by "METHOD path",
// the path in Echo syntax (/runs/:id), as the route table writes it.
var openapiOperations = sync.OnceValues(func() (map[string]openapiOperation, error) {
	return parseOperations(openapiJSON)
})

// openapiMethods are the keys of a path item that are operations.
var openapiMethods = []string{"get", "put", "post", "delete", "patch", "head", "options"}

// parseOperations reads every operation of an OpenAPI document.
func parseOperations(doc []byte) (map[string]openapiOperation, error) {
	var d struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components map[string]map[string]any             `json:"components"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, fmt.Errorf("api: reading openapi.json: %w", err)
	}
	ops := map[string]openapiOperation{}
	for path, item := range d.Paths {
		var shared []any
		if raw, ok := item["parameters"]; ok {
			if err := json.Unmarshal(raw, &shared); err != nil {
				return nil, fmt.Errorf("api: openapi.json %s parameters: %w", path, err)
			}
		}
		for _, m := range openapiMethods {
			raw, ok := item[m]
			if !ok {
				continue
			}
			if _, excluded := toolExclusions[strings.ToUpper(m)+" "+echoPath(path)]; excluded {
				continue // no tool: its body may be other than JSON (POST /images)
			}
			var op map[string]any
			if err := json.Unmarshal(raw, &op); err != nil {
				return nil, fmt.Errorf("api: openapi.json %s %s: %w", m, path, err)
			}
			in := &inliner{components: d.Components, defs: map[string]any{}}
			o, err := in.operation(op, shared)
			if err != nil {
				return nil, fmt.Errorf("api: openapi.json %s %s: %w", strings.ToUpper(m), path, err)
			}
			o.Defs = in.defs
			ops[strings.ToUpper(m)+" "+echoPath(path)] = o
		}
	}
	return ops, nil
}

// echoPath turns an OpenAPI path (/runs/{id}) into Echo's (/runs/:id).
func echoPath(p string) string {
	segs := strings.Split(p, "/")
	for i, seg := range segs {
		if name, ok := strings.CutPrefix(seg, "{"); ok && strings.HasSuffix(name, "}") {
			segs[i] = ":" + strings.TrimSuffix(name, "}")
		}
	}
	return strings.Join(segs, "/")
}

// inliner resolves the references of one operation.
type inliner struct {
	components map[string]map[string]any
	defs       map[string]any  // recursive schemas, by component name
	stack      map[string]bool // the schema components being inlined
}

func (in *inliner) operation(op map[string]any, shared []any) (openapiOperation, error) {
	o := openapiOperation{}
	o.ID, _ = op["operationId"].(string)
	o.Summary, _ = op["summary"].(string)
	o.Description, _ = op["description"].(string)
	params, _ := op["parameters"].([]any)
	seen := map[string]bool{}
	// An operation's own parameters override the path item's (same name
	// and location).
	for _, p := range append(params, shared...) {
		pm, err := in.component(p, "parameters")
		if err != nil {
			return o, err
		}
		name, _ := pm["name"].(string)
		where, _ := pm["in"].(string)
		if seen[where+" "+name] {
			continue
		}
		seen[where+" "+name] = true
		schema, err := in.schema(pm["schema"])
		if err != nil {
			return o, fmt.Errorf("parameter %s: %w", name, err)
		}
		req, _ := pm["required"].(bool)
		doc, _ := pm["description"].(string)
		o.Params = append(o.Params, openapiParam{Name: name, In: where, Required: req || where == "path", Description: doc, Schema: schema})
	}
	if rb, ok := op["requestBody"]; ok {
		body, err := in.component(rb, "requestBodies")
		if err != nil {
			return o, err
		}
		o.BodyNeeded, _ = body["required"].(bool)
		o.BodyDoc, _ = body["description"].(string)
		content, _ := body["content"].(map[string]any)
		media, ok := content["application/json"].(map[string]any)
		if !ok {
			return o, fmt.Errorf("the request body is not application/json; a tool cannot send it")
		}
		if o.Body, err = in.schema(media["schema"]); err != nil {
			return o, fmt.Errorf("request body: %w", err)
		}
		if o.Body == nil {
			o.Body = map[string]any{}
		}
	}
	return o, nil
}

// component resolves v when it is {"$ref": "#/components/<kind>/<name>"}.
func (in *inliner) component(v any, kind string) (map[string]any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%v is not an object", v)
	}
	ref, ok := m["$ref"].(string)
	if !ok {
		return m, nil
	}
	name, ok := strings.CutPrefix(ref, "#/components/"+kind+"/")
	if !ok {
		return nil, fmt.Errorf("$ref %q: want #/components/%s/<name>", ref, kind)
	}
	c, ok := in.components[kind][name].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("$ref %q names nothing", ref)
	}
	return in.component(c, kind)
}

// schema returns a copy of the schema v with every component reference
// inlined (or, for a recursive one, pointed at "$defs").
func (in *inliner) schema(v any) (map[string]any, error) {
	if v == nil {
		return nil, nil
	}
	out, err := in.value(v)
	if err != nil {
		return nil, err
	}
	m, ok := out.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("schema %v is not an object", v)
	}
	return m, nil
}

func (in *inliner) value(v any) (any, error) {
	switch v := v.(type) {
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			var err error
			if out[i], err = in.value(e); err != nil {
				return nil, err
			}
		}
		return out, nil
	case map[string]any:
		ref, isRef := v["$ref"].(string)
		if !isRef {
			out := make(map[string]any, len(v))
			for k, e := range v {
				var err error
				if out[k], err = in.value(e); err != nil {
					return nil, err
				}
			}
			return out, nil
		}
		name, ok := strings.CutPrefix(ref, "#/components/schemas/")
		if !ok {
			return nil, fmt.Errorf("$ref %q: want #/components/schemas/<name>", ref)
		}
		target, ok := in.components["schemas"][name].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("$ref %q names no schema", ref)
		}
		var resolved map[string]any
		if in.stack[name] {
			// The schema contains itself: inline it once, under $defs.
			if _, done := in.defs[name]; !done {
				in.defs[name] = map[string]any{} // placeholder: stops the recursion
			}
			resolved = map[string]any{"$ref": "#/$defs/" + name}
		} else {
			if in.stack == nil {
				in.stack = map[string]bool{}
			}
			in.stack[name] = true
			body, err := in.value(target)
			delete(in.stack, name)
			if err != nil {
				return nil, err
			}
			resolved = body.(map[string]any)
			if d, ok := in.defs[name].(map[string]any); ok && len(d) == 0 {
				in.defs[name] = resolved
			}
		}
		// OpenAPI 3.1 lets a reference carry siblings (a description):
		// they apply on top of the referenced schema.
		if len(v) > 1 {
			merged := make(map[string]any, len(resolved)+len(v))
			for k, e := range resolved {
				merged[k] = e
			}
			for k, e := range v {
				if k != "$ref" {
					merged[k] = e
				}
			}
			resolved = merged
		}
		return resolved, nil
	default:
		return v, nil
	}
}
