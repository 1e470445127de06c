package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"svc/eval"
	"svc/registry"
	"svc/scorecards"
)

// batchStates is a fake batch that moves one state further on every read
// and then stays in its last state. A nil state answers 503 once.
type batchStates struct {
	mu     sync.Mutex
	states []*eval.Scorecard
	reads  int
}

func (b *batchStates) get(w http.ResponseWriter, _ *http.Request) {
	b.mu.Lock()
	i := min(b.reads, len(b.states)-1)
	b.reads++
	b.mu.Unlock()
	if b.states[i] == nil {
		writeError(w, http.StatusServiceUnavailable, "UNAVAILABLE", "the store is not ready")
		return
	}
	writeJSONBody(w, 200, b.states[i])
}

func state(status eval.Status, done, passed, failed int) *eval.Scorecard {
	return &eval.Scorecard{ID: "sc_w", Status: status, Progress: eval.Progress{Total: 4, Done: done, Passed: passed, Failed: failed}}
}

// TestScorecardRunWait: run --wait submits, prints one progress line per
// change on stderr, and prints the id (or the final record) on stdout; the
// exit code follows the final status.
func TestScorecardRunWait(t *testing.T) {
	failed := state(eval.ScorecardFailed, 2, 1, 1)
	failed.Error = &eval.Error{Code: "DISPATCH_FAILED", Phase: eval.PhaseDispatch, Message: "runtime local2 is not registered"}
	running := []*eval.Scorecard{
		state(eval.ScorecardQueued, 0, 0, 0),
		state(eval.ScorecardRunning, 1, 1, 0),
		state(eval.ScorecardRunning, 1, 1, 0),
		state(eval.ScorecardRunning, 3, 2, 1),
	}
	for _, tc := range []struct {
		name     string
		states   []*eval.Scorecard
		args     []string
		tty      bool
		want     int
		wantOut  string
		wantErr  string
		wantGets bool
	}{
		{"succeeded", append(running, state(eval.ScorecardSucceeded, 4, 3, 1)), []string{"--wait"}, false, exitOK, "sc_w\n",
			"sc_w queued 0/4 done, 0 passed, 0 failed\n" +
				"sc_w running 1/4 done, 1 passed, 0 failed\n" +
				"sc_w running 3/4 done, 2 passed, 1 failed\n" +
				"sc_w succeeded 4/4 done, 3 passed, 1 failed\n", true},
		{"on a terminal", append(running, state(eval.ScorecardSucceeded, 4, 3, 1)), []string{"--wait"}, true, exitOK, "sc_w\n",
			"\rsc_w queued 0/4 done, 0 passed, 0 failed\x1b[K" +
				"\rsc_w running 1/4 done, 1 passed, 0 failed\x1b[K" +
				"\rsc_w running 3/4 done, 2 passed, 1 failed\x1b[K" +
				"\rsc_w succeeded 4/4 done, 3 passed, 1 failed\x1b[K\n", true},
		{"failed", append(running, failed), []string{"--wait"}, false, exitVerdict, "sc_w\n",
			"sc_w failed 2/4 done, 1 passed, 1 failed\nsvc scorecard: sc_w failed in phase dispatch: runtime local2 is not registered\n", true},
		{"cancelled", []*eval.Scorecard{state(eval.ScorecardCancelled, 1, 1, 0)}, []string{"--wait"}, false, exitVerdict, "sc_w\n", "svc scorecard: sc_w cancelled\n", true},
		{"a restart mid-wait", []*eval.Scorecard{state(eval.ScorecardRunning, 1, 1, 0), nil, state(eval.ScorecardSucceeded, 4, 4, 0)}, []string{"--wait"}, false, exitOK, "sc_w\n",
			"svc scorecard: the store is not ready (request req-42); retrying for up to 1m0s\n", true},
		{"final record as JSON", []*eval.Scorecard{state(eval.ScorecardSucceeded, 4, 4, 0)}, []string{"--wait", "--json"}, false, exitOK, `{"id":"sc_w","tenant":"","kind":"","dataset":{"id":"","version":""},"harness":{"id":"","version":""},"status":"succeeded"`, "", true},
		{"no wait", running, nil, false, exitOK, "sc_w\n", "", false},
		{"no wait, JSON", running, []string{"--json"}, false, exitOK, `{"id":"sc_w","tenant":"","kind":"","dataset":{"id":"","version":""},"harness":{"id":"","version":""},"status":"queued"`, "", false},
		{"timeout", running, []string{"--wait", "--timeout", "50ms"}, false, exitProblem, "", "svc scorecard: sc_w is not over after --timeout 50ms; it keeps running (svc scorecard get sc_w)\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &batchStates{states: tc.states}
			api := newFakeAPI(t, map[string]http.HandlerFunc{
				"POST /scorecards":     answer(202, state(eval.ScorecardQueued, 0, 0, 0)),
				"GET /scorecards/sc_w": b.get,
			})
			args := append([]string{"run", "--dataset", "qa@1.0.0", "--harness", "answerer@1.2.0"}, tc.args...)
			out, errOut, code := invocation{env: map[string]string{envURL: api.srv.URL}, tty: tc.tty}.run(t, "scorecard", runScorecard, args...)
			if code != tc.want {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.want, out, errOut)
			}
			if !strings.HasPrefix(out, tc.wantOut) {
				t.Errorf("stdout %q, want it to start %q", out, tc.wantOut)
			}
			if !strings.Contains(errOut, tc.wantErr) {
				t.Errorf("stderr %q lacks %q", errOut, tc.wantErr)
			}
			if strings.Contains(tc.wantOut, "{") {
				var sc eval.Scorecard
				if err := json.Unmarshal([]byte(out), &sc); err != nil || sc.ID != "sc_w" {
					t.Errorf("stdout %q is not the record: %v", out, err)
				}
			}
			b.mu.Lock()
			gets := b.reads > 0
			b.mu.Unlock()
			if gets != tc.wantGets {
				t.Errorf("read the batch: %v, want %v", gets, tc.wantGets)
			}
		})
	}
}

// TestScorecardRunRequest: the flags become the submit body.
func TestScorecardRunRequest(t *testing.T) {
	api := newFakeAPI(t, map[string]http.HandlerFunc{
		"POST /scorecards": answer(202, state(eval.ScorecardQueued, 0, 0, 0)),
	})
	for _, tc := range []struct {
		name string
		args []string
		want scorecards.SubmitRequest
	}{
		{"minimal", []string{"--dataset", "qa@1.0.0", "--harness", "answerer"},
			scorecards.SubmitRequest{Dataset: registry.Ref{ID: "qa", Version: "1.0.0"}, Harness: registry.Ref{ID: "answerer", Version: "latest"}}},
		{"everything", []string{"--dataset", "qa@latest", "--harness", "answerer@1.2.0", "--judge", "tone", "--judge", "length@2.0.0",
			"--runtime", "local2", "--concurrency", "8", "--trials", "3", "--cases-tags", "smoke,fast", "--cases-ids", "a", "--cases-ids", "b,c",
			"--limit", "5", "--critical-prefix", "billing/", "--critical-case", "login-1"},
			scorecards.SubmitRequest{
				Dataset: registry.Ref{ID: "qa", Version: "latest"}, Harness: registry.Ref{ID: "answerer", Version: "1.2.0"},
				Judges:  []scorecards.JudgeSel{{ID: "tone"}, {ID: "length", Version: "2.0.0"}},
				Runtime: "local2", Concurrency: ptr(8), Trials: ptr(3),
				Cases:         &scorecards.Selection{IDs: []string{"a", "b", "c"}, Tags: []string{"smoke", "fast"}, Limit: 5},
				CriticalCases: []eval.CaseMatcher{{CaseID: "login-1"}, {Prefix: "billing/"}},
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := invocation{env: map[string]string{envURL: api.srv.URL}}.run(t, "scorecard", runScorecard, append([]string{"run"}, tc.args...)...)
			if code != exitOK {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			var got scorecards.SubmitRequest
			if err := json.Unmarshal(api.last("POST", "/scorecards").body, &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("submit body (-want +got):\n%s", diff)
			}
		})
	}
}

// TestScorecardUsage: usage errors exit 2 before any request.
func TestScorecardUsage(t *testing.T) {
	api := newFakeAPI(t, nil)
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"no subcommand", nil, "name a subcommand: run, wait or get"},
		{"unknown subcommand", []string{"start"}, `unknown subcommand "start"`},
		{"no harness", []string{"run", "--dataset", "qa@1"}, "--harness is required"},
		{"bad dataset", []string{"run", "--dataset", "@1", "--harness", "h@1"}, `--dataset "@1": want id@version`},
		{"timeout without wait", []string{"run", "--dataset", "qa@1", "--harness", "h@1", "--timeout", "1m"}, "--timeout is a positive duration and goes with --wait"},
		{"get without id", []string{"get"}, "want exactly one scorecard id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := invocation{env: map[string]string{envURL: api.srv.URL}}.run(t, "scorecard", runScorecard, tc.args...)
			if code != exitProblem || !strings.Contains(errOut, tc.wantErr) {
				t.Errorf("exit %d stderr %q, want 2 and %q", code, errOut, tc.wantErr)
			}
		})
	}
	if n := len(api.requests()); n != 0 {
		t.Errorf("%d requests sent, want none", n)
	}
}

// TestScorecardGet prints the status, progress and summary.
func TestScorecardGet(t *testing.T) {
	sc := state(eval.ScorecardSucceeded, 4, 3, 1)
	sc.Dataset, sc.Harness, sc.Trials, sc.Concurrency = registry.Ref{ID: "qa", Version: "1.0.0"}, registry.Ref{ID: "answerer", Version: "1.2.0"}, 2, 4
	sc.Summary = map[string]eval.MetricSummary{"casePass": {Count: 4, Mean: 0.75, PassRate: ptr(0.75)}, "cost": {Count: 4, Mean: 0.0123}}
	api := newFakeAPI(t, map[string]http.HandlerFunc{"GET /scorecards/sc_w": answer(200, sc)})
	out, errOut, code := invocation{env: map[string]string{envURL: api.srv.URL}}.run(t, "scorecard", runScorecard, "get", "sc_w")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	golden(t, "scorecard_get.golden", out)
}

// TestScorecardWait waits for a batch submitted earlier: the final status
// decides the exit code, and an unknown id is exit 2 at once.
func TestScorecardWait(t *testing.T) {
	for _, tc := range []struct {
		name    string
		id      string
		final   *eval.Scorecard
		want    int
		wantOut string
		wantErr string
	}{
		{"succeeded", "sc_w", state(eval.ScorecardSucceeded, 4, 4, 0), exitOK, "sc_w\n", "sc_w succeeded 4/4 done, 4 passed, 0 failed\n"},
		{"superseded", "sc_w", state(eval.ScorecardSuperseded, 2, 2, 0), exitVerdict, "sc_w\n", "svc scorecard: sc_w superseded\n"},
		{"unknown", "sc_nosuch", nil, exitProblem, "", "svc scorecard: no route GET /scorecards/sc_nosuch (request req-42)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			routes := map[string]http.HandlerFunc{}
			if tc.final != nil {
				b := &batchStates{states: []*eval.Scorecard{state(eval.ScorecardRunning, 1, 1, 0), tc.final}}
				routes["GET /scorecards/sc_w"] = b.get
			}
			api := newFakeAPI(t, routes)
			out, errOut, code := invocation{env: map[string]string{envURL: api.srv.URL}}.run(t, "scorecard", runScorecard, "wait", tc.id)
			if code != tc.want || out != tc.wantOut || !strings.HasSuffix(errOut, tc.wantErr) {
				t.Errorf("exit %d stdout %q stderr %q; want %d, %q, stderr ending %q", code, out, errOut, tc.want, tc.wantOut, tc.wantErr)
			}
		})
	}
}
