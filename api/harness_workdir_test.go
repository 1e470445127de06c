package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestHarnessWorkDirDotDotRefused is issue 30's finding 9: a harness
// workDir that leaves the job's work directory was accepted at
// registration and refused only when a case was dispatched. Registration
// refuses it with a 400 naming the field, for a harness and for a
// template instance that pins it; a workDir inside the work directory is
// accepted.
func TestHarnessWorkDirDotDotRefused(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "wd")
	spec := func(id, workDir string) string {
		return fmt.Sprintf(`{"id":%q,"version":"1.0.0","kind":"process","command":["run"],"workDir":%q}`, id, workDir)
	}
	for i, workDir := range []string{"..", "../x", "a/../../x", "/etc", `a\..\..`, "."} {
		res := e.do(t, http.MethodPost, "/harnesses", spec(fmt.Sprintf("bad-%d", i), workDir), bearer(a.key))
		want(t, res, http.StatusBadRequest, "workDir "+workDir)
		assertProblemAt(t, res.Body, "workDir", "workDir "+workDir)
	}
	for i, workDir := range []string{"src", "a/b/../c", "./src"} {
		e.register(t, a.key, "/harnesses", spec(fmt.Sprintf("good-%d", i), workDir), http.StatusCreated)
	}

	// An instance whose pin sets the workDir of its template's harness.
	tmpl := `{"id":"wdt","version":"1.0.0","parameters":[{"path":"workDir","required":true}],
		"harness":{"kind":"process","command":["agent"]}}`
	e.register(t, a.key, "/harness-templates", tmpl, http.StatusCreated)
	inst := `{"id":"wdi","version":"1.0.0","template":{"id":"wdt","version":"1.0.0"},"pins":{"workDir":"../../root"}}`
	res := e.do(t, http.MethodPost, "/harnesses", inst, bearer(a.key))
	want(t, res, http.StatusBadRequest, "an instance pinning workDir ../../root")
	assertProblemAt(t, res.Body, "workDir", "an instance pinning workDir ../../root")
}

// assertProblemAt checks that a 400 body lists a problem at path whose
// message says what a workDir must be.
func assertProblemAt(t *testing.T, body []byte, path, what string) {
	t.Helper()
	var b struct {
		Error struct {
			Message string `json:"message"`
			Details struct {
				Problems []struct{ Path, Message string } `json:"problems"`
			} `json:"details"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatalf("%s: %v in %s", what, err, body)
	}
	for _, p := range b.Error.Details.Problems {
		if p.Path == path && strings.Contains(p.Message, "inside the job's work directory") {
			return
		}
	}
	t.Errorf("%s: no problem at %q saying it must stay inside the work directory: %s", what, path, body)
}
