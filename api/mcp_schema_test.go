package api

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseOperationsInlines: references are inlined (a reference's
// description applies on top), a recursive schema goes once under $defs,
// path-item parameters apply, and paths are in Echo's syntax.
func TestParseOperationsInlines(t *testing.T) {
	doc := []byte(`{
	  "paths": {"/nodes/{id}": {
	    "parameters": [{"$ref": "#/components/parameters/ID"}],
	    "post": {"operationId": "putNode", "summary": "Put a node",
	      "parameters": [{"name": "dry", "in": "query", "schema": {"type": "boolean"}}],
	      "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Node", "description": "the node"}}}}}
	  }},
	  "components": {
	    "parameters": {"ID": {"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}},
	    "schemas": {"Node": {"type": "object", "properties": {"name": {"$ref": "#/components/schemas/Name"}, "children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}}}},
	                "Name": {"type": "string", "maxLength": 10}}
	  }
	}`)
	ops, err := parseOperations(doc)
	if err != nil {
		t.Fatal(err)
	}
	op, ok := ops["POST /nodes/:id"]
	if !ok {
		t.Fatalf("operations %v, want POST /nodes/:id", ops)
	}
	node := map[string]any{"type": "object", "properties": map[string]any{
		"name":     map[string]any{"type": "string", "maxLength": float64(10)},
		"children": map[string]any{"type": "array", "items": map[string]any{"$ref": "#/$defs/Node"}},
	}}
	wantBody := map[string]any{"type": "object", "description": "the node", "properties": node["properties"]}
	if diff := cmp.Diff(wantBody, op.Body); diff != "" {
		t.Errorf("body schema (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"Node": node}, op.Defs); diff != "" {
		t.Errorf("$defs (-want +got):\n%s", diff)
	}
	var params []string
	for _, p := range op.Params {
		params = append(params, p.In+":"+p.Name)
	}
	if diff := cmp.Diff([]string{"query:dry", "path:id"}, params); diff != "" {
		t.Errorf("parameters (-want +got):\n%s", diff)
	}
	if !op.BodyNeeded || op.ID != "putNode" || op.Summary != "Put a node" {
		t.Errorf("operation = %+v", op)
	}
	if _, err := parseOperations([]byte(`{"paths": {"/x": {"get": {"parameters": [{"$ref": "#/components/parameters/Nope"}]}}}}`)); err == nil {
		t.Error("a reference to nothing parsed")
	}
}
