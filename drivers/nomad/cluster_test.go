package nomad_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// clusterToken is the ACL token the fake cluster wants in X-Nomad-Token.
const clusterToken = "tok-cluster-7f3c9a"

// script is what the fake cluster makes of every job registered on it.
type script struct {
	placementFails bool     // the scheduler finds no node (FailedTGAllocs)
	driverFailure  bool     // the task never starts (the image cannot be pulled)
	stdout         []string // written, chunk by chunk, once running
	stderr         []string
	trace          string // left in alloc/data/svc-trace.jsonl
	exit           int
	hold           bool // keep running until stopped or released
	logsRefused    bool // the token lacks read-logs
	slowRegister   bool // register, then answer only once the client gave up
}

// request is one request the fake cluster answered.
type request struct {
	method string
	path   string
	query  url.Values
	header http.Header
	body   []byte
}

// cluster answers Nomad's HTTP API (jobs, allocations, evaluations,
// variables, the client filesystem) from the recorded bodies in testdata,
// moving each registered job through a small state machine: registered ->
// evaluated -> allocation pending -> running -> complete or failed (or
// stopped, on deregistration). It honours blocking queries (index, wait)
// and records every request.
type cluster struct {
	t      *testing.T
	script script
	step   time.Duration

	mu      sync.Mutex
	index   uint64
	changed chan struct{}
	jobs    map[string]*fakeJob
	vars    map[string]map[string]string
	reqs    []request
}

// fakeJob is one registered job.
type fakeJob struct {
	id      string
	spec    map[string]any // the Job object as the driver sent it
	stop    bool
	evals   []map[string]any
	alloc   *fakeAlloc
	stdout  []byte
	stderr  []byte
	trace   string
	release chan struct{} // closed by releaseJob
	stopped chan struct{} // closed when the job is deregistered
}

// fakeAlloc is the state of a job's allocation.
type fakeAlloc struct {
	id                     string
	clientStatus, desired  string
	state                  string
	failed                 bool
	startedAt, finishedAt  time.Time
	events                 []map[string]any
	createIndex, modifyIdx uint64
}

func newCluster(t *testing.T, sc script) (*cluster, *httptest.Server) {
	c := &cluster{
		t: t, script: sc, step: 5 * time.Millisecond,
		index: 10, changed: make(chan struct{}),
		jobs: map[string]*fakeJob{}, vars: map[string]map[string]string{},
	}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	return c, srv
}

// testdata returns a fresh copy of a recorded body.
func testdata(t *testing.T, name string) map[string]any {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return m
}

// event returns the recorded task event of type typ, stamped now.
func (c *cluster) event(typ string, set map[string]any) map[string]any {
	ev := testdata(c.t, "task_events.json")[typ].(map[string]any)
	ev["Time"] = time.Now().UnixNano()
	for k, v := range set {
		ev[k] = v
	}
	return ev
}

// update changes the state under the lock and wakes blocking queries.
func (c *cluster) update(f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f()
	c.index++
	close(c.changed)
	c.changed = make(chan struct{})
}

// requests returns the requests answered so far.
func (c *cluster) requests() []request {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]request(nil), c.reqs...)
}

// count returns how many requests had method and a path starting with prefix.
func (c *cluster) count(method, prefix string) int {
	n := 0
	for _, r := range c.requests() {
		if r.method == method && strings.HasPrefix(r.path, prefix) {
			n++
		}
	}
	return n
}

// taskState returns the state of job id's task ("" before it has one).
func (c *cluster) taskState(id string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if j := c.jobs[id]; j != nil && j.alloc != nil {
		return j.alloc.state
	}
	return ""
}

// releaseJob lets a held job end with its script's exit code.
func (c *cluster) releaseJob(id string) {
	c.mu.Lock()
	j := c.jobs[id]
	c.mu.Unlock()
	close(j.release)
}

// run moves job j through its life as the script says.
func (c *cluster) run(j *fakeJob) {
	sc := c.script
	pause := func() { time.Sleep(c.step) }
	pause()
	c.update(func() {
		if sc.placementFails {
			ev := testdata(c.t, "evaluation_placement_failed.json")
			ev["JobID"] = j.id
			j.evals = append(j.evals, ev)
			return
		}
		ev := testdata(c.t, "evaluation_complete.json")
		ev["JobID"] = j.id
		j.evals = append(j.evals, ev)
	})
	if sc.placementFails {
		return
	}
	pause()
	c.update(func() {
		if j.stop {
			return
		}
		j.alloc = &fakeAlloc{
			id: "alloc-" + j.id, clientStatus: "pending", desired: "run", state: "pending",
			events: []map[string]any{c.event("Received", nil)}, createIndex: c.index + 1,
		}
	})
	pause()
	if sc.driverFailure {
		c.update(func() {
			a := j.alloc
			a.state, a.failed, a.clientStatus, a.finishedAt = "dead", true, "failed", time.Now()
			a.events = append(a.events, c.event("Task Setup", nil), c.event("Driver Failure", nil))
		})
		return
	}
	c.update(func() {
		if j.stop {
			return
		}
		a := j.alloc
		a.state, a.clientStatus, a.startedAt = "running", "running", time.Now()
		a.events = append(a.events, c.event("Task Setup", nil), c.event("Started", nil))
	})
	for i := range max(len(sc.stdout), len(sc.stderr)) {
		pause()
		c.update(func() {
			if i < len(sc.stdout) {
				j.stdout = append(j.stdout, sc.stdout[i]...)
			}
			if i < len(sc.stderr) {
				j.stderr = append(j.stderr, sc.stderr[i]...)
			}
		})
	}
	c.update(func() { j.trace = sc.trace })
	if sc.hold {
		select {
		case <-j.release:
		case <-j.stopped:
			return
		}
	}
	pause()
	c.update(func() {
		a := j.alloc
		if j.stop || a.state == "dead" {
			return
		}
		status := "complete"
		if sc.exit != 0 {
			status, a.failed = "failed", true
		}
		a.state, a.clientStatus, a.finishedAt = "dead", status, time.Now()
		a.events = append(a.events, c.event("Terminated", map[string]any{
			"ExitCode": sc.exit, "DisplayMessage": "Exit Code: " + strconv.Itoa(sc.exit),
			"Details": map[string]any{"exit_code": strconv.Itoa(sc.exit), "oom_killed": "false", "signal": "0"},
		}))
	})
}

// stopJob is what deregistering does to a job: its task is killed.
func (c *cluster) stopJob(j *fakeJob) {
	c.update(func() {
		if !j.stop {
			close(j.stopped)
		}
		j.stop = true
		a := j.alloc
		if a == nil || a.state == "dead" {
			return
		}
		a.desired = "stop"
		if a.state == "running" {
			a.events = append(a.events, c.event("Killing", nil), c.event("Terminated", map[string]any{
				"ExitCode": 143, "Signal": 15, "DisplayMessage": "Exit Code: 143, Signal: 15",
			}), c.event("Killed", nil))
		}
		a.state, a.clientStatus, a.finishedAt = "dead", "complete", time.Now()
	})
}

// allocJSON renders a's list stub from the recorded one.
func (c *cluster) allocJSON(j *fakeJob) map[string]any {
	a := j.alloc
	m := testdata(c.t, "allocation_stub.json")
	m["ID"], m["JobID"], m["Name"] = a.id, j.id, j.id+".case[0]"
	m["ClientStatus"], m["DesiredStatus"] = a.clientStatus, a.desired
	m["CreateIndex"], m["ModifyIndex"] = a.createIndex, c.index
	ts := m["TaskStates"].(map[string]any)["harness"].(map[string]any)
	ts["State"], ts["Failed"], ts["Events"] = a.state, a.failed, a.events
	if !a.startedAt.IsZero() {
		ts["StartedAt"] = a.startedAt.Format(time.RFC3339Nano)
	}
	if !a.finishedAt.IsZero() {
		ts["FinishedAt"] = a.finishedAt.Format(time.RFC3339Nano)
	}
	return m
}

func (c *cluster) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	c.reqs = append(c.reqs, request{method: r.Method, path: r.URL.Path, query: r.URL.Query(), header: r.Header.Clone(), body: body})
	c.mu.Unlock()
	if r.Header.Get("X-Nomad-Token") != clusterToken {
		http.Error(w, "ACL token not found", http.StatusForbidden)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	p := r.URL.Path
	switch {
	case r.Method == http.MethodPut && p == "/v1/jobs":
		c.register(r.Context(), w, body)
	case strings.HasPrefix(p, "/v1/job/"):
		rest := strings.TrimPrefix(p, "/v1/job/")
		id, sub, _ := strings.Cut(rest, "/")
		c.mu.Lock()
		j := c.jobs[id]
		c.mu.Unlock()
		if j == nil {
			http.Error(w, "job not found", http.StatusNotFound)
			return
		}
		switch {
		case sub == "" && r.Method == http.MethodGet:
			c.mu.Lock()
			job := map[string]any{}
			for k, v := range j.spec {
				job[k] = v
			}
			job["Stop"] = j.stop
			job["Status"] = "running"
			c.mu.Unlock()
			c.reply(w, job)
		case sub == "" && r.Method == http.MethodDelete:
			c.stopJob(j)
			c.reply(w, testdata(c.t, "job_deregister_response.json"))
		case sub == "allocations":
			c.blocking(w, r, func() any {
				out := []any{}
				if j.alloc != nil {
					out = append(out, c.allocJSON(j))
				}
				return out
			})
		case sub == "evaluations":
			c.mu.Lock()
			evals := append([]map[string]any{}, j.evals...)
			c.mu.Unlock()
			c.reply(w, evals)
		default:
			http.NotFound(w, r)
		}
	case strings.HasPrefix(p, "/v1/var/"):
		path := strings.TrimPrefix(p, "/v1/var/")
		switch r.Method {
		case http.MethodPut:
			var v struct{ Items map[string]string }
			if err := json.Unmarshal(body, &v); err != nil || len(v.Items) == 0 {
				http.Error(w, "variable missing required Items object", http.StatusBadRequest)
				return
			}
			c.update(func() { c.vars[path] = v.Items })
			out := testdata(c.t, "variable.json")
			out["Path"], out["Items"] = path, v.Items // Nomad echoes the items
			c.reply(w, out)
		case http.MethodDelete:
			c.update(func() { delete(c.vars, path) })
			w.WriteHeader(http.StatusNoContent)
		default:
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		}
	case strings.HasPrefix(p, "/v1/client/fs/logs/"):
		c.logs(w, r, strings.TrimPrefix(p, "/v1/client/fs/logs/alloc-"))
	case strings.HasPrefix(p, "/v1/client/fs/cat/"):
		c.mu.Lock()
		j := c.jobs[strings.TrimPrefix(p, "/v1/client/fs/cat/alloc-")]
		var trace string
		if j != nil {
			trace = j.trace
		}
		c.mu.Unlock()
		if r.URL.Query().Get("path") != "alloc/data/svc-trace.jsonl" || trace == "" {
			http.Error(w, "file does not exist", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, trace)
	default:
		http.NotFound(w, r)
	}
}

func (c *cluster) reply(w http.ResponseWriter, v any) {
	c.mu.Lock()
	w.Header().Set("X-Nomad-Index", strconv.FormatUint(c.index, 10))
	c.mu.Unlock()
	w.Header().Set("X-Nomad-KnownLeader", "true")
	w.Header().Set("X-Nomad-LastContact", "0")
	json.NewEncoder(w).Encode(v)
}

// register answers PUT /v1/jobs: a job is new, or refused as Nomad
// refuses an EnforceIndex of 0 for a job that exists.
func (c *cluster) register(ctx context.Context, w http.ResponseWriter, body []byte) {
	var req struct {
		Job            map[string]any
		EnforceIndex   bool
		JobModifyIndex uint64
	}
	if err := json.Unmarshal(body, &req); err != nil || req.Job == nil {
		http.Error(w, "failed to decode job", http.StatusBadRequest)
		return
	}
	id, _ := req.Job["ID"].(string)
	c.mu.Lock()
	_, exists := c.jobs[id]
	c.mu.Unlock()
	if exists && req.EnforceIndex && req.JobModifyIndex == 0 {
		http.Error(w, "Enforcing job modify index 0: job already exists", http.StatusInternalServerError)
		return
	}
	j := &fakeJob{id: id, spec: req.Job, release: make(chan struct{}), stopped: make(chan struct{})}
	c.update(func() { c.jobs[id] = j })
	go c.run(j)
	if c.script.slowRegister {
		<-ctx.Done()
		return
	}
	out := testdata(c.t, "job_register_response.json")
	c.reply(w, out)
}

// blocking answers a blocking query: at once when the state is newer
// than index, else when it changes or wait has passed.
func (c *cluster) blocking(w http.ResponseWriter, r *http.Request, answer func() any) {
	idx, _ := strconv.ParseUint(r.URL.Query().Get("index"), 10, 64)
	wait := 5 * time.Minute
	if ms, err := strconv.Atoi(strings.TrimSuffix(r.URL.Query().Get("wait"), "ms")); err == nil {
		wait = time.Duration(ms) * time.Millisecond
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		c.mu.Lock()
		if c.index > idx {
			v := answer()
			c.mu.Unlock()
			c.reply(w, v)
			return
		}
		ch := c.changed
		c.mu.Unlock()
		select {
		case <-ch:
		case <-timer.C:
			c.mu.Lock()
			v := answer()
			c.mu.Unlock()
			c.reply(w, v)
			return
		case <-r.Context().Done():
			return
		}
	}
}

// logs streams a task's log as Nomad does with follow=true: frames of
// base64 data as the task writes, heartbeats while it is quiet, and the
// end of the stream once the task is dead and everything was sent.
func (c *cluster) logs(w http.ResponseWriter, r *http.Request, jobID string) {
	if c.script.logsRefused {
		http.Error(w, "Permission denied", http.StatusForbidden)
		return
	}
	q := r.URL.Query()
	if q.Get("task") != "harness" || q.Get("follow") != "true" || q.Get("origin") != "start" {
		http.Error(w, "unexpected log query", http.StatusBadRequest)
		return
	}
	typ := q.Get("type")
	flusher := w.(http.Flusher)
	sent := 0
	for {
		c.mu.Lock()
		j := c.jobs[jobID]
		if j == nil {
			c.mu.Unlock()
			http.Error(w, "unknown allocation", http.StatusNotFound)
			return
		}
		data := j.stdout
		if typ == "stderr" {
			data = j.stderr
		}
		data = bytes.Clone(data)
		dead := j.alloc != nil && j.alloc.state == "dead"
		ch := c.changed
		c.mu.Unlock()
		if sent < len(data) {
			frame, _ := json.Marshal(map[string]any{
				"Offset": len(data), "Data": base64.StdEncoding.EncodeToString(data[sent:]),
				"File": "alloc/logs/harness." + typ + ".0",
			})
			w.Write(frame)
			flusher.Flush()
			sent = len(data)
		}
		if dead {
			return
		}
		select {
		case <-ch:
		case <-time.After(50 * time.Millisecond):
			io.WriteString(w, "{}")
			flusher.Flush()
		case <-r.Context().Done():
			return
		}
	}
}
