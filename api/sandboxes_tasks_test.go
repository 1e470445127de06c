package api_test

import (
	"net/http"
	"strings"
	"testing"

	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
	"svc/store/records"
)

// seedHarnessSession writes a running session of member createdBy in ws
// that booted harness h@1.0.0, straight into the store.
func (e *testEnv) seedHarnessSession(t testing.TB, ws, createdBy string) eval.Run {
	t.Helper()
	run := e.seedSession(t, ws, createdBy)
	run.Harness = registry.Ref{ID: "h", Version: "1.0.0"}
	row, err := records.Row(run)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.PutRun(t.Context(), row); err != nil {
		t.Fatalf("PutRun: %v", err)
	}
	return run
}

func init() {
	snapshot := func(t *testing.T, e *testEnv, a tenant, p map[string]string) any {
		res := e.do(t, http.MethodGet, "/sandboxes/"+p["id"], "", bearer(a.key))
		want(t, res, http.StatusOK, "GET /sandboxes/:id")
		v := decode[map[string]any](t, res)
		delete(v, "live")
		return v
	}
	// A's own task gets past every tenancy check and stops at 503 (no
	// orchestrator in the test API).
	registerCrossTenant("POST /sandboxes/:id/tasks", crossTenantFixture{
		Setup: func(t *testing.T, e *testEnv, a tenant) map[string]string {
			return map[string]string{"id": e.seedHarnessSession(t, a.ws, e.subjectOf(t, bearer(a.key))).ID}
		},
		Snapshot: snapshot, Body: `{"prompt":"say hi"}`, OwnStatus: http.StatusServiceUnavailable,
	})
	registerCrossTenant("GET /sandboxes/:id/tasks/:taskId/trace", crossTenantFixture{
		Setup: func(t *testing.T, e *testEnv, a tenant) map[string]string {
			sub := e.subjectOf(t, bearer(a.key))
			s := e.seedHarnessSession(t, a.ws, sub)
			task := e.seedRun(t, a.ws, sub, func(r *eval.Run) { r.Class, r.Group = eval.ClassInteractive, s.ID })
			return map[string]string{"id": s.ID, "taskId": task.ID}
		},
		Snapshot: snapshot,
	})
}

// TestSandboxTaskRefusals (spec §4.8, §7): a task needs a prompt (400) and
// a session that booted a harness (400 naming harness); the trace route
// serves a session's own tasks only (404 for another run) and reads a
// settled task's sealed trace from since, done.
func TestSandboxTaskRefusals(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "sbxt")
	sub := e.subjectOf(t, bearer(a.key))
	plain := e.seedSession(t, a.ws, sub)
	booted := e.seedHarnessSession(t, a.ws, sub)
	for _, c := range []struct {
		id, body string
		status   int
		says     string
	}{
		{booted.ID, `{}`, http.StatusBadRequest, "prompt is required"},
		{booted.ID, `{"prompt":"   "}`, http.StatusBadRequest, "prompt is required"},
		{booted.ID, `{"prompt":"x","timeoutSec":-1}`, http.StatusBadRequest, "timeoutSec"},
		{plain.ID, `{"prompt":"x"}`, http.StatusBadRequest, "boots no harness"},
		{"sbx_none", `{"prompt":"x"}`, http.StatusNotFound, "sbx_none"},
	} {
		res := e.do(t, http.MethodPost, "/sandboxes/"+c.id+"/tasks", c.body, bearer(a.key))
		if res.Status != c.status || !strings.Contains(string(res.Body), c.says) {
			t.Errorf("POST /sandboxes/%s/tasks %s = %d %s, want %d saying %q", c.id, c.body, res.Status, res.Body, c.status, c.says)
		}
	}
	other := e.seedRun(t, a.ws, sub) // not a task of the session
	want(t, e.do(t, http.MethodGet, "/sandboxes/"+booted.ID+"/tasks/"+other.ID+"/trace", "", bearer(a.key)), http.StatusNotFound, "a run that is not the session's task")
	task := e.seedRun(t, a.ws, sub, func(r *eval.Run) { r.Class, r.Group = eval.ClassInteractive, booted.ID })
	type traceAnswer struct {
		TaskID string           `json:"taskId"`
		Status string           `json:"status"`
		Since  int              `json:"since"`
		Events []map[string]any `json:"events"`
		Next   int              `json:"next"`
		Done   bool             `json:"done"`
	}
	full := decode[traceAnswer](t, e.do(t, http.MethodGet, "/sandboxes/"+booted.ID+"/tasks/"+task.ID+"/trace", "", bearer(a.key)))
	if len(full.Events) != 2 || full.Next != 2 || !full.Done {
		t.Errorf("trace of a settled task = %+v, want its 2 sealed events, next 2, done", full)
	}
	tail := decode[traceAnswer](t, e.do(t, http.MethodGet, "/sandboxes/"+booted.ID+"/tasks/"+task.ID+"/trace?since=1", "", bearer(a.key)))
	if len(tail.Events) != 1 || tail.Events[0]["kind"] != "message" || tail.Next != 2 || !tail.Done {
		t.Errorf("trace since=1 = %+v, want the second event only, done", tail)
	}
	want(t, e.do(t, http.MethodGet, "/sandboxes/"+booted.ID+"/tasks/"+task.ID+"/trace?since=-1", "", bearer(a.key)), http.StatusBadRequest, "since=-1")
}
