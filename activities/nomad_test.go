package activities_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"svc/drivers/nomad"
	"svc/drivers/nomad/nomadtest"
	"svc/internal/domain/eval"
	"svc/internal/platform/config"
	"svc/internal/service/runs"
	"svc/internal/testing/stacktest"
	"svc/internal/testing/testwait"
)

// Cases really run on a nomad runtime: the whole service (API, embedded
// Temporal, worker, SQLite store) dispatching to a fake Nomad cluster on
// loopback, which runs each job as its case says.

const (
	// harnessSecret is the value of the harness's secretEnv secret.
	harnessSecret = "sk-harness-0f9e8d7c6b5a4930"
	// nomadImage is the runtime's default image.
	nomadImage = "registry.example/agent:1"
)

// nomadStack is a service with a nomad runtime "cluster" pointing at a
// fake cluster, and a harness "agent" with a secret, on it.
type nomadStack struct {
	*stacktest.Stack
	cluster *nomadtest.Server
}

func newNomadStack(t *testing.T) *nomadStack {
	t.Helper()
	cluster := nomadtest.NewServer(t, nomadtest.Script{})
	// What a job does depends on its case: "bad*" exits 3, "hold*" runs
	// until stopped, any other answers 4 with a trace.
	cluster.ScriptFor(func(r nomadtest.Registered) nomadtest.Script {
		var c struct{ ID string }
		if err := json.Unmarshal(r.Case(), &c); err != nil {
			t.Errorf("job %s: case file %q: %v", r.ID, r.Case(), err)
		}
		switch {
		case strings.HasPrefix(c.ID, "bad"):
			return nomadtest.Script{Stdout: []string{"no idea\n"}, Stderr: []string{"crashed on " + c.ID + "\n"}, Exit: 3}
		case strings.HasPrefix(c.ID, "hold"):
			return nomadtest.Script{Stdout: []string{"thinking about " + c.ID + "\n"}, Hold: true}
		}
		return nomadtest.Script{
			Stdout: []string{"4\n"},
			Stderr: []string{"working on " + c.ID + "\n", "done\n"},
			Trace:  `{"kind":"tool_call","name":"calculator","input":{"expr":"2+2"},"output":4}` + "\n",
		}
	})
	st := stacktest.New(t, stacktest.Options{Backend: "sqlite", TaskQueue: "nomad-it", Host: "test-worker", Level: slog.LevelWarn,
		Config: func(cfg *config.Config) { cfg.ProbeAllow = "127.0.0.1" }})
	s := &nomadStack{Stack: st, cluster: cluster}

	s.Call(t, "PUT", "/secrets/nomad-token", fmt.Sprintf(`{"value":%q,"allowedHosts":["127.0.0.1"]}`, nomadtest.Token), 204, nil)
	s.Call(t, "PUT", "/secrets/model-key", fmt.Sprintf(`{"value":%q}`, harnessSecret), 204, nil)
	s.Call(t, "POST", "/runtimes", fmt.Sprintf(`{"id":"cluster","version":"1","kind":"nomad","addr":%q,"image":%q,
		"authSecret":"nomad-token","datacenters":["dc1"],"cpuMhzPerCore":2000}`, cluster.URL, nomadImage), 201, nil)
	s.Call(t, "POST", "/harnesses", `{"id":"agent","version":"1.0.0","kind":"process","command":["/bin/agent","--answer"],
		"env":{"MODE":"eval"},"secretEnv":{"MODEL_KEY":"model-key"},"resources":{"cpu":500,"memoryMb":256}}`, 201, nil)
	return s
}

// wait polls GET /runs/:id until the run is terminal.
func (s *nomadStack) wait(t *testing.T, id string) eval.Run {
	t.Helper()
	var run eval.Run
	testwait.UntilValue(t, 2*time.Minute, "run "+id+" to end", func() (eval.Status, bool) {
		run = eval.Run{}
		s.Call(t, "GET", "/runs/"+id, "", 200, &run)
		return run.Status, run.Status.Terminal()
	})
	return run
}

// waitBatch polls GET /scorecards/:id until the batch is terminal.
func (s *nomadStack) waitBatch(t *testing.T, id string) eval.Scorecard {
	t.Helper()
	var sc eval.Scorecard
	testwait.UntilValue(t, 2*time.Minute, "batch "+id+" to end", func() (string, bool) {
		sc = eval.Scorecard{}
		s.Call(t, "GET", "/scorecards/"+id, "", 200, &sc)
		return fmt.Sprintf("%s %+v", sc.Status, sc.Progress), eval.ScorecardTerminal(sc.Status) && sc.FinishedAt != nil
	})
	return sc
}

// dataset registers dataset id with cases answering "4".
func (s *nomadStack) dataset(t *testing.T, id string, caseIDs ...string) {
	t.Helper()
	var cases []map[string]any
	for _, c := range caseIDs {
		cases = append(cases, map[string]any{"id": c, "task": "What is 2+2?", "expected": "4", "graders": []map[string]any{{"id": "exact"}}})
	}
	b, _ := json.Marshal(map[string]any{"id": id, "version": "1.0.0", "cases": cases})
	s.Call(t, "POST", "/datasets", string(b), 201, nil)
}

// checkRanOnNomad checks what a run's result records of where it ran,
// and that its job carried no credential.
func (s *nomadStack) checkRanOnNomad(t *testing.T, run eval.Run) {
	t.Helper()
	r := run.Result
	if r == nil {
		t.Fatalf("run %s has no result", run.ID)
	}
	if e := r.Execution; e == nil || e.Driver != nomad.Name || e.Image != nomadImage || e.Runtime != "cluster" || e.OS != "linux" {
		t.Errorf("run %s execution = %+v, want driver nomad, image %s, runtime cluster", run.ID, e, nomadImage)
	}
	if p := r.Provenance; p == nil || p.Driver != nomad.Name || p.Attestation != "managed" {
		t.Errorf("run %s provenance = %+v, want driver nomad", run.ID, p)
	}
	id := nomad.JobID(run.ID, 1)
	_, body, ok := s.cluster.Job(id)
	if !ok {
		t.Fatalf("run %s: no job %s on the cluster (jobs %v)", run.ID, id, s.cluster.Jobs())
	}
	for what, v := range map[string]string{"the harness's secret": harnessSecret, "the cluster token": nomadtest.Token} {
		if strings.Contains(string(body), v) {
			t.Errorf("job %s's spec carries %s", id, what)
		}
	}
}

func TestNomadRuntime(t *testing.T) {
	s := newNomadStack(t)

	t.Run("run", func(t *testing.T) {
		var queued eval.Run
		s.Call(t, "POST", "/runs", `{"harness":{"id":"agent","version":"latest"},"runtime":"cluster",
			"case":{"id":"sum","task":"What is 2+2?","expected":"4","graders":[{"id":"exact"},{"id":"tool_calls","min":1}]}}`, 202, &queued)
		if queued.Runtime != "cluster" {
			t.Errorf("the run records runtime %q, want cluster", queued.Runtime)
		}
		run := s.wait(t, queued.ID)
		if run.Status != eval.StatusSucceeded {
			t.Fatalf("run ended %s: %+v", run.Status, run.Error)
		}
		r := run.Result
		if !r.Pass || r.Evidence == nil || r.Evidence.FinalAnswer != "4" || len(r.Scores) != 2 {
			t.Errorf("result pass %v, answer %+v, scores %+v; want the stdout answer 4 graded by both graders", r.Pass, r.Evidence, r.Scores)
		}
		if !r.TraceSealed || r.TraceRef != "trajectory:"+run.ID {
			t.Errorf("trace sealed %v, ref %q", r.TraceSealed, r.TraceRef)
		}
		var tr runs.TrajectoryView
		s.Call(t, "GET", "/runs/"+run.ID+"/trajectory", "", 200, &tr)
		if !tr.Meta.Sealed || tr.Meta.EventCount != len(r.Trace) || tr.Meta.EventCount == 0 {
			t.Errorf("trajectory meta %+v, want sealed with the job's trace", tr.Meta)
		}
		var logs runs.Logs
		s.Call(t, "GET", "/runs/"+run.ID+"/logs", "", 200, &logs)
		byStream := map[string]string{}
		for _, c := range logs.Chunks {
			byStream[c.Stream] += c.Data
		}
		if byStream["stdout"] != "4\n" || byStream["stderr"] != "working on sum\ndone\n" {
			t.Errorf("stored logs %q, want the job's stdout and stderr", byStream)
		}
		s.checkRanOnNomad(t, run)

		// The job asked for the harness's resources, in MHz by the
		// runtime's cpuMhzPerCore; the secret went to the job's Variable.
		reg, _, _ := s.cluster.Job(nomad.JobID(run.ID, 1))
		tk := reg.Spec["TaskGroups"].([]any)[0].(map[string]any)["Tasks"].([]any)[0].(map[string]any)
		res := tk["Resources"].(map[string]any)
		if res["CPU"] != 1000.0 || res["MemoryMB"] != 256.0 {
			t.Errorf("job resources %v, want CPU 1000 MHz (500 millicores x 2000 / 1000) and 256 MB", res)
		}
		if cfg := tk["Config"].(map[string]any); cfg["image"] != nomadImage || cfg["command"] != "/bin/agent" {
			t.Errorf("job config %v", cfg)
		}
		wrote := false
		for _, q := range s.cluster.Requests() {
			varPath := "/v1/var/" + nomad.VariablePath(nomad.JobID(run.ID, 1))
			switch {
			case q.Method == "PUT" && q.Path == varPath:
				wrote = strings.Contains(string(q.Body), harnessSecret)
			case strings.Contains(string(q.Body), harnessSecret) || strings.Contains(q.Query.Encode(), harnessSecret):
				t.Errorf("%s %s carried the harness's secret outside the job's Variable", q.Method, q.Path)
			}
			if strings.Contains(string(q.Body), nomadtest.Token) || strings.Contains(q.Query.Encode(), nomadtest.Token) {
				t.Errorf("%s %s carried the cluster token outside X-Nomad-Token", q.Method, q.Path)
			}
		}
		if !wrote {
			t.Error("the harness's secret was not written to the job's Variable")
		}
		if n := s.cluster.Variables(); n != 0 {
			t.Errorf("%d Variables left after the job", n)
		}
	})

	t.Run("credential missing", func(t *testing.T) {
		// Registered before its secret is stored: the run fails saying
		// which secret to store, and nothing reaches the cluster.
		s.Call(t, "POST", "/runtimes", fmt.Sprintf(`{"id":"unkeyed","version":"1","kind":"nomad","addr":%q,"image":%q,"authSecret":"absent-token","cpuMhzPerCore":1000}`,
			s.cluster.URL, nomadImage), 201, nil)
		before := len(s.cluster.Requests())
		var queued eval.Run
		s.Call(t, "POST", "/runs", `{"harness":{"id":"agent","version":"latest"},"runtime":"unkeyed","case":{"id":"c","task":"t"}}`, 202, &queued)
		run := s.wait(t, queued.ID)
		if run.Status != eval.StatusFailed || run.Error == nil || !strings.Contains(run.Error.Message, `authSecret "absent-token" is not in the workspace secret store`) {
			t.Errorf("run %s, error %+v; want failed naming the missing authSecret", run.Status, run.Error)
		}
		if n := len(s.cluster.Requests()) - before; n != 0 {
			t.Errorf("%d requests reached the cluster without its credential", n)
		}
	})

	t.Run("scorecard", func(t *testing.T) {
		s.dataset(t, "qa", "ok1", "ok2", "bad1")
		var q eval.Scorecard
		s.Call(t, "POST", "/scorecards", `{"dataset":{"id":"qa","version":"latest"},"harness":{"id":"agent","version":"latest"},
			"runtime":"cluster","concurrency":3}`, 202, &q)
		if q.Runtime != "cluster" {
			t.Errorf("the scorecard records runtime %q, want cluster", q.Runtime)
		}
		sc := s.waitBatch(t, q.ID)
		if sc.Status != eval.ScorecardSucceeded {
			t.Fatalf("batch ended %s: %+v", sc.Status, sc.Error)
		}
		if sc.Progress.Done != 3 || sc.Progress.Passed != 2 || sc.Progress.Failed != 1 {
			t.Errorf("progress %+v, want 3 done, 2 passed, 1 failed", sc.Progress)
		}
		if len(sc.Scorecard) != 3 {
			t.Fatalf("%d case rows, want 3", len(sc.Scorecard))
		}
		for _, row := range sc.Scorecard {
			run := s.wait(t, row.RunID)
			s.checkRanOnNomad(t, run)
			switch row.CaseID {
			case "bad1":
				if run.Status != eval.StatusFailed || run.Error == nil || run.Error.Code != eval.CodeExit ||
					!strings.Contains(run.Error.Message, "exited with code 3") || !strings.Contains(run.Error.Message, "crashed on bad1") {
					t.Errorf("case bad1: %s, error %+v; want failed with exit code 3 and its stderr", run.Status, run.Error)
				}
				if run.Result.Process == nil || run.Result.Process.ExitCode != 3 {
					t.Errorf("case bad1 process %+v, want exit code 3", run.Result.Process)
				}
			default:
				if run.Status != eval.StatusSucceeded || !row.CasePass || run.Result.Evidence.FinalAnswer != "4" {
					t.Errorf("case %s: %s, pass %v, verdict %s; want it graded on the answer 4", row.CaseID, run.Status, row.CasePass, row.Verdict)
				}
			}
		}
		// One job per case, whatever retries happened.
		if n := s.cluster.Count("PUT", "/v1/jobs"); n != 4 {
			t.Errorf("%d jobs registered for one run and three cases, want 4", n)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		s.dataset(t, "slow", "hold1", "hold2")
		var q eval.Scorecard
		s.Call(t, "POST", "/scorecards", `{"dataset":{"id":"slow","version":"latest"},"harness":{"id":"agent","version":"latest"},
			"runtime":"cluster","concurrency":2}`, 202, &q)
		var running []string
		testwait.Until(t, time.Minute, "both cases' jobs to run", func() bool {
			running = running[:0]
			for _, id := range s.cluster.Jobs() {
				if s.cluster.TaskState(id) == "running" && !s.cluster.Stopped(id) {
					running = append(running, id)
				}
			}
			return len(running) == 2
		})
		var cancelled eval.Scorecard
		s.Call(t, "POST", "/scorecards/"+q.ID+"/cancel", "", 200, &cancelled)
		if cancelled.Status != eval.ScorecardCancelled {
			t.Fatalf("cancel answered %s", cancelled.Status)
		}
		testwait.Until(t, time.Minute, "the running jobs to be deregistered", func() bool {
			return s.cluster.Stopped(running[0]) && s.cluster.Stopped(running[1])
		})
		for _, q := range s.cluster.Requests() {
			if q.Method == "DELETE" && strings.HasPrefix(q.Path, "/v1/job/") && q.Query.Get("purge") == "true" {
				t.Errorf("%s was purged; a stopped job stays readable until Nomad's GC", q.Path)
			}
		}
		sc := s.waitBatch(t, q.ID)
		if sc.Status != eval.ScorecardCancelled {
			t.Errorf("batch ended %s, want cancelled", sc.Status)
		}
		testwait.Until(t, time.Minute, "the cancelled cases' secrets Variables to be deleted", func() bool { return s.cluster.Variables() == 0 })
	})
}
