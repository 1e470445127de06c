package api_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"svc/internal/domain/trace"
	"svc/internal/service/runners"
	"svc/store"
)

func init() {
	registerCrossTenant("POST /runner/jobs/:id/logs", crossTenantFixture{
		Setup: func(t *testing.T, e *testEnv, a tenant) map[string]string {
			j := e.queueRunnerJob(t, a.ws, "run-x", nil)
			return map[string]string{"id": j.ID}
		},
		Body: `{"leaseId":"lease_x","chunks":[]}`,
		Snapshot: func(t *testing.T, e *testEnv, a tenant, _ map[string]string) any {
			res := e.do(t, http.MethodGet, "/runner-jobs", "", bearer(a.key))
			want(t, res, http.StatusOK, "GET /runner-jobs")
			return string(res.Body)
		},
		OwnStatus: http.StatusForbidden,
	})
}

// leaseRunnerJob leases the job of run for a's runner (key) and returns
// the lease.
func (e *testEnv) leaseRunnerJob(t *testing.T, a tenant, key, run string) runners.Lease {
	t.Helper()
	e.queueRunnerJob(t, a.ws, run, nil)
	res := e.do(t, http.MethodPost, "/runner/lease", `{"heartbeatMs":1000,"waitMs":1}`, bearer(key))
	want(t, res, http.StatusOK, "lease")
	var l runners.Lease
	res.JSON(t, &l)
	return l
}

func TestRunnerJobLogs(t *testing.T) {
	e := newEnv(t)
	a, b := e.tenant(t, "la"), e.tenant(t, "lb")
	key, otherKey := e.runnerKey(t, a), e.runnerKey(t, b)
	l := e.leaseRunnerJob(t, a, key, "run-logs")
	path := "/runner/jobs/" + l.JobID + "/logs"
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	body := fmt.Sprintf(`{"leaseId":%q,"chunks":[{"seq":1,"stream":"stdout","data":%q},{"seq":2,"stream":"stderr","data":%q}]}`, l.LeaseID, b64("hello\n"), b64("warn\n"))
	want(t, e.do(t, http.MethodPost, path, body, bearer(key)), http.StatusNoContent, "post logs")
	want(t, e.do(t, http.MethodPost, path, body, bearer(key)), http.StatusNoContent, "the same post again")
	got, err := e.store.ListRunnerJobLogs(t.Context(), a.ws, l.JobID, l.LeaseID, 0, 10)
	if err != nil || len(got) != 2 || string(got[0].Data) != "hello\n" || got[1].Stream != "stderr" {
		t.Errorf("stored chunks %+v, %v; want the two once", got, err)
	}
	for _, tc := range []struct {
		name, body, key string
		status          int
	}{
		{"another workspace's runner", body, otherKey, http.StatusNotFound},
		{"a person's key", body, a.key, http.StatusForbidden},
		{"another lease", strings.Replace(body, l.LeaseID, "lease_other", 1), key, http.StatusConflict},
		{"bad stream", fmt.Sprintf(`{"leaseId":%q,"chunks":[{"seq":3,"stream":"stdin","data":""}]}`, l.LeaseID), key, http.StatusBadRequest},
		{"data not base64", fmt.Sprintf(`{"leaseId":%q,"chunks":[{"seq":3,"stream":"stdout","data":"%%%%"}]}`, l.LeaseID), key, http.StatusBadRequest},
	} {
		want(t, e.do(t, http.MethodPost, path, tc.body, bearer(tc.key)), tc.status, tc.name)
	}
}

// TestRunTokenOpensTheOTLPDoorForItsRunOnly: the token a lease carries
// lets the real OpenTelemetry exporter land spans of the job's run (as
// pending spans of that run), is refused for spans of any other run and
// on every other route, and dies with the job.
func TestRunTokenOpensTheOTLPDoorForItsRunOnly(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "ot")
	key := e.runnerKey(t, a)
	run := e.runningRun(t, a.ws, "key:"+a.id, "h")
	l := e.leaseRunnerJob(t, a, key, run.ID)
	if !strings.HasPrefix(l.OTLPToken, runners.OTLPTokenPrefix) {
		t.Fatalf("lease %+v carries no run token", l)
	}
	if errs := e.exportWithSDK(t, l.OTLPToken, run.ID); len(errs) != 0 {
		t.Fatalf("exporting the run's spans with its token: %v", errs)
	}
	if got := pendingKinds(t, e, a.ws, run.ID); len(got) != 4 {
		t.Errorf("pending spans of the run = %v, want the 4 exported", got)
	}

	other := e.runningRun(t, a.ws, "key:"+a.id, "h")
	for _, tc := range []struct {
		name, runID string
		status      int
	}{
		{"another run's spans", other.ID, http.StatusForbidden},
		{"spans of no run", "", http.StatusForbidden},
	} {
		body, _ := proto.Marshal(otlpRequest(tc.runID, "s"))
		if status, _, out := e.postOTLP(t, l.OTLPToken, body, trace.EncodingProtobuf, ""); status != tc.status {
			t.Errorf("%s: status %d (%s), want %d", tc.name, status, out, tc.status)
		}
	}
	if got := pendingKinds(t, e, a.ws, other.ID); len(got) != 0 {
		t.Errorf("pending spans of the other run = %v, want none", got)
	}
	// The token opens nothing else.
	want(t, e.do(t, http.MethodGet, "/runs/"+run.ID, "", bearer(l.OTLPToken)), http.StatusUnauthorized, "GET /runs/:id with a run token")
	want(t, e.do(t, http.MethodPost, "/runner/lease", `{"waitMs":1}`, bearer(l.OTLPToken)), http.StatusUnauthorized, "lease with a run token")

	// Once the job's result is in, the token is dead.
	result := fmt.Sprintf(`{"leaseId":%q,"result":{"exitCode":0}}`, l.LeaseID)
	want(t, e.do(t, http.MethodPost, "/runner/jobs/"+l.JobID+"/result", result, bearer(key)), http.StatusNoContent, "result")
	body, _ := proto.Marshal(otlpRequest(run.ID, "late"))
	if status, _, out := e.postOTLP(t, l.OTLPToken, body, trace.EncodingProtobuf, ""); status != http.StatusUnauthorized {
		t.Errorf("a finished job's token: status %d (%s), want 401", status, out)
	}
	if status, _, _ := e.postOTLP(t, "rjt_"+strings.Repeat("A", 43), body, trace.EncodingProtobuf, ""); status != http.StatusUnauthorized {
		t.Errorf("an unknown run token: status %d, want 401", status)
	}
}

// FuzzRunnerJobLogs posts arbitrary bodies to the log route of a leased
// job, with its runner's key, so every body reaches the handler: no input
// may cause a 5xx or a panic, and every answer must be one the OpenAPI
// document allows.
func FuzzRunnerJobLogs(f *testing.F) {
	e := newEnv(f)
	a := e.tenant(f, "fl")
	res := e.do(f, http.MethodPost, "/runner-keys", `{"label":"fuzz"}`, bearer(a.key))
	var k struct {
		RunnerKey string `json:"runnerKey"`
	}
	if err := json.Unmarshal(res.Body, &k); err != nil || k.RunnerKey == "" {
		f.Fatalf("POST /runner-keys = %d %s", res.Status, res.Body)
	}
	id := runners.JobID("run-fz", 1)
	payload := `{"runId":"run-fz","attempt":1,"command":["/bin/true"],"case":{}}`
	if _, _, err := e.store.EnqueueRunnerJob(f.Context(), store.RunnerJob{ID: id, Workspace: a.ws, Runtime: "own", RunID: "run-fz", Attempt: 1,
		Payload: json.RawMessage(payload), CreatedAt: e.clock.Now()}); err != nil {
		f.Fatal(err)
	}
	lease := e.do(f, http.MethodPost, "/runner/lease", `{"heartbeatMs":60000,"waitMs":1}`, bearer(k.RunnerKey))
	var l runners.Lease
	lease.JSON(f, &l)
	for _, s := range []string{
		fmt.Sprintf(`{"leaseId":%q,"chunks":[{"seq":1,"stream":"stdout","data":"aGk="}]}`, l.LeaseID),
		fmt.Sprintf(`{"leaseId":%q,"chunks":[{"seq":-1,"stream":"system","data":null}]}`, l.LeaseID),
		fmt.Sprintf(`{"leaseId":%q,"chunks":[{"seq":9223372036854775807,"stream":"stderr","data":"////"}]}`, l.LeaseID),
		fmt.Sprintf(`{"leaseId":%q,"chunks":null}`, l.LeaseID),
		`{"leaseId":"x","chunks":[{}]}`, ``, `null`, `[]`, `{}`, `{"leaseId":"\ud800"}`, "{\"leaseId\":\"\xff\"}", `{"chunks":[{"seq":1e400}]}`,
	} {
		f.Add([]byte(s))
	}
	path := "/runner/jobs/" + l.JobID + "/logs"
	f.Fuzz(func(t *testing.T, body []byte) {
		res := e.do(t, http.MethodPost, path, string(body), bearer(k.RunnerKey))
		if res.Status >= 500 {
			t.Fatalf("POST %s %q = %d %s", path, body, res.Status, res.Body)
		}
	})
}
