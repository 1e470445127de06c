package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"svc/auth"
	"svc/internal/testing/testwait"
	"svc/store"
)

// Approvals (spec §4.9, §3; issue 33; docs/approvals.md) through the API
// with the real store: an agent's call a policy names parks; a person
// decides once; the waiting call gets the route's answer or a 403.

// agentCall are the headers of a call made by an agent.
func agentCall(key string, more ...header) []header {
	return append([]header{bearer(key), {"X-Svc-Agent-Id", "bot-1"}, {"X-Svc-Agent-Name", "Bot"}, {"X-Svc-Conversation-Id", "conv-1"}}, more...)
}

// parkPolicy parks agents' dataset registrations in a's workspace.
const parkPolicy = `{"policies":[{"name":"datasets","tools":["create_dataset"],"expiry":"30m"}]}`

// parkDataset parks an agent's registration of dataset id and returns the
// approval (the caller stops waiting at once: 202).
func parkDataset(t *testing.T, e *testEnv, a0 tenant, id string) store.Approval {
	a := a0
	t.Helper()
	want(t, e.do(t, http.MethodPut, "/approval-policies", parkPolicy, bearer(a.key)), http.StatusOK, "PUT /approval-policies")
	res := e.do(t, http.MethodPost, "/datasets", datasetSpec(id, "1.0.0"), agentCall(a.key, header{"Prefer", "wait=0"})...)
	want(t, res, http.StatusAccepted, "an agent's parked POST /datasets")
	var out struct {
		Error struct{ Details struct{ Approval string } }
	}
	if err := json.Unmarshal(res.Body, &out); err != nil {
		t.Fatal(err)
	}
	var ap store.Approval
	e.do(t, http.MethodGet, "/approvals/"+out.Error.Details.Approval, "", bearer(a0.key)).JSON(t, &ap)
	return ap
}

func init() {
	setup := func(t *testing.T, e *testEnv, a tenant) map[string]string {
		return map[string]string{"id": parkDataset(t, e, a, "parked").ID}
	}
	snap := func(t *testing.T, e *testEnv, a tenant, p map[string]string) any {
		res := e.do(t, http.MethodGet, "/approvals/"+p["id"], "", bearer(a.key))
		want(t, res, http.StatusOK, "GET /approvals/:id")
		var out map[string]any
		res.JSON(t, &out)
		return out
	}
	registerCrossTenant("GET /approvals/:id", crossTenantFixture{Setup: setup, Snapshot: snap})
	registerCrossTenant("POST /approvals/:id/decide", crossTenantFixture{Setup: setup, Snapshot: snap, Body: `{"decision":"deny"}`})
}

// TestApprovalsLiveApprove: the agent's call waits; a person approves;
// the call answers the route's own 201 (delivered); the record keeps the
// agent in its origin; a second decision is 409; an agent cannot decide.
func TestApprovalsLiveApprove(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "ap")
	want(t, e.do(t, http.MethodPut, "/approval-policies", parkPolicy, bearer(a.key)), http.StatusOK, "PUT /approval-policies")
	done := make(chan int, 1)
	go func() {
		res := e.do(t, http.MethodPost, "/datasets", datasetSpec("live", "1.0.0"), agentCall(a.key)...)
		done <- res.Status
	}()
	var pending []store.Approval
	testwait.Until(t, 10*time.Second, "the call to park", func() bool {
		res := e.do(t, http.MethodGet, "/approvals?status=pending", "", bearer(a.key))
		res.JSON(t, &pending)
		return len(pending) == 1
	})
	ap := pending[0]
	if ap.Origin.AgentID != "bot-1" || ap.Origin.ConversationID != "conv-1" || ap.Tool != "create_dataset" || !strings.Contains(string(ap.Body), `"live"`) {
		t.Errorf("parked approval = %+v; want the agent in its origin and the body as sent", ap)
	}
	res := e.do(t, http.MethodPost, "/approvals/"+ap.ID+"/decide", `{"decision":"approve"}`, agentCall(a.key)...)
	want(t, res, http.StatusForbidden, "an agent's decide")
	want(t, e.do(t, http.MethodPost, "/approvals/"+ap.ID+"/decide", `{"decision":"approve"}`, bearer(a.key)), http.StatusOK, "decide")
	if st := <-done; st != http.StatusCreated {
		t.Fatalf("the waiting call answered %d, want the route's 201", st)
	}
	var got store.Approval
	e.do(t, http.MethodGet, "/approvals/"+ap.ID, "", bearer(a.key)).JSON(t, &got)
	if got.Status != store.ApprovalApproved || !got.Delivered || got.Resumed || got.Result == nil || got.Result.Status != http.StatusCreated {
		t.Errorf("after the run: %+v; want approved, delivered, the 201 stored", got)
	}
	want(t, e.do(t, http.MethodGet, "/datasets/live/versions/1.0.0", "", bearer(a.key)), http.StatusOK, "the dataset the approved call registered")
	want(t, e.do(t, http.MethodPost, "/approvals/"+ap.ID+"/decide", `{"decision":"deny"}`, bearer(a.key)), http.StatusConflict, "a second decision")
}

// TestApprovalsDeny: a denied call answers 403 naming who denied it;
// nothing ran.
func TestApprovalsDeny(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "ap")
	want(t, e.do(t, http.MethodPut, "/approval-policies", parkPolicy, bearer(a.key)), http.StatusOK, "PUT /approval-policies")
	done := make(chan string, 1)
	go func() {
		res := e.do(t, http.MethodPost, "/datasets", datasetSpec("nope", "1.0.0"), agentCall(a.key)...)
		done <- strings.TrimSpace(string(res.Body)) + " " + http.StatusText(res.Status)
	}()
	var pending []store.Approval
	testwait.Until(t, 10*time.Second, "the call to park", func() bool {
		e.do(t, http.MethodGet, "/approvals?status=pending", "", bearer(a.key)).JSON(t, &pending)
		return len(pending) == 1
	})
	want(t, e.do(t, http.MethodPost, "/approvals/"+pending[0].ID+"/decide", `{"decision":"deny","reason":"not today"}`, bearer(a.key)), http.StatusOK, "deny")
	got := <-done
	if !strings.Contains(got, "Forbidden") || !strings.Contains(got, "denied by") || !strings.Contains(got, "not today") {
		t.Errorf("the denied call answered %s; want 403 saying who denied it and why", got)
	}
	want(t, e.do(t, http.MethodGet, "/datasets/nope/versions/1.0.0", "", bearer(a.key)), http.StatusNotFound, "the denied registration")
	want(t, e.do(t, http.MethodPut, "/approval-policies", `{"policies":[{"tools":["["]}]}`, bearer(a.key)), http.StatusBadRequest, "a bad glob")
}

// TestApprovalsKeepNoSecrets: an approval keeps the call's answer without
// the secrets a route answers once (the waiting caller gets them; the
// stored answer does not), shows the answer only to the member whose call
// it was, and a secret's value never parks (an approval would keep it in
// the clear): the agent is told a person sets it.
func TestApprovalsKeepNoSecrets(t *testing.T) {
	e := newEnv(t, withOIDC())
	a := e.tenant(t, "apsec")
	viewer := e.join(t, a, "apsec-viewer", auth.RoleViewer)
	policy := `{"policies":[{"name":"keys","tools":["create_key","put_secret"],"expiry":"30m"}]}`
	want(t, e.do(t, http.MethodPut, "/approval-policies", policy, bearer(a.key)), http.StatusOK, "PUT /approval-policies")

	type answer struct {
		status int
		body   []byte
	}
	done := make(chan answer, 1)
	go func() {
		res := e.do(t, http.MethodPost, "/keys", `{"label":"bot key"}`, agentCall(a.key)...)
		done <- answer{res.Status, res.Body}
	}()
	var pending []store.Approval
	testwait.Until(t, 10*time.Second, "the key creation to park", func() bool {
		e.do(t, http.MethodGet, "/approvals?status=pending", "", bearer(a.key)).JSON(t, &pending)
		return len(pending) == 1
	})
	want(t, e.do(t, http.MethodPost, "/approvals/"+pending[0].ID+"/decide", `{"decision":"approve"}`, bearer(a.key)), http.StatusOK, "decide")
	got := <-done
	var created struct {
		APIKey string `json:"apiKey"`
	}
	if err := json.Unmarshal(got.body, &created); err != nil || got.status != http.StatusCreated || created.APIKey == "" {
		t.Fatalf("the waiting caller got %d %s, want the 201 with its new key", got.status, got.body)
	}
	var mine store.Approval
	e.do(t, http.MethodGet, "/approvals/"+pending[0].ID, "", bearer(a.key)).JSON(t, &mine)
	if mine.Result == nil || mine.Result.Status != http.StatusCreated || strings.Contains(string(mine.Result.Body), created.APIKey) ||
		!strings.Contains(string(mine.Result.Body), "not kept") {
		t.Errorf("the stored answer, read by its member = %+v; want the 201 without the key", mine.Result)
	}
	var theirs store.Approval
	e.do(t, http.MethodGet, "/approvals/"+pending[0].ID, "", bearer(viewer), selectWorkspace(a.ws)).JSON(t, &theirs)
	if theirs.Result == nil || theirs.Result.Status != http.StatusCreated || len(theirs.Result.Body) != 0 {
		t.Errorf("the stored answer, read by another member = %+v; want the status only", theirs.Result)
	}

	res := e.do(t, http.MethodPut, "/secrets/db", `{"value":"hunter2"}`, agentCall(a.key)...)
	want(t, res, http.StatusForbidden, "an agent's parked secret write")
	if !strings.Contains(string(res.Body), "a person sets secrets") || strings.Contains(string(res.Body), "hunter2") {
		t.Errorf("the refusal = %s; want it to say a person sets secrets, never the value", res.Body)
	}
	var all []store.Approval
	e.do(t, http.MethodGet, "/approvals", "", bearer(a.key)).JSON(t, &all)
	for _, ap := range all {
		if strings.Contains(string(ap.Body), "hunter2") {
			t.Errorf("an approval keeps the secret's value: %+v", ap)
		}
	}
}
