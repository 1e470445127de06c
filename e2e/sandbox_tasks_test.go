package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"svc/internal/testing/testimage"
	"svc/internal/testing/testwait"
)

// storeImage imports the busybox image into the workspace's image store
// as ref (POST /images?as=, a docker save tar) and answers ref.
func storeImage(t *testing.T, url, ref string) string {
	t.Helper()
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := tarball.Write(tag, testimage.Busybox(t), &buf); err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), "POST", url+"/images?as="+ref, &buf)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-tar")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 201 && resp.StatusCode != 200 {
		t.Fatalf("POST /images?as=%s = %d %s", ref, resp.StatusCode, raw)
	}
	return ref
}

// taskHarness is a process harness that runs inside a busybox session: it
// lands one trace event, waits for /root/gate (an exec opens it), lands
// two more, and answers the prompt it read from SVC_CASE_FILE.
const taskHarness = `set -e
test -s "$SVC_CASE_FILE"
echo '{"kind":"message","role":"user","content":"started"}' >> "$SVC_TRACE_FILE"
while [ ! -e /root/gate ]; do sleep 0.1; done
echo '{"kind":"tool_call","name":"think","input":{"step":1}}' >> "$SVC_TRACE_FILE"
echo '{"kind":"message","role":"assistant","content":"done"}' >> "$SVC_TRACE_FILE"
grep -o '"task":"[^"]*"' "$SVC_CASE_FILE" | cut -d'"' -f4`

// taskRun is the child run a task answers and GET /runs/:id reads.
type taskRun struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Kind   string `json:"kind"`
	Class  string `json:"class"`
	Group  string `json:"group"`
	Error  *struct {
		Code string `json:"code"`
	} `json:"error"`
	Result *struct {
		Pass     bool `json:"pass"`
		Evidence *struct {
			FinalAnswer string `json:"finalAnswer"`
		} `json:"evidence"`
	} `json:"result"`
}

// taskTrace is what the trace route answers.
type taskTrace struct {
	Events []json.RawMessage `json:"events"`
	Next   int               `json:"next"`
	Done   bool              `json:"done"`
	Status string            `json:"status"`
}

// TestSandboxTasks (spec §2.2, §3, §4.8, §7, §8; issue 32 item 3): a
// session booted from a registered harness takes a prompt as a child run
// (202; kind eval, class interactive, group = the session); a second task
// while it runs is 409; its trace polled with since answers only newer
// events, and done once settled; the child run is workspace-visible while
// the session stays personal; closing with a task in flight settles it
// failed CANCELLED with its partial trace sealed; past SVC_TENANT_RUNS a
// task is 402.
func TestSandboxTasks(t *testing.T) {
	imageDir, _ := busyboxLayout(t)
	// The budget: the session (1), two tasks (3), a second session (4);
	// the third task is past it.
	dev := sandboxDev(t, t.TempDir(), imageDir, "SVC_TENANT_RUNS=4")
	// The harness's image is a reference into the workspace's image store.
	image := storeImage(t, dev.URL, "busybox:1")
	harness := map[string]any{"id": "echo-agent", "version": "1.0.0", "kind": "process",
		"command": []string{"/bin/sh", "-c", taskHarness}, "image": image}
	var reg errorBody
	if code := call(t, "POST", dev.URL+"/harnesses", harness, &reg); code != 201 {
		t.Fatalf("POST /harnesses = %d %+v", code, reg.Error)
	}
	var s struct {
		sandboxView
		Harness struct{ ID, Version string } `json:"harness"`
	}
	if code := call(t, "POST", dev.URL+"/sandboxes", map[string]any{"harness": map[string]any{"id": "echo-agent"}, "ttl": 600}, &s); code != 201 {
		t.Fatalf("POST /sandboxes from a harness = %d", code)
	}
	if s.Harness.ID != "echo-agent" || s.Harness.Version != "1.0.0" || s.Status != "running" {
		t.Fatalf("session = %+v, want running with harness echo-agent@1.0.0", s)
	}
	base := dev.URL + "/sandboxes/" + s.ID
	var live struct {
		Live struct {
			Busy    bool `json:"busy"`
			Harness struct{ ID, Version string }
			Tasks   []struct{ ID, Status string } `json:"tasks"`
		} `json:"live"`
	}
	if call(t, "GET", base, nil, &live); live.Live.Harness.ID != "echo-agent" || live.Live.Busy {
		t.Errorf("live meta = %+v, want the booted harness, not busy", live.Live)
	}

	// A task: 202, the child run; a second while it runs: 409.
	var task taskRun
	if code := call(t, "POST", base+"/tasks", map[string]any{"prompt": "hello-sandbox"}, &task); code != 202 {
		t.Fatalf("POST tasks = %d", code)
	}
	if task.Kind != "eval" || task.Class != "interactive" || task.Group != s.ID || task.Status != "queued" {
		t.Errorf("task = %+v, want a queued eval run of class interactive in group %s", task, s.ID)
	}
	var eb errorBody
	if code := call(t, "POST", base+"/tasks", map[string]any{"prompt": "again"}, &eb); code != 409 || eb.Error.Code != "CONFLICT" {
		t.Errorf("a second task while one runs = %d %+v, want 409 CONFLICT", code, eb.Error)
	}
	if call(t, "GET", base, nil, &live); !live.Live.Busy || len(live.Live.Tasks) != 1 || live.Live.Tasks[0].ID != task.ID {
		t.Errorf("live meta while the task runs = %+v, want busy with its summary", live.Live)
	}

	// The trace: the first event lands while the harness waits.
	trace := base + "/tasks/" + task.ID + "/trace"
	var tr taskTrace
	testwait.Until(t, time.Minute, "the task's first trace event", func() bool {
		call(t, "GET", trace, nil, &tr)
		return len(tr.Events) >= 1
	})
	if len(tr.Events) != 1 || tr.Done || tr.Next != 1 || !strings.Contains(string(tr.Events[0]), "started") {
		t.Fatalf("trace while the task waits = %+v, want its one event, not done", tr)
	}
	if call(t, "GET", trace+"?since=1", nil, &tr); len(tr.Events) != 0 || tr.Done || tr.Next != 1 {
		t.Errorf("trace since=1 before anything new = %+v, want no events, not done", tr)
	}
	var r execResult
	if code := call(t, "POST", base+"/exec", map[string]any{"command": "touch /root/gate"}, &r); code != 200 || r.ExitCode != 0 {
		t.Fatalf("exec touch gate = %d %+v", code, r)
	}
	var newer []json.RawMessage
	since := 1
	testwait.Until(t, time.Minute, "the task to settle", func() bool {
		var p taskTrace
		call(t, "GET", trace+"?since="+strconv.Itoa(since), nil, &p)
		newer = append(newer, p.Events...)
		since = p.Next
		return p.Done
	})
	if len(newer) != 2 || !strings.Contains(string(newer[0]), "think") || !strings.Contains(string(newer[1]), `"done"`) {
		t.Errorf("events polled since 1 = %s, want the two newer events only", newer)
	}
	if call(t, "GET", trace, nil, &tr); len(tr.Events) != 3 || !tr.Done {
		t.Errorf("full replay after done = %d events done %v, want 3, done", len(tr.Events), tr.Done)
	}
	var got taskRun
	if code := call(t, "GET", dev.URL+"/runs/"+task.ID, nil, &got); code != 200 || got.Status != "succeeded" || got.Result == nil || !got.Result.Pass ||
		got.Result.Evidence == nil || got.Result.Evidence.FinalAnswer != "hello-sandbox" {
		t.Errorf("the settled task = %d %+v, want succeeded, passed, its answer the prompt", code, got)
	}
	if call(t, "GET", base, nil, &live); live.Live.Busy || len(live.Live.Tasks) != 1 || live.Live.Tasks[0].Status != "succeeded" {
		t.Errorf("live meta after the task = %+v, want not busy, its summary succeeded", live.Live)
	}

	// Another member reads the task (workspace-visible), not the session.
	other := "Bearer " + otherMember(t, dev.URL)
	if code := call(t, "GET", dev.URL+"/runs/"+task.ID, nil, &got, "Authorization", other); code != 200 || got.Group != s.ID {
		t.Errorf("GET /runs/%s as another member = %d %+v, want 200 (a playground case is workspace-visible)", task.ID, code, got)
	}
	for _, path := range []string{base, trace, dev.URL + "/runs/" + s.ID} {
		if code := call(t, "GET", path, nil, &eb, "Authorization", other); code != 404 {
			t.Errorf("GET %s as another member = %d, want 404 (sessions are personal)", path, code)
		}
	}

	// Close with a task in flight: the task settles failed CANCELLED, its
	// partial trace sealed; the session settles as usual.
	if code := call(t, "POST", base+"/exec", map[string]any{"command": "rm /root/gate"}, &r); code != 200 {
		t.Fatalf("exec rm gate = %d", code)
	}
	var second taskRun
	if code := call(t, "POST", base+"/tasks", map[string]any{"prompt": "never-finishes"}, &second); code != 202 {
		t.Fatalf("the next task = %d, want 202 once the session is idle", code)
	}
	testwait.Until(t, time.Minute, "the second task's first event", func() bool {
		call(t, "GET", base+"/tasks/"+second.ID+"/trace", nil, &tr)
		return len(tr.Events) >= 1
	})
	var closed sandboxView
	if code := call(t, "POST", base+"/close", nil, &closed); code != 200 || closed.Status != "succeeded" || closed.Session.ClosedReason != "closed" {
		t.Errorf("close with a task in flight = %d %s %q, want succeeded closed", code, closed.Status, closed.Session.ClosedReason)
	}
	if code := call(t, "GET", dev.URL+"/runs/"+second.ID, nil, &got); code != 200 || got.Status != "failed" || got.Error == nil || got.Error.Code != "CANCELLED" {
		t.Errorf("the task in flight at close = %d %+v, want failed CANCELLED", code, got)
	}
	var sealed struct {
		Events []struct {
			Kind    string `json:"kind"`
			Content string `json:"content"`
			Code    string `json:"code"`
		} `json:"events"`
	}
	if code := call(t, "GET", dev.URL+"/runs/"+second.ID+"/trajectory", nil, &sealed); code != 200 || len(sealed.Events) < 2 ||
		sealed.Events[0].Content != "started" || sealed.Events[len(sealed.Events)-1].Code != "CANCELLED" {
		t.Errorf("the cancelled task's trajectory = %d %+v, want its partial trace sealed, ending with the CANCELLED error", code, sealed)
	}
	if call(t, "GET", base+"/tasks/"+second.ID+"/trace", nil, &tr); !tr.Done || tr.Status != "failed" {
		t.Errorf("the cancelled task's trace = %+v, want done, failed", tr)
	}

	// The budget: a new session (4 of 4), its task past it is 402.
	var s2 sandboxView
	if code := call(t, "POST", dev.URL+"/sandboxes", map[string]any{"harness": map[string]any{"id": "echo-agent", "version": "1.0.0"}, "ttl": 600}, &s2); code != 201 {
		t.Fatalf("a second session = %d", code)
	}
	if code := call(t, "POST", dev.URL+"/sandboxes/"+s2.ID+"/tasks", map[string]any{"prompt": "over budget"}, &eb); code != 402 || eb.Error.Code != "BUDGET_EXCEEDED" {
		t.Errorf("a task past SVC_TENANT_RUNS = %d %+v, want 402 BUDGET_EXCEEDED", code, eb.Error)
	}
	if call(t, "GET", dev.URL+"/sandboxes/"+s2.ID, nil, &live); live.Live.Busy || len(live.Live.Tasks) != 0 {
		t.Errorf("the session after a refused task = %+v, want idle with no task", live.Live)
	}
	call(t, "POST", dev.URL+"/sandboxes/"+s2.ID+"/close", nil, &closed)
}
