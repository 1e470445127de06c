package cli

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"svc/drivers"
	"svc/internal/client"
	"svc/internal/service/runners"
)

func TestRunnerKey(t *testing.T) {
	file := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(file, []byte("rnr_fromfile\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == envRunnerKey {
				return v
			}
			return ""
		}
	}
	tests := []struct {
		flag, file, env string
		want            string
		usage           bool
	}{
		{flag: "rnr_flag", env: "rnr_env", want: "rnr_flag"},
		{file: file, env: "rnr_env", want: "rnr_fromfile"},
		{env: " rnr_env ", want: "rnr_env"},
		{usage: true},
		{env: "ak_notarunner", usage: true},
		{file: filepath.Join(t.TempDir(), "missing"), usage: true},
	}
	for _, tc := range tests {
		got, err := runnerKey(tc.flag, tc.file, env(tc.env))
		if tc.usage {
			if !errors.Is(err, errUsage) {
				t.Errorf("runnerKey(%q, %q, env %q) = %q, %v; want a usage error", tc.flag, tc.file, tc.env, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("runnerKey(%q, %q, env %q) = %q, %v; want %q", tc.flag, tc.file, tc.env, got, err, tc.want)
		}
	}
}

// blockingJob runs until its context ends, as a killed harness does.
type blockingJob struct {
	started chan drivers.Job
}

func (b *blockingJob) Run(ctx context.Context, j drivers.Job) (drivers.Result, error) {
	b.started <- j
	if j.Log != nil {
		j.Log("stdout", []byte("calling with "+testJobSecret+" then "+strings.Repeat("working ", 200)+"\n"))
	}
	<-ctx.Done()
	return drivers.Result{ExitCode: -1, Cancelled: true, Duration: 5 * time.Millisecond, OS: "linux"}, nil
}

// fakeRunnerAPI hands out one job, answers its heartbeats cancelled from
// the second on, and records the result.
type fakeRunnerAPI struct {
	mu      sync.Mutex
	leased  bool
	beats   int
	auth    []string
	results chan runners.Completion
	logs    []runners.LogChunk
}

// testJobSecret is the secret of the fake API's job.
const testJobSecret = "s3cret-value-123456"

func (f *fakeRunnerAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	switch r.URL.Path {
	case "/runner/lease":
		var req runners.LeaseRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.HeartbeatMs != 50 || req.Runner != "box" {
			http.Error(w, "bad lease request", http.StatusBadRequest)
			return
		}
		if f.leased {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		f.leased = true
		json.NewEncoder(w).Encode(runners.Lease{JobID: "rj_1", LeaseID: "lease_1", Runtime: "own", OTLPToken: "rjt_run1token",
			Job: runners.Job{RunID: "run_1", Attempt: 1, Command: []string{"/bin/true"}, Case: json.RawMessage(`{}`),
				Secrets: map[string]string{"TOKEN": testJobSecret}, TimeoutMs: 60000}})
	case "/runner/jobs/rj_1/heartbeat":
		f.beats++
		json.NewEncoder(w).Encode(runners.HeartbeatReply{Cancelled: f.beats >= 2})
	case "/runner/jobs/rj_1/logs":
		var b runners.LogBatch
		if err := json.NewDecoder(r.Body).Decode(&b); err != nil || b.LeaseID != "lease_1" {
			http.Error(w, "bad log batch", http.StatusBadRequest)
			return
		}
		f.logs = append(f.logs, b.Chunks...)
		w.WriteHeader(http.StatusNoContent)
	case "/runner/jobs/rj_1/result":
		var c runners.Completion
		json.NewDecoder(r.Body).Decode(&c)
		f.results <- c
		w.WriteHeader(http.StatusNoContent)
	default:
		http.NotFound(w, r)
	}
}

func TestRunnerKillsACancelledJobAndPostsItsResult(t *testing.T) {
	api := &fakeRunnerAPI{results: make(chan runners.Completion, 1)}
	srv := httptest.NewServer(api)
	defer srv.Close()
	jobs := &blockingJob{started: make(chan drivers.Job, 1)}
	l := &runnerLoop{
		api:     &client.Client{Base: srv.URL, Token: "rnr_test", HTTP: srv.Client()},
		run:     jobs,
		workers: 1, heartbeat: 50 * time.Millisecond, name: "box", host: "box.example",
		log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { l.serve(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	var j drivers.Job
	select {
	case j = <-jobs.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the leased job did not start")
	}
	if j.RunID != "run_1" || j.Secrets["TOKEN"] != testJobSecret || j.Timeout != time.Minute {
		t.Errorf("job %+v, want the lease's job with its secrets and timeout", j)
	}
	// The harness's spans go to the control plane with the run token,
	// which is in its secrets file and nowhere in its environment.
	if j.OTLPEndpoint != srv.URL || j.Secrets[runners.OTLPHeadersSecret] != "Authorization=Bearer%20rjt_run1token" {
		t.Errorf("job OTLP endpoint %q, headers secret %q; want the API's URL and the run token", j.OTLPEndpoint, j.Secrets[runners.OTLPHeadersSecret])
	}
	for k, v := range j.Env {
		if strings.Contains(v, "rjt_") {
			t.Errorf("the job's environment holds the run token in %s", k)
		}
	}
	var c runners.Completion
	select {
	case c = <-api.results:
	case <-time.After(10 * time.Second):
		t.Fatal("no result was posted after the cancel")
	}
	if c.LeaseID != "lease_1" || !c.Result.Cancelled || c.Result.ExitCode != -1 || c.Result.Host != "box.example" {
		t.Errorf("posted %+v, want the cancelled result under lease_1", c)
	}
	api.mu.Lock()
	defer api.mu.Unlock()
	if api.beats < 2 {
		t.Errorf("%d heartbeats, want the job killed on the second", api.beats)
	}
	// The output was posted before the result, masked, numbered from 1.
	var out strings.Builder
	for i, c := range api.logs {
		if c.Seq != int64(i+1) || c.Stream != "stdout" {
			t.Errorf("chunk %d is %d/%s, want seq %d of stdout", i, c.Seq, c.Stream, i+1)
		}
		out.Write(c.Data)
	}
	if got := out.String(); !strings.HasPrefix(got, "calling with *** then working") || strings.Contains(got, testJobSecret) {
		t.Errorf("posted output %.60q..., want it whole with the secret masked", got)
	}
	for _, a := range api.auth {
		if a != "Bearer rnr_test" {
			t.Errorf("a request carried Authorization %q, want the runner key", a)
		}
	}
}
