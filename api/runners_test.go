package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"svc/api"
	"svc/auth"
	"svc/internal/platform/secrets"
	"svc/internal/service/runners"
	"svc/store"
)

func init() {
	for _, route := range []string{"POST /runner/jobs/:id/heartbeat", "POST /runner/jobs/:id/result"} {
		registerCrossTenant(route, crossTenantFixture{
			Setup: func(t *testing.T, e *testEnv, a tenant) map[string]string {
				j := e.queueRunnerJob(t, a.ws, "run-x", nil)
				return map[string]string{"id": j.ID}
			},
			Body: `{"leaseId":"lease_x"}`,
			Snapshot: func(t *testing.T, e *testEnv, a tenant, _ map[string]string) any {
				res := e.do(t, http.MethodGet, "/runner-jobs", "", bearer(a.key))
				want(t, res, http.StatusOK, "GET /runner-jobs")
				return string(res.Body)
			},
			// A's admin key finds A's job, and is refused because it is
			// not a runner key: a job of another workspace is 404 first.
			OwnStatus: http.StatusForbidden,
		})
	}
}

// queueRunnerJob queues a job of run in workspace ws, as the worker's
// runner driver does, with secrets sealed under the test key.
func (e *testEnv) queueRunnerJob(t *testing.T, ws, run string, secretEnv map[string]string) store.RunnerJob {
	t.Helper()
	id := runners.JobID(run, 1)
	payload, err := json.Marshal(runners.Job{RunID: run, Attempt: 1, Command: []string{"/bin/echo", "ok"}, Case: json.RawMessage(`{"id":"c1"}`)})
	if err != nil {
		t.Fatal(err)
	}
	var sealed []byte
	if secretEnv != nil {
		sealer, err := secrets.NewSealer(testSecretKey)
		if err != nil {
			t.Fatal(err)
		}
		plain, _ := json.Marshal(secretEnv)
		if sealed, err = sealer.Seal(ws, runners.SecretsName(id), plain); err != nil {
			t.Fatal(err)
		}
	}
	j, _, err := e.store.EnqueueRunnerJob(t.Context(), store.RunnerJob{ID: id, Workspace: ws, Runtime: "own", RunID: run, Attempt: 1,
		ScorecardID: "sc_" + run, Payload: payload, Secrets: sealed, CreatedAt: e.clock.Now()})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// runnerKey mints a runner key in a's workspace.
func (e *testEnv) runnerKey(t *testing.T, a tenant) string {
	t.Helper()
	res := e.do(t, http.MethodPost, "/runner-keys", `{"label":"box 1"}`, bearer(a.key))
	want(t, res, http.StatusCreated, "POST /runner-keys")
	var k struct {
		RunnerKey string `json:"runnerKey"`
		ID        string `json:"id"`
	}
	if err := json.Unmarshal(res.Body, &k); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(k.RunnerKey, "rnr_") {
		t.Fatalf("runner key %q does not start with rnr_", k.RunnerKey)
	}
	return k.RunnerKey
}

func TestRunnerKeyOpensOnlyTheRunnerRoutes(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "rk")
	key := e.runnerKey(t, a)
	for _, r := range []struct{ method, path, body string }{
		{http.MethodGet, "/runs", ""},
		{http.MethodGet, "/keys", ""},
		{http.MethodPost, "/runner-keys", `{}`},
		{http.MethodGet, "/runner-jobs", ""},
	} {
		res := e.do(t, r.method, r.path, r.body, bearer(key))
		want(t, res, http.StatusForbidden, r.method+" "+r.path+" with a runner key")
	}
	// Listed among the keys (and so revocable) with its kind's prefix.
	res := e.do(t, http.MethodGet, "/keys", "", bearer(a.key))
	want(t, res, http.StatusOK, "GET /keys")
	if !strings.Contains(string(res.Body), `"prefix":"rnr_`) {
		t.Errorf("GET /keys = %s, want the runner key listed", res.Body)
	}
	// Other credentials may not lease.
	want(t, e.do(t, http.MethodPost, "/runner/lease", `{"waitMs":1}`, bearer(a.key)), http.StatusForbidden, "lease with an API key")
}

// TestRunnerKeyOnlyOpensRunnerRoutes: over the whole route table, a runner
// key opens the runner routes and every other route that takes a
// principal answers it 403, the Authenticated ones (/me, /workspaces,
// /notifications, /mcp) included; the internal routes answer 401, as to
// any caller without the operator token (issue 30, finding 9).
func TestRunnerKeyOnlyOpensRunnerRoutes(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "rko")
	key := e.runnerKey(t, a)
	runnerRoutes := 0
	for _, r := range e.srv.Routes() {
		name := r.Method + " " + r.Path
		res := e.do(t, r.Method, anyPath(r.Path), bodyFor(r.Method), bearer(key))
		switch r.Action {
		case auth.Public:
			continue // no credential is read
		case auth.Internal:
			want(t, res, http.StatusUnauthorized, name+" with a runner key")
		case auth.Runner:
			runnerRoutes++
			if res.Status == http.StatusUnauthorized || res.Status == http.StatusForbidden {
				t.Errorf("%s with a runner key: status %d, want the route opened; body %s", name, res.Status, res.Body)
			}
		default:
			if res.Status != http.StatusForbidden {
				t.Errorf("%s with a runner key: status %d, want 403; body %s", name, res.Status, res.Body)
				continue
			}
			if info := res.ErrorInfo(t); info.Code != api.CodeForbidden || !strings.Contains(info.Message, "opens only the runner routes") {
				t.Errorf("%s with a runner key: %+v, want FORBIDDEN saying the key opens only the runner routes", name, info)
			}
		}
	}
	if runnerRoutes == 0 {
		t.Fatal("the route table declares no route with the Runner action")
	}
	// An MCP client holding a runner key lists no tools.
	res := e.do(t, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, bearer(key),
		header{"Accept", "application/json, text/event-stream"})
	want(t, res, http.StatusForbidden, "MCP tools/list with a runner key")
}

func TestRunnerLeaseHeartbeatResult(t *testing.T) {
	e := newEnv(t)
	a, b := e.tenant(t, "ra"), e.tenant(t, "rb")
	key, otherKey := e.runnerKey(t, a), e.runnerKey(t, b)

	want(t, e.do(t, http.MethodPost, "/runner/lease", `{"waitMs":1}`, bearer(key)), http.StatusNoContent, "lease with no job")
	for _, body := range []string{`{"heartbeatMs":5}`, `{"waitMs":60000}`, `{"runner":"a\u0001b"}`, `{"unknown":1}`} {
		want(t, e.do(t, http.MethodPost, "/runner/lease", body, bearer(key)), http.StatusBadRequest, "lease "+body)
	}

	j := e.queueRunnerJob(t, a.ws, "run-1", map[string]string{"API_TOKEN": "s3cret-value"})
	// Another workspace's runner never sees it.
	want(t, e.do(t, http.MethodPost, "/runner/lease", `{"waitMs":1}`, bearer(otherKey)), http.StatusNoContent, "lease by another workspace's runner")

	res := e.do(t, http.MethodPost, "/runner/lease", `{"runner":"box-1","heartbeatMs":1000,"waitMs":1}`, bearer(key))
	want(t, res, http.StatusOK, "lease")
	var l runners.Lease
	res.JSON(t, &l)
	if l.JobID != j.ID || l.LeaseID == "" || l.Job.RunID != "run-1" || l.Job.Secrets["API_TOKEN"] != "s3cret-value" {
		t.Fatalf("lease = %+v, want job %s with its secrets opened", l, j.ID)
	}
	if got, wantExp := l.LeaseExpires, e.clock.Now().Add(runners.MinLease); !got.Equal(wantExp) {
		t.Errorf("lease expires %s, want %s (3 heartbeats, at least %s)", got, wantExp, runners.MinLease)
	}
	// The list shows the lease, never the payload or the secrets.
	list := e.do(t, http.MethodGet, "/runner-jobs", "", bearer(a.key))
	want(t, list, http.StatusOK, "GET /runner-jobs")
	if s := string(list.Body); !strings.Contains(s, `"state":"leased"`) || !strings.Contains(s, "/box-1") || strings.Contains(s, "s3cret") {
		t.Errorf("GET /runner-jobs = %s, want the job leased to box-1 without its secrets", s)
	}

	hbPath, resultPath := "/runner/jobs/"+l.JobID+"/heartbeat", "/runner/jobs/"+l.JobID+"/result"
	hb := fmt.Sprintf(`{"leaseId":%q,"heartbeatMs":1000}`, l.LeaseID)
	res = e.do(t, http.MethodPost, hbPath, hb, bearer(key))
	want(t, res, http.StatusOK, "heartbeat")
	var reply runners.HeartbeatReply
	res.JSON(t, &reply)
	if reply.Cancelled {
		t.Errorf("heartbeat before any cancel = %+v, want not cancelled", reply)
	}
	want(t, e.do(t, http.MethodPost, hbPath, `{"leaseId":"lease_other"}`, bearer(key)), http.StatusConflict, "heartbeat of another lease")
	want(t, e.do(t, http.MethodPost, hbPath, `{}`, bearer(key)), http.StatusBadRequest, "heartbeat without a lease id")
	want(t, e.do(t, http.MethodPost, hbPath, hb, bearer(otherKey)), http.StatusNotFound, "heartbeat by another workspace's runner")

	// A cancel reaches the runner on its next heartbeat.
	if _, err := e.store.CancelRunnerJobs(t.Context(), a.ws, "", "sc_run-1", e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	res = e.do(t, http.MethodPost, hbPath, hb, bearer(key))
	want(t, res, http.StatusOK, "heartbeat after the cancel")
	res.JSON(t, &reply)
	if !reply.Cancelled {
		t.Errorf("heartbeat after the cancel = %+v, want cancelled", reply)
	}

	result := fmt.Sprintf(`{"leaseId":%q,"result":{"exitCode":-1,"cancelled":true,"durationMs":12,"host":"box"}}`, l.LeaseID)
	want(t, e.do(t, http.MethodPost, resultPath, result, bearer(otherKey)), http.StatusNotFound, "result by another workspace's runner")
	want(t, e.do(t, http.MethodPost, resultPath, `{"leaseId":"lease_other","result":{}}`, bearer(key)), http.StatusConflict, "result of another lease")
	want(t, e.do(t, http.MethodPost, resultPath, result, bearer(key)), http.StatusNoContent, "result")
	want(t, e.do(t, http.MethodPost, resultPath, result, bearer(key)), http.StatusNoContent, "the same result again")
	got, err := e.store.GetRunnerJob(t.Context(), a.ws, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	var r runners.Result
	if err := json.Unmarshal(got.Result, &r); err != nil || got.State != store.RunnerJobDone || !r.Cancelled || r.Host != "box" {
		t.Errorf("stored job %+v result %+v (%v), want done and cancelled", got, r, err)
	}
	want(t, e.do(t, http.MethodPost, hbPath, hb, bearer(key)), http.StatusConflict, "heartbeat of a finished job")
}

func TestRunnerJobLostTooOftenFailsItsCase(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "rl")
	key := e.runnerKey(t, a)
	j := e.queueRunnerJob(t, a.ws, "run-poison", nil)
	for i := range runners.MaxLostLeases {
		res := e.do(t, http.MethodPost, "/runner/lease", `{"heartbeatMs":1000,"waitMs":1}`, bearer(key))
		want(t, res, http.StatusOK, fmt.Sprintf("lease %d", i+1))
		// The runner dies: its lease runs out.
		e.clock.Advance(runners.MinLease + 1e9)
	}
	want(t, e.do(t, http.MethodPost, "/runner/lease", `{"waitMs":1}`, bearer(key)), http.StatusNoContent, "lease after 3 lost leases")
	got, err := e.store.GetRunnerJob(t.Context(), a.ws, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	var r runners.Result
	if err := json.Unmarshal(got.Result, &r); err != nil || got.State != store.RunnerJobDone || !r.Invalid || !strings.Contains(r.Error, "3 runners in a row lost this job") {
		t.Errorf("job %+v result %+v (%v), want it done with the case failed", got, r, err)
	}
}
