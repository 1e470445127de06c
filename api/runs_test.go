package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"svc/auth"
	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
	"svc/internal/domain/trace"
	"svc/internal/service/runs"
	"svc/store"
	"svc/store/records"
)

// The run routes' submit path needs a workflow engine; it is tested end to
// end with Temporal's real server in package workflows. Here: validation,
// reads, visibility, paging, notifications and the webhook secret, on runs
// seeded in the store as a finished workflow leaves them.

// subjectOf is the subject of a credential, from GET /me.
func (e *testEnv) subjectOf(t testing.TB, hs ...header) string {
	t.Helper()
	res := e.do(t, http.MethodGet, "/me", "", hs...)
	want(t, res, http.StatusOK, "GET /me")
	return decode[auth.Principal](t, res).Subject
}

type seedOpt func(*eval.Run)

func personal(member string) seedOpt {
	return func(r *eval.Run) { r.Kind = eval.KindConversation; r.Origin = &eval.Origin{Actor: member} }
}
func childOf(scorecard string, trial int, canonical bool) seedOpt {
	return func(r *eval.Run) {
		r.ParentScorecardID, r.Trial, r.Canonical, r.Trigger = scorecard, trial, &canonical, eval.TriggerScorecard
	}
}
func createdAt(at time.Time) seedOpt { return func(r *eval.Run) { r.CreatedAt, r.UpdatedAt = at, at } }

// seedRun stores a succeeded run of ws with a sealed trajectory, two log
// chunks and one webhook delivery, as DispatchRun and DeliverWebhook leave
// them.
func (e *testEnv) seedRun(t testing.TB, ws, createdBy string, opts ...seedOpt) eval.Run {
	t.Helper()
	now := e.clock.Now()
	tr := []eval.TraceEvent{
		{Kind: eval.EventToolCall, Name: "search", Input: json.RawMessage(`{"q":"x"}`)},
		{Kind: eval.EventMessage, Role: "assistant", Content: "4"},
	}
	run := eval.Run{
		ID: eval.NewID("run"), Tenant: ws, Harness: registry.Ref{ID: "h", Version: "1.0.0"}, CaseID: "c1",
		Status: eval.StatusSucceeded, Kind: eval.KindEval, Trigger: eval.TriggerAPI, CreatedBy: createdBy,
		CreatedAt: now, UpdatedAt: now, WebhookURL: "https://hooks.example.com/x",
		Result: &eval.CaseResult{Harness: "h@1.0.0", CaseID: "c1", Trace: tr, Scores: []eval.Score{}, Pass: true, TraceSealed: true, EvidenceVersion: eval.EvidenceVersion},
	}
	for _, o := range opts {
		o(&run)
	}
	row, err := records.Row(run)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.CreateRun(t.Context(), row); err != nil {
		t.Fatalf("CreateRun: %v", err)
	}
	events, digest, err := trace.SealEvents(tr)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.store.SealTrajectory(t.Context(), store.Trajectory{Workspace: ws, RunID: run.ID, Source: "svc",
		EventCount: len(tr), Digest: digest, SealedAt: run.CreatedAt, Audience: run.Audience(), Events: events}); err != nil {
		t.Fatalf("SealTrajectory: %v", err)
	}
	if err := e.store.AppendRunLogs(t.Context(), []store.RunLog{
		{Workspace: ws, RunID: run.ID, Seq: 1, Stream: "stdout", Data: "hello\n", At: now},
		{Workspace: ws, RunID: run.ID, Seq: 2, Stream: "stderr", Data: "warn\n", At: now},
	}); err != nil {
		t.Fatalf("AppendRunLogs: %v", err)
	}
	if err := e.store.AddWebhookDelivery(t.Context(), store.WebhookDelivery{Workspace: ws, MessageID: "msg_" + run.ID,
		RunID: run.ID, URL: run.WebhookURL, Attempt: 1, Status: 200, At: now}); err != nil {
		t.Fatalf("AddWebhookDelivery: %v", err)
	}
	return run
}

func init() {
	seeded := func(t *testing.T, e *testEnv, a tenant) map[string]string {
		run := e.seedRun(t, a.ws, e.subjectOf(t, bearer(a.key)))
		return map[string]string{"id": run.ID}
	}
	snapshot := func(path string) func(t *testing.T, e *testEnv, a tenant, p map[string]string) any {
		return func(t *testing.T, e *testEnv, a tenant, p map[string]string) any {
			res := e.do(t, http.MethodGet, strings.ReplaceAll(path, ":id", p["id"]), "", bearer(a.key))
			want(t, res, http.StatusOK, "GET "+path)
			return string(res.Body)
		}
	}
	for _, path := range []string{"/runs/:id", "/runs/:id/logs", "/runs/:id/trajectory", "/runs/:id/webhook-deliveries", "/trajectories/:id"} {
		registerCrossTenant("GET "+path, crossTenantFixture{Setup: seeded, Snapshot: snapshot(path)})
	}
}

func TestRunReads(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "runs")
	me := e.subjectOf(t, bearer(a.key))
	run := e.seedRun(t, a.ws, me)

	got := decode[eval.Run](t, e.do(t, http.MethodGet, "/runs/"+run.ID, "", bearer(a.key)))
	if got.ID != run.ID || got.Status != eval.StatusSucceeded || got.Result == nil || !got.Result.Pass {
		t.Errorf("GET /runs/:id = %+v", got)
	}

	logs := decode[runs.Logs](t, e.do(t, http.MethodGet, "/runs/"+run.ID+"/logs", "", bearer(a.key)))
	if logs.Live || len(logs.Chunks) != 2 || logs.LastSeq != 2 || logs.Chunks[0].Data != "hello\n" {
		t.Errorf("logs = %+v", logs)
	}
	logs = decode[runs.Logs](t, e.do(t, http.MethodGet, "/runs/"+run.ID+"/logs?after=1", "", bearer(a.key)))
	if len(logs.Chunks) != 1 || logs.Chunks[0].Stream != "stderr" {
		t.Errorf("logs after 1 = %+v", logs)
	}

	tr := decode[runs.TrajectoryView](t, e.do(t, http.MethodGet, "/runs/"+run.ID+"/trajectory", "", bearer(a.key)))
	if tr.Meta.Source != "svc" || !tr.Meta.Sealed || tr.Meta.EventCount != 2 || len(tr.Events) != 2 || !strings.HasPrefix(tr.Meta.Digest, "sha256:") {
		t.Errorf("trajectory = %+v", tr)
	}
	same := decode[runs.TrajectoryView](t, e.do(t, http.MethodGet, "/trajectories/"+run.ID, "", bearer(a.key)))
	if diff := cmp.Diff(tr, same); diff != "" {
		t.Errorf("GET /trajectories/:id differs from the run's trajectory (-run +trajectories):\n%s", diff)
	}

	ds := decode[[]store.WebhookDelivery](t, e.do(t, http.MethodGet, "/runs/"+run.ID+"/webhook-deliveries", "", bearer(a.key)))
	if len(ds) != 1 || ds[0].MessageID != "msg_"+run.ID || ds[0].Status != 200 {
		t.Errorf("deliveries = %+v", ds)
	}

	for _, path := range []string{"/runs/run_nope", "/runs/run_nope/logs", "/runs/run_nope/trajectory", "/trajectories/run_nope"} {
		want(t, e.do(t, http.MethodGet, path, "", bearer(a.key)), http.StatusNotFound, "GET "+path)
	}
	for _, q := range []string{"limit=0", "limit=abc", "scope=mine", "cursor=!!!", "cursor=bm9wZQ"} {
		want(t, e.do(t, http.MethodGet, "/runs?"+q, "", bearer(a.key)), http.StatusBadRequest, "GET /runs?"+q)
	}
	want(t, e.do(t, http.MethodGet, "/runs/"+run.ID+"/logs?after=-1", "", bearer(a.key)), http.StatusBadRequest, "logs after=-1")
}

// TestRunTrajectoryFallback: before a run is sealed, its trajectory is the
// trace of its stored result (meta.source "result"); with no result, 404.
func TestRunTrajectoryFallback(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "fallback")
	now := e.clock.Now()
	for _, tc := range []struct {
		name   string
		result *eval.CaseResult
		status int
	}{
		{"no result", nil, http.StatusNotFound},
		{"unsealed result", &eval.CaseResult{Harness: "h@1", CaseID: "c", Scores: []eval.Score{}, Trace: []eval.TraceEvent{{Kind: eval.EventError, Message: "boom"}}}, http.StatusOK},
	} {
		run := eval.Run{ID: eval.NewID("run"), Tenant: a.ws, Harness: registry.Ref{ID: "h", Version: "1"}, CaseID: "c",
			Status: eval.StatusRunning, Kind: eval.KindEval, CreatedAt: now, UpdatedAt: now, Result: tc.result}
		row, _ := records.Row(run)
		if _, err := e.store.CreateRun(t.Context(), row); err != nil {
			t.Fatal(err)
		}
		res := e.do(t, http.MethodGet, "/runs/"+run.ID+"/trajectory", "", bearer(a.key))
		want(t, res, tc.status, tc.name)
		if tc.status == http.StatusOK {
			v := decode[runs.TrajectoryView](t, res)
			if v.Meta.Source != runs.SourceResult || v.Meta.Sealed || len(v.Events) != 1 {
				t.Errorf("%s: %+v", tc.name, v)
			}
		}
		logs := decode[runs.Logs](t, e.do(t, http.MethodGet, "/runs/"+run.ID+"/logs", "", bearer(a.key)))
		if !logs.Live || len(logs.Chunks) != 0 {
			t.Errorf("%s: logs of a running run = %+v, want live and empty", tc.name, logs)
		}
	}
}

// TestRunVisibility: personal runs (agent conversations, sandbox sessions)
// are readable only by their member; admins get no bypass; refusal is 404.
func TestRunVisibility(t *testing.T) {
	e := newEnv(t, withOIDC())
	a := e.tenant(t, "vis")
	alice := e.join(t, a, "alice", auth.RoleMember)
	bob := e.join(t, a, "bob", auth.RoleAdmin)
	asAlice := []header{bearer(alice), selectWorkspace(a.ws)}
	asBob := []header{bearer(bob), selectWorkspace(a.ws)}

	mine := e.seedRun(t, a.ws, "alice", personal("alice"))
	shared := e.seedRun(t, a.ws, "alice")
	unstamped := e.seedRun(t, a.ws, "", func(r *eval.Run) { r.Kind = eval.KindConversation })
	sandbox := e.seedRun(t, a.ws, "alice", func(r *eval.Run) { r.Kind, r.Lifetime = eval.KindSandbox, "session" })

	for _, path := range []string{"/runs/%s", "/runs/%s/logs", "/runs/%s/trajectory", "/runs/%s/webhook-deliveries", "/trajectories/%s"} {
		for _, id := range []string{mine.ID, sandbox.ID} {
			p := fmt.Sprintf(path, id)
			want(t, e.do(t, http.MethodGet, p, "", asAlice...), http.StatusOK, "alice reads her own "+p)
			want(t, e.do(t, http.MethodGet, p, "", asBob...), http.StatusNotFound, "admin bob reads alice's personal "+p)
			want(t, e.do(t, http.MethodGet, p, "", bearer(a.key)), http.StatusNotFound, "the workspace key reads alice's personal "+p)
		}
		for _, id := range []string{shared.ID, unstamped.ID} {
			p := fmt.Sprintf(path, id)
			want(t, e.do(t, http.MethodGet, p, "", asBob...), http.StatusOK, "bob reads workspace-visible "+p)
		}
	}

	ids := func(hs ...header) []string {
		var out []string
		for _, r := range decode[[]eval.Run](t, e.do(t, http.MethodGet, "/runs", "", hs...)) {
			out = append(out, r.ID)
		}
		return out
	}
	metas := func(hs ...header) []string {
		var out []string
		for _, m := range decode[[]runs.TrajectoryMeta](t, e.do(t, http.MethodGet, "/trajectories", "", hs...)) {
			out = append(out, m.RunID)
		}
		return out
	}
	for _, c := range []struct {
		who  string
		hs   []header
		want []string
	}{
		{"alice", asAlice, []string{mine.ID, shared.ID, unstamped.ID, sandbox.ID}},
		{"bob", asBob, []string{shared.ID, unstamped.ID}},
	} {
		sorted := cmpopts.SortSlices(func(x, y string) bool { return x < y })
		if diff := cmp.Diff(c.want, ids(c.hs...), sorted); diff != "" {
			t.Errorf("GET /runs as %s (-want +got):\n%s", c.who, diff)
		}
		if diff := cmp.Diff(c.want, metas(c.hs...), sorted); diff != "" {
			t.Errorf("GET /trajectories as %s (-want +got):\n%s", c.who, diff)
		}
	}
}

func TestRunListChildrenAndPaging(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "list")
	me := e.subjectOf(t, bearer(a.key))
	base := e.clock.Now()
	var top []string // newest first
	for i := range 7 {
		r := e.seedRun(t, a.ws, me, createdAt(base.Add(time.Duration(i)*time.Second)))
		top = append([]string{r.ID}, top...)
	}
	c1 := e.seedRun(t, a.ws, me, childOf("sc_1", 0, true), createdAt(base.Add(time.Minute)))
	c2 := e.seedRun(t, a.ws, me, childOf("sc_1", 0, false), createdAt(base.Add(2*time.Minute)))
	e.seedRun(t, a.ws, me, childOf("sc_2", 0, true))

	var got []string
	cursor := ""
	pages := 0
	for {
		path := "/runs?limit=3"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		res := e.do(t, http.MethodGet, path, "", bearer(a.key))
		want(t, res, http.StatusOK, path)
		for _, r := range decode[[]eval.Run](t, res) {
			got = append(got, r.ID)
			if r.Canonical != nil {
				t.Errorf("run %s carries canonical outside its batch's listing", r.ID)
			}
		}
		pages++
		cursor = res.Header.Get("X-Svc-Next-Cursor")
		if cursor == "" {
			break
		}
	}
	if diff := cmp.Diff(top, got); diff != "" || pages != 3 {
		t.Errorf("paged GET /runs in %d pages (-want +got):\n%s", pages, diff)
	}

	batch := decode[[]eval.Run](t, e.do(t, http.MethodGet, "/runs?scorecardId=sc_1", "", bearer(a.key)))
	if len(batch) != 2 || batch[0].ID != c2.ID || batch[1].ID != c1.ID {
		t.Fatalf("GET /runs?scorecardId=sc_1 = %v", batch)
	}
	if batch[0].Canonical == nil || *batch[0].Canonical || batch[1].Canonical == nil || !*batch[1].Canonical {
		t.Errorf("canonical flags: %v, %v", batch[0].Canonical, batch[1].Canonical)
	}
	all := decode[[]eval.Run](t, e.do(t, http.MethodGet, "/runs?scope=all&limit=100", "", bearer(a.key)))
	if len(all) != 10 {
		t.Errorf("GET /runs?scope=all has %d runs, want 10", len(all))
	}
}

func TestSubmitRunRefusals(t *testing.T) {
	e := newEnv(t)
	a := e.tenant(t, "submit")
	e.register(t, a.key, "/harnesses", `{"id":"echo","version":"1.0.0","kind":"process","command":["echo","hi"]}`, http.StatusCreated)
	e.register(t, a.key, "/runtimes", `{"id":"far","version":"1","kind":"nomad","addr":"http://nomad.example.com:4646","image":"x"}`, http.StatusCreated)
	e.register(t, a.key, "/runtimes", `{"id":"kube","version":"1","kind":"k8s","image":"x"}`, http.StatusCreated)
	for _, tc := range []struct {
		name, body string
		status     int
		mention    string
	}{
		{"no harness", `{"case":{"id":"c","task":"t"}}`, 400, "harness.id"},
		{"no version", `{"harness":{"id":"echo"},"case":{"id":"c","task":"t"}}`, 400, "harness.version"},
		{"no case id", `{"harness":{"id":"echo","version":"1.0.0"},"case":{}}`, 400, "id"},
		{"unknown field", `{"harness":{"id":"echo","version":"1.0.0"},"case":{"id":"c","task":"t"},"extra":1}`, 400, "extra"},
		{"bad grader", `{"harness":{"id":"echo","version":"1.0.0"},"case":{"id":"c","task":"t","graders":[{"id":"g","kind":"regex","pattern":"("}]}}`, 400, "pattern"},
		{"unknown harness", `{"harness":{"id":"nope","version":"latest"},"case":{"id":"c","task":"t"}}`, 404, "nope"},
		{"unknown runtime", `{"harness":{"id":"echo","version":"1.0.0"},"case":{"id":"c","task":"t"},"runtime":"ghost"}`, 404, "ghost"},
		{"cpu without cpuMhzPerCore", `{"harness":{"id":"echo","version":"1.0.0"},"case":{"id":"c","task":"t","resources":{"cpu":500}},"runtime":"far"}`, 400, "declares resources.cpu"},
		{"loopback webhook", `{"harness":{"id":"echo","version":"1.0.0"},"case":{"id":"c","task":"t"},"webhookUrl":"http://127.0.0.1:8080/hook"}`, 400, "loopback"},
		{"metadata webhook", `{"harness":{"id":"echo","version":"1.0.0"},"case":{"id":"c","task":"t"},"webhookUrl":"http://169.254.169.254/latest"}`, 400, "link-local"},
		{"private webhook", `{"harness":{"id":"echo","version":"1.0.0"},"case":{"id":"c","task":"t"},"webhookUrl":"http://10.1.2.3/hook"}`, 400, "private"},
		{"ftp webhook", `{"harness":{"id":"echo","version":"1.0.0"},"case":{"id":"c","task":"t"},"webhookUrl":"ftp://example.com/x"}`, 400, "http"},
		// Valid in every way: only the missing orchestrator refuses it.
		{"no orchestrator", `{"harness":{"id":"echo","version":"latest"},"case":{"id":"c","task":"t"}}`, 503, "orchestrator"},
		// A k8s runtime is accepted like a nomad one.
		{"k8s runtime, no orchestrator", `{"harness":{"id":"echo","version":"1.0.0"},"case":{"id":"c","task":"t"},"runtime":"kube"}`, 503, "orchestrator"},
	} {
		res := e.do(t, http.MethodPost, "/runs", tc.body, bearer(a.key))
		if res.Status != tc.status || !strings.Contains(strings.ToLower(string(res.Body)), strings.ToLower(tc.mention)) {
			t.Errorf("%s: status %d, want %d mentioning %q; body %s", tc.name, res.Status, tc.status, tc.mention, res.Body)
		}
	}
	if n, err := e.store.CountRuns(t.Context(), a.ws, time.Time{}); err != nil || n != 0 {
		t.Errorf("refused submits left %d runs (err %v), want none", n, err)
	}
}

func TestNotifications(t *testing.T) {
	e := newEnv(t, withOIDC())
	a := e.tenant(t, "feed")
	alice := e.join(t, a, "alice", auth.RoleViewer)
	asAlice := []header{bearer(alice), selectWorkspace(a.ws)}
	base := e.clock.Now()
	for i, n := range []store.Notification{
		{ID: "n1", Recipient: "alice", Kind: eval.NotifyRunCompleted, Title: "one"},
		{ID: "n2", Recipient: "alice", Kind: eval.NotifyRunFailed, Title: "two"},
		{ID: "n3", Recipient: "alice", Kind: eval.NotifyRunCompleted, Title: "three"},
		{ID: "b1", Recipient: "bob", Kind: eval.NotifyRunCompleted, Title: "bob's"},
	} {
		n.Workspace, n.CreatedAt = a.ws, base.Add(time.Duration(i)*time.Second)
		if _, _, err := e.store.AddNotification(t.Context(), n); err != nil {
			t.Fatal(err)
		}
	}
	list := func(q string) []string {
		var ids []string
		res := e.do(t, http.MethodGet, "/notifications"+q, "", asAlice...)
		want(t, res, http.StatusOK, "GET /notifications"+q)
		for _, n := range decode[[]store.Notification](t, res) {
			ids = append(ids, n.ID)
		}
		return ids
	}
	if diff := cmp.Diff([]string{"n3", "n2", "n1"}, list("")); diff != "" {
		t.Errorf("feed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"n3"}, list("?limit=1")); diff != "" {
		t.Errorf("feed limit 1 (-want +got):\n%s", diff)
	}
	read := func(body string) int {
		res := e.do(t, http.MethodPost, "/notifications/read", body, asAlice...)
		want(t, res, http.StatusOK, "POST /notifications/read "+body)
		return decode[map[string]int](t, res)["marked"]
	}
	if n := read(`{"ids":["n1","b1","nope"]}`); n != 1 {
		t.Errorf("marking n1 (and bob's b1) read marked %d, want 1", n)
	}
	if n := read(`{"ids":["n1"]}`); n != 0 {
		t.Errorf("marking n1 again marked %d, want 0 (idempotent)", n)
	}
	if diff := cmp.Diff([]string{"n3", "n2"}, list("?unread=1")); diff != "" {
		t.Errorf("unread (-want +got):\n%s", diff)
	}
	if n := read(`{"all":true}`); n != 2 {
		t.Errorf("all:true marked %d, want 2", n)
	}
	if got := list("?unread=1"); len(got) != 0 {
		t.Errorf("unread after all:true = %v", got)
	}
	bobs, err := e.store.ListNotifications(t.Context(), a.ws, "bob", true, 0)
	if err != nil || len(bobs) != 1 {
		t.Errorf("bob's unread = %v, %v; alice's reads must not touch them", bobs, err)
	}
	for _, body := range []string{`{}`, `{"ids":[],"all":false}`, `{"ids":["x"],"all":true}`} {
		want(t, e.do(t, http.MethodPost, "/notifications/read", body, asAlice...), http.StatusBadRequest, "read "+body)
	}
	want(t, e.do(t, http.MethodGet, "/notifications?unread=maybe", "", asAlice...), http.StatusBadRequest, "unread=maybe")
}

func TestWebhookSecret(t *testing.T) {
	e := newEnv(t, withOIDC())
	a := e.tenant(t, "hooks")
	first := decode[runs.WebhookSecret](t, e.do(t, http.MethodGet, "/workspace/webhook-secret", "", bearer(a.key)))
	if !strings.HasPrefix(first.Secret, "whsec_") {
		t.Fatalf("secret %q lacks the whsec_ prefix", first.Secret)
	}
	again := decode[runs.WebhookSecret](t, e.do(t, http.MethodGet, "/workspace/webhook-secret", "", bearer(a.key)))
	if again.Secret != first.Secret {
		t.Errorf("a second read minted a new secret")
	}
	rotated := decode[runs.WebhookSecret](t, e.do(t, http.MethodPost, "/workspace/webhook-secret/rotate", "", bearer(a.key)))
	if rotated.Secret == first.Secret || !strings.HasPrefix(rotated.Secret, "whsec_") {
		t.Errorf("rotate kept the secret or lost its prefix: %q", rotated.Secret)
	}
	member := e.join(t, a, "carol", auth.RoleMember)
	want(t, e.do(t, http.MethodGet, "/workspace/webhook-secret", "", bearer(member), selectWorkspace(a.ws)), http.StatusForbidden, "a member reads the secret")

	raw, err := e.store.GetWebhookSecret(t.Context(), a.ws)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw.Ciphertext), strings.TrimPrefix(rotated.Secret, "whsec_")) {
		t.Errorf("the store holds the secret in clear")
	}
}
