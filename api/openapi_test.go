package api_test

import (
	"bytes"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/go-cmp/cmp"

	"svc/api"
	"svc/api/apitest"
	"svc/auth"
	"svc/internal/platform/config"
)

// echoParam is an Echo path parameter, ":id", which OpenAPI writes "{id}".
var echoParam = regexp.MustCompile(`:([A-Za-z_][A-Za-z0-9_]*)`)

func openAPIPath(echoPath string) string {
	return echoParam.ReplaceAllString(echoPath, "{$1}")
}

// TestRoutesMatchDocument fails when a route exists that the document lacks
// or the reverse. It reads the live table, so the routes later resources
// add are checked without touching this test.
func TestRoutesMatchDocument(t *testing.T) {
	doc := apitest.Document(t)
	s := api.New(api.Options{Config: config.Defaults()})

	inTable := map[string]api.Route{}
	for _, r := range s.Routes() {
		if strings.Contains(r.Path, "*") {
			t.Errorf("route %s %s: wildcard paths cannot be described in OpenAPI; use named parameters", r.Method, r.Path)
		}
		inTable[r.Method+" "+openAPIPath(r.Path)] = r
	}
	inDoc := map[string]*openapi3.Operation{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			inDoc[method+" "+path] = op
		}
	}

	for _, key := range sortedKeys(inTable) {
		r := inTable[key]
		op, ok := inDoc[key]
		if !ok {
			t.Errorf("route %s %s is not in api/openapi.json: document it", r.Method, r.Path)
			continue
		}
		if op.Summary != r.Summary {
			t.Errorf("%s: summary in the table %q, in api/openapi.json %q: make them equal", key, r.Summary, op.Summary)
		}
		if op.OperationID == "" {
			t.Errorf("%s: api/openapi.json gives it no operationId", key)
		}
		if op.Responses.Default() == nil {
			t.Errorf("%s: api/openapi.json gives it no default (error) response", key)
		}
		// Public routes must say so in the document, so that clients and
		// scanners do not think they need a credential, and the reverse.
		public := op.Security != nil && len(*op.Security) == 0
		if public != (r.Action == auth.Public) {
			t.Errorf("%s: action %q but api/openapi.json security %v: a public route has \"security\": [], others do not", key, r.Action, op.Security)
		}
	}
	for _, key := range sortedKeys(inDoc) {
		if _, ok := inTable[key]; !ok {
			t.Errorf("api/openapi.json documents %s but no route serves it: remove it or add the route", key)
		}
	}
}

func TestOpenAPIPathConversion(t *testing.T) {
	tests := []struct{ in, want string }{
		{"/healthz", "/healthz"},
		{"/runs/:id", "/runs/{id}"},
		{"/datasets/:id/versions/:version/tags", "/datasets/{id}/versions/{version}/tags"},
	}
	for _, tt := range tests {
		if got := openAPIPath(tt.in); got != tt.want {
			t.Errorf("openAPIPath(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestErrorCodesMatchDocument(t *testing.T) {
	doc := apitest.Document(t)
	var inDoc []string
	for _, v := range doc.Components.Schemas["Error"].Value.Properties["error"].Value.Properties["code"].Value.Enum {
		inDoc = append(inDoc, v.(string))
	}
	if diff := cmp.Diff(api.ErrorCodes(), inDoc); diff != "" {
		t.Errorf("Error.code enum in api/openapi.json differs from the codes of errors.go (-code +document):\n%s", diff)
	}
}

func TestOpenAPIServed(t *testing.T) {
	_, client, _ := newServer(t, api.Options{})
	res := client.Get(t, "/openapi.json")
	if res.Status != http.StatusOK {
		t.Fatalf("status = %d, want 200", res.Status)
	}
	if !bytes.Equal(res.Body, api.OpenAPIDocument()) {
		t.Errorf("served document differs from the embedded one")
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(res.Body)
	if err != nil {
		t.Fatalf("served document does not load: %v", err)
	}
	if err := doc.Validate(t.Context()); err != nil {
		t.Fatalf("served document is not valid OpenAPI: %v", err)
	}
	if doc.OpenAPI != "3.1.0" || !doc.IsOpenAPI31OrLater() {
		t.Errorf("openapi = %q, want 3.1.0", doc.OpenAPI)
	}
}

// TestDocumentCatchesMismatch shows that the response check can fail: a
// body the document does not allow is reported.
func TestDocumentCatchesMismatch(t *testing.T) {
	_, client, _ := newServer(t, api.Options{})
	req := client.NewRequest(t, http.MethodGet, "/healthz", nil)
	tests := []struct {
		name string
		res  *apitest.Response
	}{
		{"wrong body", &apitest.Response{Status: 200, Header: jsonHeader("rid"), Body: []byte(`{"ok":"yes"}`)}},
		{"extra field", &apitest.Response{Status: 200, Header: jsonHeader("rid"), Body: []byte(`{"ok":true,"x":1}`)}},
		{"no request id", &apitest.Response{Status: 200, Header: jsonHeader(""), Body: []byte(`{"ok":true}`)}},
		{"error not in shape", &apitest.Response{Status: 500, Header: jsonHeader("rid"), Body: []byte(`{"message":"boom"}`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recordingTB{TB: t}
			apitest.ValidateResponse(rec, req, tt.res)
			if !rec.failed {
				t.Errorf("ValidateResponse accepted %d %s", tt.res.Status, tt.res.Body)
			}
		})
	}
}

func jsonHeader(requestID string) http.Header {
	h := http.Header{"Content-Type": {"application/json"}}
	if requestID != "" {
		h.Set("X-Request-Id", requestID)
	}
	return h
}

// recordingTB notes a failure instead of failing the real test.
type recordingTB struct {
	testing.TB
	failed bool
}

func (r *recordingTB) Errorf(string, ...any) { r.failed = true }
func (r *recordingTB) Fatalf(string, ...any) { r.failed = true }
func (r *recordingTB) Helper()               {}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
