package api

import (
	"go/parser"
	"go/token"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/labstack/echo/v4"
)

// The writer a tool call's route answers into keeps what the route sent:
// the first status, the headers as they were when it was written, and the
// body; a route that flushes (an Echo Response.Flush) works through it.
func TestToolResponseKeepsTheRoutesAnswer(t *testing.T) {
	e := echo.New()
	e.GET("/flushed", func(c echo.Context) error {
		c.Response().Header().Set("X-Svc-Version", "1.0.0")
		c.Response().WriteHeader(http.StatusCreated)
		c.Response().Header().Set("X-Svc-Late", "ignored")
		c.Response().WriteHeader(http.StatusTeapot)
		if _, err := c.Response().Write([]byte(`{"a":`)); err != nil {
			return err
		}
		c.Response().Flush()
		_, err := c.Response().Write([]byte(`1}`))
		return err
	})
	e.GET("/plain", func(c echo.Context) error { return c.String(http.StatusOK, "hi") })
	e.GET("/empty", func(c echo.Context) error { return nil })
	for _, c := range []struct {
		path, version, body string
		status              int
	}{
		{"/flushed", "1.0.0", `{"a":1}`, http.StatusCreated},
		{"/plain", "", "hi", http.StatusOK},
		{"/empty", "", "", http.StatusOK},
	} {
		w := newToolResponse()
		e.ServeHTTP(w, httptestRequest(t, c.path))
		got := struct {
			Status        int
			Version, Late string
			Body          string
		}{w.status, w.written().Get("X-Svc-Version"), w.written().Get("X-Svc-Late"), w.body.String()}
		want := got
		want.Status, want.Version, want.Late, want.Body = c.status, c.version, "", c.body
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("GET %s (-want +got):\n%s", c.path, diff)
		}
	}
}

func httptestRequest(t *testing.T, path string) *http.Request {
	t.Helper()
	r, err := http.NewRequestWithContext(t.Context(), http.MethodGet, path, http.NoBody)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Production code of the api package imports no test package: the MCP
// tools answer through toolResponse, not net/http/httptest's recorder.
func TestAPIProductionCodeImportsNoTestPackage(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if path == "testing" || strings.HasSuffix(path, "test") || strings.Contains(path, "/internal/testing/") {
				t.Errorf("%s imports %s, a test package", name, path)
			}
		}
	}
}
