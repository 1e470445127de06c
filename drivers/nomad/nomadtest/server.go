// Package nomadtest serves a fake Nomad cluster on loopback for tests: the
// part of Nomad's HTTP API that drivers/nomad uses (jobs, allocations,
// evaluations, Variables, the client filesystem's logs and cat), answered
// from bodies recorded from a real agent (testdata/), with each registered
// job moved through a small state machine as a Script says. Only test code
// imports it.
package nomadtest

import (
	"bytes"
	"context"
	"embed"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Token is the ACL token the fake cluster wants in X-Nomad-Token; any
// other is refused with 403, as Nomad refuses an unknown token.
const Token = "tok-cluster-7f3c9a"

//go:embed testdata/*.json
var recorded embed.FS

// Script is what the fake cluster makes of a registered job.
type Script struct {
	PlacementFails bool     // the scheduler finds no node (FailedTGAllocs)
	DriverFailure  bool     // the task never starts (the image cannot be pulled)
	Stdout         []string // written, chunk by chunk, once running
	Stderr         []string
	Trace          string // left in alloc/data/svc-trace.jsonl
	Exit           int
	Hold           bool // keep running until stopped or released (Release)
	LogsRefused    bool // the token lacks read-logs
	SlowRegister   bool // register, then answer only once the client gave up
}

// Request is one request the fake cluster answered.
type Request struct {
	Method string
	Path   string
	Query  url.Values
	Header http.Header
	Body   []byte
}

// Registered is a job as the driver registered it, for a script function
// (ScriptFor) to choose what the job does.
type Registered struct {
	ID string
	// Spec is the Job object as the driver sent it.
	Spec map[string]any
}

// Case returns the case file the job's task would find (the data of its
// template rendering local/case.json), nil when there is none.
func (r Registered) Case() []byte {
	for _, t := range r.templates() {
		if t["DestPath"] == "local/case.json" {
			s, _ := t["EmbeddedTmpl"].(string)
			return []byte(s)
		}
	}
	return nil
}

func (r Registered) templates() []map[string]any {
	var out []map[string]any
	groups, _ := r.Spec["TaskGroups"].([]any)
	for _, g := range groups {
		tasks, _ := g.(map[string]any)["Tasks"].([]any)
		for _, t := range tasks {
			tms, _ := t.(map[string]any)["Templates"].([]any)
			for _, tm := range tms {
				if m, ok := tm.(map[string]any); ok {
					out = append(out, m)
				}
			}
		}
	}
	return out
}

// Server is a fake Nomad cluster. It honours blocking queries (index,
// wait) and records every request.
type Server struct {
	// URL is the cluster's address (http://127.0.0.1:port).
	URL string

	t      testing.TB
	script Script

	mu        sync.Mutex
	scriptFor func(Registered) Script
	step      time.Duration
	index     uint64
	changed   chan struct{}
	jobs      map[string]*fakeJob
	vars      map[string]map[string]string
	reqs      []Request
}

// fakeJob is one registered job.
type fakeJob struct {
	id      string
	spec    map[string]any
	raw     []byte // the body of its registration
	script  Script
	stop    bool
	evals   []map[string]any
	alloc   *fakeAlloc
	stdout  []byte
	stderr  []byte
	trace   string
	release chan struct{} // closed by Release
	stopped chan struct{} // closed when the job is deregistered
}

// fakeAlloc is the state of a job's allocation.
type fakeAlloc struct {
	id                    string
	clientStatus, desired string
	state                 string
	failed                bool
	startedAt, finishedAt time.Time
	events                []map[string]any
	createIndex           uint64
}

// NewServer starts a fake cluster on loopback that runs every job as sc
// says (see ScriptFor to vary it per job); it stops when t ends.
func NewServer(t testing.TB, sc Script) *Server {
	s := &Server{
		t: t, script: sc, step: 5 * time.Millisecond,
		index: 10, changed: make(chan struct{}),
		jobs: map[string]*fakeJob{}, vars: map[string]map[string]string{},
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// ScriptFor makes each job registered from now on run as f says, given
// the job as registered (its case, its env), in place of the Script given
// to NewServer.
func (s *Server) ScriptFor(f func(Registered) Script) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scriptFor = f
}

// SetStep sets the pause between a job's steps (5 ms by default).
func (s *Server) SetStep(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.step = d
}

// AddJob puts a job that this fake cluster did not see registered (one
// left by someone else) under id, with spec as its Job object.
func (s *Server) AddJob(id string, spec map[string]any) {
	s.update(func() {
		s.jobs[id] = &fakeJob{id: id, spec: spec, release: make(chan struct{}), stopped: make(chan struct{})}
	})
}

// testdata returns a fresh copy of a recorded body.
func (s *Server) testdata(name string) map[string]any {
	b, err := recorded.ReadFile("testdata/" + name)
	if err != nil {
		s.t.Errorf("nomadtest: %v", err)
		return map[string]any{}
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		s.t.Errorf("nomadtest: %s: %v", name, err)
		return map[string]any{}
	}
	return m
}

// event returns the recorded task event of type typ, stamped now.
func (s *Server) event(typ string, set map[string]any) map[string]any {
	ev, _ := s.testdata("task_events.json")[typ].(map[string]any)
	if ev == nil {
		ev = map[string]any{"Type": typ}
	}
	ev["Time"] = time.Now().UnixNano()
	for k, v := range set {
		ev[k] = v
	}
	return ev
}

// update changes the state under the lock and wakes blocking queries.
func (s *Server) update(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f()
	s.index++
	close(s.changed)
	s.changed = make(chan struct{})
}

// Requests returns the requests answered so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Count returns how many requests had method and a path starting with prefix.
func (s *Server) Count(method, prefix string) int {
	n := 0
	for _, r := range s.Requests() {
		if r.Method == method && strings.HasPrefix(r.Path, prefix) {
			n++
		}
	}
	return n
}

// Jobs returns the IDs of the jobs the cluster holds, in no order.
func (s *Server) Jobs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.jobs))
	for id := range s.jobs {
		out = append(out, id)
	}
	return out
}

// Job returns job id as the driver registered it: its Job object and the
// whole body of its registration; ok is false for an unknown job.
func (s *Server) Job(id string) (reg Registered, body []byte, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.jobs[id]
	if j == nil {
		return Registered{}, nil, false
	}
	return Registered{ID: id, Spec: j.spec}, bytes.Clone(j.raw), true
}

// Stopped reports whether job id was deregistered.
func (s *Server) Stopped(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.jobs[id]
	return j != nil && j.stop
}

// Variables returns how many Variables the cluster holds.
func (s *Server) Variables() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.vars)
}

// TaskState returns the state of job id's task ("" before it has one).
func (s *Server) TaskState(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if j := s.jobs[id]; j != nil && j.alloc != nil {
		return j.alloc.state
	}
	return ""
}

// Release lets a held job end with its script's exit code.
func (s *Server) Release(id string) {
	s.mu.Lock()
	j := s.jobs[id]
	s.mu.Unlock()
	if j == nil {
		s.t.Errorf("nomadtest: Release of unknown job %s", id)
		return
	}
	select {
	case <-j.release:
	default:
		close(j.release)
	}
}

func (s *Server) pause() {
	s.mu.Lock()
	d := s.step
	s.mu.Unlock()
	time.Sleep(d)
}

// run moves job j through its life as its script says.
func (s *Server) run(j *fakeJob) {
	sc := j.script
	s.pause()
	s.update(func() {
		if sc.PlacementFails {
			ev := s.testdata("evaluation_placement_failed.json")
			ev["JobID"] = j.id
			j.evals = append(j.evals, ev)
			return
		}
		ev := s.testdata("evaluation_complete.json")
		ev["JobID"] = j.id
		j.evals = append(j.evals, ev)
	})
	if sc.PlacementFails {
		return
	}
	s.pause()
	s.update(func() {
		if j.stop {
			return
		}
		j.alloc = &fakeAlloc{
			id: "alloc-" + j.id, clientStatus: "pending", desired: "run", state: "pending",
			events: []map[string]any{s.event("Received", nil)}, createIndex: s.index + 1,
		}
	})
	s.pause()
	if sc.DriverFailure {
		s.update(func() {
			a := j.alloc
			if a == nil {
				return
			}
			a.state, a.failed, a.clientStatus, a.finishedAt = "dead", true, "failed", time.Now()
			a.events = append(a.events, s.event("Task Setup", nil), s.event("Driver Failure", nil))
		})
		return
	}
	stopped := false
	s.update(func() {
		if j.stop || j.alloc == nil {
			stopped = true
			return
		}
		a := j.alloc
		a.state, a.clientStatus, a.startedAt = "running", "running", time.Now()
		a.events = append(a.events, s.event("Task Setup", nil), s.event("Started", nil))
	})
	if stopped {
		return
	}
	for i := range max(len(sc.Stdout), len(sc.Stderr)) {
		s.pause()
		s.update(func() {
			if i < len(sc.Stdout) {
				j.stdout = append(j.stdout, sc.Stdout[i]...)
			}
			if i < len(sc.Stderr) {
				j.stderr = append(j.stderr, sc.Stderr[i]...)
			}
		})
	}
	s.update(func() { j.trace = sc.Trace })
	if sc.Hold {
		select {
		case <-j.release:
		case <-j.stopped:
			return
		}
	}
	s.pause()
	s.update(func() {
		a := j.alloc
		if j.stop || a.state == "dead" {
			return
		}
		status := "complete"
		if sc.Exit != 0 {
			status, a.failed = "failed", true
		}
		a.state, a.clientStatus, a.finishedAt = "dead", status, time.Now()
		a.events = append(a.events, s.event("Terminated", map[string]any{
			"ExitCode": sc.Exit, "DisplayMessage": "Exit Code: " + strconv.Itoa(sc.Exit),
			"Details": map[string]any{"exit_code": strconv.Itoa(sc.Exit), "oom_killed": "false", "signal": "0"},
		}))
	})
}

// stopJob is what deregistering does to a job: its task is killed.
func (s *Server) stopJob(j *fakeJob) {
	s.update(func() {
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
			a.events = append(a.events, s.event("Killing", nil), s.event("Terminated", map[string]any{
				"ExitCode": 143, "Signal": 15, "DisplayMessage": "Exit Code: 143, Signal: 15",
			}), s.event("Killed", nil))
		}
		a.state, a.clientStatus, a.finishedAt = "dead", "complete", time.Now()
	})
}

// allocJSON renders j's allocation list stub from the recorded one; the
// caller holds s.mu.
func (s *Server) allocJSON(j *fakeJob) map[string]any {
	a := j.alloc
	m := s.testdata("allocation_stub.json")
	m["ID"], m["JobID"], m["Name"] = a.id, j.id, j.id+".case[0]"
	m["ClientStatus"], m["DesiredStatus"] = a.clientStatus, a.desired
	m["CreateIndex"], m["ModifyIndex"] = a.createIndex, s.index
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

// ServeHTTP answers the Nomad API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.reqs = append(s.reqs, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Header: r.Header.Clone(), Body: body})
	s.mu.Unlock()
	if r.Header.Get("X-Nomad-Token") != Token {
		http.Error(w, "ACL token not found", http.StatusForbidden)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	p := r.URL.Path
	switch {
	case r.Method == http.MethodPut && p == "/v1/jobs":
		s.register(r.Context(), w, body)
	case strings.HasPrefix(p, "/v1/job/"):
		rest := strings.TrimPrefix(p, "/v1/job/")
		id, sub, _ := strings.Cut(rest, "/")
		s.mu.Lock()
		j := s.jobs[id]
		s.mu.Unlock()
		if j == nil {
			http.Error(w, "job not found", http.StatusNotFound)
			return
		}
		switch {
		case sub == "" && r.Method == http.MethodGet:
			s.mu.Lock()
			job := map[string]any{}
			for k, v := range j.spec {
				job[k] = v
			}
			job["Stop"] = j.stop
			job["Status"] = "running"
			s.mu.Unlock()
			s.reply(w, job)
		case sub == "" && r.Method == http.MethodDelete:
			s.stopJob(j)
			s.reply(w, s.testdata("job_deregister_response.json"))
		case sub == "allocations":
			s.blocking(w, r, func() any {
				out := []any{}
				if j.alloc != nil {
					out = append(out, s.allocJSON(j))
				}
				return out
			})
		case sub == "evaluations":
			s.mu.Lock()
			evals := append([]map[string]any{}, j.evals...)
			s.mu.Unlock()
			s.reply(w, evals)
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
			s.update(func() { s.vars[path] = v.Items })
			out := s.testdata("variable.json")
			out["Path"], out["Items"] = path, v.Items // Nomad echoes the items
			s.reply(w, out)
		case http.MethodDelete:
			s.update(func() { delete(s.vars, path) })
			w.WriteHeader(http.StatusNoContent)
		default:
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		}
	case strings.HasPrefix(p, "/v1/client/fs/logs/"):
		s.logs(w, r, strings.TrimPrefix(p, "/v1/client/fs/logs/alloc-"))
	case strings.HasPrefix(p, "/v1/client/fs/cat/"):
		s.mu.Lock()
		j := s.jobs[strings.TrimPrefix(p, "/v1/client/fs/cat/alloc-")]
		var trace string
		if j != nil {
			trace = j.trace
		}
		s.mu.Unlock()
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

func (s *Server) reply(w http.ResponseWriter, v any) {
	s.mu.Lock()
	w.Header().Set("X-Nomad-Index", strconv.FormatUint(s.index, 10))
	s.mu.Unlock()
	w.Header().Set("X-Nomad-KnownLeader", "true")
	w.Header().Set("X-Nomad-LastContact", "0")
	json.NewEncoder(w).Encode(v)
}

// register answers PUT /v1/jobs: a job is new, or refused as Nomad
// refuses an EnforceIndex of 0 for a job that exists.
func (s *Server) register(ctx context.Context, w http.ResponseWriter, body []byte) {
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
	s.mu.Lock()
	_, exists := s.jobs[id]
	sc, f := s.script, s.scriptFor
	s.mu.Unlock()
	if exists && req.EnforceIndex && req.JobModifyIndex == 0 {
		http.Error(w, "Enforcing job modify index 0: job already exists", http.StatusInternalServerError)
		return
	}
	if f != nil {
		sc = f(Registered{ID: id, Spec: req.Job})
	}
	j := &fakeJob{id: id, spec: req.Job, raw: body, script: sc, release: make(chan struct{}), stopped: make(chan struct{})}
	s.update(func() { s.jobs[id] = j })
	go s.run(j)
	if sc.SlowRegister {
		<-ctx.Done()
		return
	}
	s.reply(w, s.testdata("job_register_response.json"))
}

// blocking answers a blocking query: at once when the state is newer
// than index, else when it changes or wait has passed.
func (s *Server) blocking(w http.ResponseWriter, r *http.Request, answer func() any) {
	idx, _ := strconv.ParseUint(r.URL.Query().Get("index"), 10, 64)
	wait := 5 * time.Minute
	if ms, err := strconv.Atoi(strings.TrimSuffix(r.URL.Query().Get("wait"), "ms")); err == nil {
		wait = time.Duration(ms) * time.Millisecond
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		s.mu.Lock()
		if s.index > idx {
			v := answer()
			s.mu.Unlock()
			s.reply(w, v)
			return
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-timer.C:
			s.mu.Lock()
			v := answer()
			s.mu.Unlock()
			s.reply(w, v)
			return
		case <-r.Context().Done():
			return
		}
	}
}

// logs streams a task's log as Nomad does with follow=true: frames of
// base64 data as the task writes, heartbeats while it is quiet, and the
// end of the stream once the task is dead and everything was sent.
func (s *Server) logs(w http.ResponseWriter, r *http.Request, jobID string) {
	s.mu.Lock()
	j := s.jobs[jobID]
	refused := j != nil && j.script.LogsRefused
	s.mu.Unlock()
	if refused {
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
		s.mu.Lock()
		j := s.jobs[jobID]
		if j == nil {
			s.mu.Unlock()
			http.Error(w, "unknown allocation", http.StatusNotFound)
			return
		}
		data := j.stdout
		if typ == "stderr" {
			data = j.stderr
		}
		data = bytes.Clone(data)
		dead := j.alloc != nil && j.alloc.state == "dead"
		ch := s.changed
		s.mu.Unlock()
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
