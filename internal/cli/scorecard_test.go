package cli

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/internal/client"
	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
	"svc/internal/service/scorecards"
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

// state is a reading of a batch of 4 cases, one of them in flight while
// it runs.
func state(status eval.Status, done, passed, failed int) *eval.Scorecard {
	running := 0
	if status == eval.ScorecardRunning {
		running = min(1, 4-done)
	}
	return &eval.Scorecard{ID: "sc_w", Status: status, Progress: eval.Progress{Total: 4, Done: done, Passed: passed, Failed: failed,
		Running: running, Queued: 4 - done - running}}
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
			"sc_w queued 0/4 (0%) 0 passed, 0 failed\n" +
				"sc_w running 1/4 (25%) 1 passed, 0 failed, 1 running\n" +
				"sc_w running 3/4 (75%) 2 passed, 1 failed, 1 running\n" +
				"sc_w succeeded 4/4 (100%) 3 passed, 1 failed\n", true},
		{"on a terminal", append(running, state(eval.ScorecardSucceeded, 4, 3, 1)), []string{"--wait"}, true, exitOK, "sc_w\n",
			"\rsc_w queued 0/4 (0%) 0 passed, 0 failed\x1b[K" +
				"\rsc_w running 1/4 (25%) 1 passed, 0 failed, 1 running\x1b[K" +
				"\rsc_w running 3/4 (75%) 2 passed, 1 failed, 1 running\x1b[K" +
				"\rsc_w succeeded 4/4 (100%) 3 passed, 1 failed\x1b[K\n", true},
		{"failed", append(running, failed), []string{"--wait"}, false, exitVerdict, "sc_w\n",
			"sc_w failed 2/4 (50%) 1 passed, 1 failed\nsvc scorecard: sc_w failed in phase dispatch: runtime local2 is not registered\n", true},
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
			out, errOut, code := invocation{env: map[string]string{client.EnvURL: api.srv.URL}, tty: tc.tty}.run(t, "scorecard", RunScorecard, args...)
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
			_, errOut, code := invocation{env: map[string]string{client.EnvURL: api.srv.URL}}.run(t, "scorecard", RunScorecard, append([]string{"run"}, tc.args...)...)
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
		{"no subcommand", nil, "name a subcommand: run, wait, list, show, get, score, cancel"},
		{"unknown subcommand", []string{"start"}, `unknown subcommand "start"`},
		{"no harness", []string{"run", "--dataset", "qa@1"}, "--harness is required"},
		{"bad dataset", []string{"run", "--dataset", "@1", "--harness", "h@1"}, `--dataset "@1": want id@version`},
		{"timeout without wait", []string{"run", "--dataset", "qa@1", "--harness", "h@1", "--timeout", "1m"}, "--timeout is a positive duration and goes with --wait"},
		{"get without id", []string{"get"}, "want exactly one scorecard id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := invocation{env: map[string]string{client.EnvURL: api.srv.URL}}.run(t, "scorecard", RunScorecard, tc.args...)
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
	out, errOut, code := invocation{env: map[string]string{client.EnvURL: api.srv.URL}}.run(t, "scorecard", RunScorecard, "get", "sc_w")
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
		{"succeeded", "sc_w", state(eval.ScorecardSucceeded, 4, 4, 0), exitOK, "sc_w\n", "sc_w succeeded 4/4 (100%) 4 passed, 0 failed\n"},
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
			out, errOut, code := invocation{env: map[string]string{client.EnvURL: api.srv.URL}}.run(t, "scorecard", RunScorecard, "wait", tc.id)
			if code != tc.want || out != tc.wantOut || !strings.HasSuffix(errOut, tc.wantErr) {
				t.Errorf("exit %d stdout %q stderr %q; want %d, %q, stderr ending %q", code, out, errOut, tc.want, tc.wantOut, tc.wantErr)
			}
		})
	}
}

// reading is a batch of 2000 case-trials as the service reports it: done
// cases pass but failed of them, running in flight, at a rate since
// startedAt (t0) up to now.
func reading(status eval.Status, done, failed, running int, rate float64, now time.Duration) eval.Scorecard {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	at := t0.Add(now)
	return eval.Scorecard{ID: "sc_x", Status: status, Progress: eval.Progress{Total: 2000, Done: done, Passed: done - failed, Failed: failed,
		Running: running, Queued: 2000 - done - running, CasesPerSecond: rate, StartedAt: &t0, UpdatedAt: &at}}
}

// TestProgressLine: done/total, percent, passed, failed, running, pace,
// elapsed and ETA, each left out when the reading cannot say it.
func TestProgressLine(t *testing.T) {
	noPace := func(sc eval.Scorecard) eval.Scorecard {
		sc.Progress.CasesPerSecond, sc.Progress.StartedAt, sc.Progress.UpdatedAt = 0, nil, nil
		return sc
	}
	cancelled := noPace(reading(eval.ScorecardCancelled, 10, 0, 2, 0, 0))
	cancelled.Progress.Passed, cancelled.Progress.Cancelled = 5, 5
	for _, tc := range []struct {
		name string
		sc   eval.Scorecard
		want string
	}{
		{"under way", reading(eval.ScorecardRunning, 450, 10, 64, 41.3, 11*time.Second),
			"sc_x running 450/2000 (22%) 440 passed, 10 failed, 64 running, 41.3 cases/s, 0:11 elapsed, ETA 0:38"},
		{"queued: nothing started", noPace(reading(eval.ScorecardQueued, 0, 0, 0, 0, 0)),
			"sc_x queued 0/2000 (0%) 0 passed, 0 failed"},
		{"started, none done: no pace yet", reading(eval.ScorecardRunning, 0, 0, 64, 0, 3*time.Second),
			"sc_x running 0/2000 (0%) 0 passed, 0 failed, 64 running, 0:03 elapsed"},
		{"slow, past an hour", reading(eval.ScorecardRunning, 60, 0, 1, 0.0167, time.Hour),
			"sc_x running 60/2000 (3%) 60 passed, 0 failed, 1 running, 0.0167 cases/s, 1:00:00 elapsed, ETA 32:16:08"},
		{"over: no ETA, nothing running", reading(eval.ScorecardSucceeded, 2000, 10, 0, 40, 50*time.Second),
			"sc_x succeeded 2000/2000 (100%) 1990 passed, 10 failed, 40.0 cases/s, 0:50 elapsed"},
		{"cancelled, draining, no recorded pace", cancelled,
			"sc_x cancelled 10/2000 (0%) 5 passed, 0 failed, 5 cancelled, 2 running"},
		{"a service that reports no pace", noPace(reading(eval.ScorecardRunning, 45, 5, 0, 0, 0)),
			"sc_x running 45/2000 (2%) 40 passed, 5 failed, 0 running"},
		{"no cases", eval.Scorecard{ID: "sc_x", Status: eval.ScorecardSucceeded},
			"sc_x succeeded 0/0 (0%) 0 passed, 0 failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := progressLine(tc.sc); got != tc.want {
				t.Errorf("progressLine =\n  %q\nwant\n  %q", got, tc.want)
			}
		})
	}
}

// TestProgressLog: in a log (not a terminal) --wait writes a line for the
// first reading, each change of status and each further tenth done, not
// one per reading; on a terminal it rewrites one line, cut to its width.
func TestProgressLog(t *testing.T) {
	type r struct {
		status eval.Status
		done   int
	}
	run := func(done int) r { return r{eval.ScorecardRunning, done} }
	for _, tc := range []struct {
		name     string
		tty      bool
		width    int
		readings []r
		want     []int // indexes of the readings that get a line
	}{
		{"a line per tenth", false,
			0, []r{{eval.ScorecardQueued, 0}, run(0), run(0), run(100), run(150), run(199), run(200), run(210), run(1100), run(1160), run(1990), {eval.ScorecardSucceeded, 2000}},
			[]int{0, 1, 6, 8, 10, 11}},
		{"a jump over tenths logs once", false, 0, []r{run(0), run(700), run(710), run(1300)}, []int{0, 1, 3}},
		{"the last reading is the first", false, 0, []r{{eval.ScorecardSucceeded, 2000}}, []int{0}},
		{"stopped between tenths", false, 0, []r{run(240), run(250), {eval.ScorecardCancelled, 250}}, []int{0, 2}},
		{"on a terminal, every new reading", true, 0, []r{run(0), run(0), run(1), run(1), run(2)}, []int{0, 2, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, want strings.Builder
			pr := &progress{x: &cli{stderr: &out, tty: tc.tty}}
			for i, rd := range tc.readings {
				// Every reading differs only in its counts and status,
				// not in its clock.
				sc := reading(rd.status, rd.done, 0, 0, 0, 0)
				pr.show(sc)
				if slices.Contains(tc.want, i) {
					if tc.tty {
						want.WriteString("\r" + progressLine(sc) + "\x1b[K")
					} else {
						want.WriteString(progressLine(sc) + "\n")
					}
				}
			}
			if diff := cmp.Diff(strings.Split(want.String(), "\n"), strings.Split(out.String(), "\n")); diff != "" {
				t.Errorf("stderr lines (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("cut to the terminal's width", func(t *testing.T) {
		var out strings.Builder
		pr := &progress{x: &cli{stderr: &out, tty: true, width: func() int { return 40 }}}
		pr.show(reading(eval.ScorecardRunning, 450, 10, 64, 41.3, 11*time.Second))
		if want := "\rsc_x running 450/2000 (22%) 440 passed,\x1b[K"; out.String() != want {
			t.Errorf("stderr %q, want %q (39 columns)", out.String(), want)
		}
	})
}
