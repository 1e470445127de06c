package cli

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/internal/client"
	"svc/internal/domain/eval"
	"svc/internal/domain/gate"
	"svc/internal/domain/registry"
)

// reads is a fake batch whose light read (?view=summary) moves one state
// further on each read; the detail read answers the last state with its
// rows. It counts both kinds of read.
type reads struct {
	mu            sync.Mutex
	states        []*eval.Scorecard
	light, detail int
	noLight       bool // answer 400 to ?view=summary, as an older service would
}

func (b *reads) get(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if r.URL.Query().Get("view") == "summary" {
		if b.noLight {
			writeError(w, http.StatusBadRequest, "BAD_REQUEST", "unknown parameter view")
			return
		}
		i := min(b.light, len(b.states)-1)
		b.light++
		sc := *b.states[i]
		sc.Scorecard = nil
		writeJSONBody(w, 200, sc)
		return
	}
	i := len(b.states) - 1 // after the light reads: the end
	if b.noLight {
		i = min(b.detail, i)
	}
	b.detail++
	writeJSONBody(w, 200, b.states[i])
}

// failing is a reading whose timeline shows the cases that failed.
func failing(status eval.Status, done int, ids ...string) *eval.Scorecard {
	sc := state(status, done, done-len(ids), len(ids))
	for _, id := range ids {
		sc.Steps = append(sc.Steps, eval.Step{Phase: "case", Status: "failed", CaseID: id, Message: "the harness exited with code 3:\nboom"})
	}
	sc.Steps = append(sc.Steps, eval.Step{Phase: "dispatch", Status: "started", Message: "dispatching cases"})
	return sc
}

// TestWaitPollsTheLightRead: --wait reads ?view=summary while the batch
// runs and the detail once, at the end, only for --json; each failing
// case is printed once as soon as a reading shows it; an older service
// that refuses the light read is read in full.
func TestWaitPollsTheLightRead(t *testing.T) {
	final := failing(eval.ScorecardSucceeded, 4, "q2", "q3")
	final.Scorecard = []eval.CaseRow{{CaseID: "q1", Verdict: "pass"}}
	states := []*eval.Scorecard{
		failing(eval.ScorecardRunning, 1),
		failing(eval.ScorecardRunning, 2, "q2"),
		failing(eval.ScorecardRunning, 3, "q2"),
		final,
	}
	for _, tc := range []struct {
		name                string
		noLight, json, tty  bool
		wantLight, wantFull int
		wantErr             string
		wantDetailInStdout  bool
	}{
		{name: "light reads, no detail", wantLight: 4, wantFull: 0,
			wantErr: "sc_w running 1/4 (25%) 1 passed, 0 failed, 1 running\n" +
				"sc_w case q2 failed: the harness exited with code 3: boom\n" +
				"sc_w running 2/4 (50%) 1 passed, 1 failed, 1 running\n" +
				"sc_w running 3/4 (75%) 2 passed, 1 failed, 1 running\n" +
				"sc_w case q3 failed: the harness exited with code 3: boom\n" +
				"sc_w succeeded 4/4 (100%) 2 passed, 2 failed\n" +
				"svc scorecard: sc_w: 2 of 4 case-trials failed (svc scorecard show sc_w --failed)\n"},
		{name: "--json: one detail read at the end", json: true, wantLight: 4, wantFull: 1, wantDetailInStdout: true},
		{name: "an older service: detail reads", noLight: true, wantLight: 0, wantFull: 4},
		{name: "on a terminal, failures above the line", tty: true, wantLight: 4,
			wantErr: "\rsc_w running 1/4 (25%) 1 passed, 0 failed, 1 running\x1b[K" +
				"\rsc_w case q2 failed: the harness exited with code 3: boom\x1b[K\n" +
				"\rsc_w running 1/4 (25%) 1 passed, 0 failed, 1 running\x1b[K" +
				"\rsc_w running 2/4 (50%) 1 passed, 1 failed, 1 running\x1b[K"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &reads{states: states, noLight: tc.noLight}
			api := newFakeAPI(t, map[string]http.HandlerFunc{"GET /scorecards/sc_w": b.get})
			args := []string{"wait", "sc_w"}
			if tc.json {
				args = append(args, "--json")
			}
			out, errOut, code := invocation{env: map[string]string{client.EnvURL: api.srv.URL}, tty: tc.tty}.run(t, "scorecard", RunScorecard, args...)
			if code != exitOK {
				t.Fatalf("exit %d stderr %q", code, errOut)
			}
			b.mu.Lock()
			light, full := b.light, b.detail
			b.mu.Unlock()
			if tc.noLight {
				light = 0 // the refused light reads
			}
			if light != tc.wantLight || full != tc.wantFull {
				t.Errorf("%d light and %d detail reads, want %d and %d", light, full, tc.wantLight, tc.wantFull)
			}
			if tc.wantErr != "" && !strings.HasPrefix(errOut, tc.wantErr) {
				t.Errorf("stderr:\n%q\nwant it to start\n%q", errOut, tc.wantErr)
			}
			if got := strings.Count(errOut, "case q2 failed"); got != 1 {
				t.Errorf("q2's failure shown %d times, want once:\n%s", got, errOut)
			}
			if tc.wantDetailInStdout != strings.Contains(out, `"scorecard":[`) {
				t.Errorf("stdout %q: want the per-case table %v", out, tc.wantDetailInStdout)
			}
		})
	}
}

// TestFailOnDispatchErrors: case-trials that could not be dispatched show
// in the progress line and a final line; --fail-on-dispatch-errors turns
// a batch that succeeded into exit 1.
func TestFailOnDispatchErrors(t *testing.T) {
	sc := state(eval.ScorecardSucceeded, 4, 2, 2)
	sc.Progress.DispatchErrors = 1
	for _, tc := range []struct {
		args []string
		want int
		tail string
	}{
		{[]string{"wait", "sc_w"}, exitOK, "svc scorecard: sc_w: 1 of 4 case-trials could not be dispatched; they count as failed (svc scorecard show sc_w --failed)\n"},
		{[]string{"wait", "sc_w", "--fail-on-dispatch-errors"}, exitVerdict, "(svc scorecard show sc_w --failed); exit 1 for --fail-on-dispatch-errors\n"},
		{[]string{"run", "--dataset", "qa", "--harness", "h", "--wait", "--fail-on-dispatch-errors"}, exitVerdict, "exit 1 for --fail-on-dispatch-errors\n"},
	} {
		api := newFakeAPI(t, map[string]http.HandlerFunc{
			"POST /scorecards":     answer(202, state(eval.ScorecardQueued, 0, 0, 0)),
			"GET /scorecards/sc_w": answer(200, sc),
		})
		_, errOut, code := invocation{env: map[string]string{client.EnvURL: api.srv.URL}}.run(t, "scorecard", RunScorecard, tc.args...)
		if code != tc.want || !strings.HasSuffix(errOut, tc.tail) || !strings.Contains(errOut, "2 failed (1 not dispatched)") {
			t.Errorf("%v: exit %d stderr %q; want %d, the count in the progress line and the tail %q", tc.args, code, errOut, tc.want, tc.tail)
		}
	}
	_, errOut, code := invocation{env: map[string]string{client.EnvURL: "http://127.0.0.1:1"}}.run(t, "scorecard", RunScorecard, "run", "--dataset", "qa", "--harness", "h", "--fail-on-dispatch-errors")
	if code != exitProblem || !strings.Contains(errOut, "--fail-on-dispatch-errors goes with --wait") {
		t.Errorf("without --wait: exit %d stderr %q", code, errOut)
	}
}

// TestScorecardScoreWait: score --wait exits 0 when the pass added a
// revision and 1, with the timeline's reason, when it did not.
func TestScorecardScoreWait(t *testing.T) {
	before := state(eval.ScorecardSucceeded, 4, 4, 0)
	before.Scoring = []eval.ScoringRevision{{Revision: 1}}
	inFlight := *before
	inFlight.ScoringInFlight = "score_1"
	scored := *before
	scored.Scoring = []eval.ScoringRevision{{Revision: 1}, {Revision: 2}}
	failedPass := *before
	failedPass.Steps = []eval.Step{{Phase: "judges", Status: "failed", Message: "scoring pass score_1 added no revision: judge tone@1.0.0 is not registered"}}
	for _, tc := range []struct {
		name    string
		end     *eval.Scorecard
		want    int
		wantErr string
	}{
		{"a new revision", &scored, exitOK, "svc scorecard: sc_w scored: revision 2 in "},
		{"no revision", &failedPass, exitVerdict, "svc scorecard: sc_w: the scoring pass added no revision: scoring pass score_1 added no revision: judge tone@1.0.0 is not registered\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &batchStates{states: []*eval.Scorecard{before, &inFlight, &inFlight, tc.end}}
			api := newFakeAPI(t, map[string]http.HandlerFunc{
				"GET /scorecards/sc_w":        b.get,
				"POST /scorecards/sc_w/score": answer(202, &inFlight),
			})
			out, errOut, code := invocation{env: map[string]string{client.EnvURL: api.srv.URL}}.run(t, "scorecard", RunScorecard, "score", "sc_w", "--judge", "tone@1.0.0", "--judge", "len", "--wait")
			if code != tc.want || out != "sc_w\n" || !strings.Contains(errOut, tc.wantErr) {
				t.Errorf("exit %d stdout %q stderr %q; want %d and %q", code, out, errOut, tc.want, tc.wantErr)
			}
			if got, want := string(api.last("POST", "/scorecards/sc_w/score").body), `{"judges":[{"id":"tone","version":"1.0.0"},{"id":"len"}]}`; got != want {
				t.Errorf("score body %s, want %s", got, want)
			}
		})
	}
}

// TestScorecardList prints the batches as a table, and the next page's
// cursor on stderr.
func TestScorecardList(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 30, 0, 0, time.UTC)
	a := state(eval.ScorecardSucceeded, 4, 3, 1)
	a.Dataset, a.Harness, a.Trials, a.CreatedAt = registry.Ref{ID: "qa", Version: "1.0.0"}, registry.Ref{ID: "agent", Version: "1.2.0"}, 1, at
	a.Summary = map[string]eval.MetricSummary{"casePass": {Count: 4, Mean: 0.75, PassRate: ptr(0.75)}}
	b := state(eval.ScorecardRunning, 1, 1, 0)
	b.ID, b.Dataset, b.Harness, b.Trials, b.CreatedAt = "sc_v", registry.Ref{ID: "qa", Version: "1.0.0"}, registry.Ref{ID: "agent", Version: "1.3.0-rc.1"}, 3, at.Add(time.Hour)
	api := newFakeAPI(t, map[string]http.HandlerFunc{"GET /scorecards": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Svc-Next-Cursor", "c2")
		writeJSONBody(w, 200, []*eval.Scorecard{b, a})
	}})
	out, errOut, code := invocation{env: map[string]string{client.EnvURL: api.srv.URL}}.run(t, "scorecard", RunScorecard, "list", "--dataset", "qa", "--status", "succeeded,running", "--limit", "2")
	if code != 0 || errOut != "more: svc scorecard list --cursor c2\n" {
		t.Errorf("exit %d stderr %q", code, errOut)
	}
	golden(t, "scorecard_list.golden", out)
	if got := api.requests()[0]; got.path != "/scorecards" {
		t.Errorf("path %s", got.path)
	}
}

// TestEvalFileExample: the eval file of docs/cli.md reads, its fields
// land in the submit request, and an unknown field is refused.
func TestEvalFileExample(t *testing.T) {
	doc, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```yaml\n(# eval.yaml.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/cli.md has no ```yaml block starting # eval.yaml")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "eval.yaml")
	os.WriteFile(path, m[1], 0o644)
	f, err := readEvalFile(path, env{"SVC_BASELINE": "sc_base"}.get)
	if err != nil {
		t.Fatal(err)
	}
	if f.Dataset.File != filepath.Join(dir, "datasets/qa.csv") || f.Dataset.Version != "1.4.0" || f.Harness.File != filepath.Join(dir, "harness.yaml") {
		t.Errorf("dataset %+v, harness %+v: want files relative to the eval file", f.Dataset, f.Harness)
	}
	if len(f.Judges) != 2 || f.Judges[0].File != filepath.Join(dir, "judges/tone.py") || f.Judges[0].TimeoutSec != 30 || f.Judges[1].Ref != "length@2.0.0" {
		t.Errorf("judges %+v", f.Judges)
	}
	if f.Baseline != "sc_base" || !f.FailOnDispatchErrors || f.Timeout != "60m" {
		t.Errorf("baseline %q, failOnDispatchErrors %v, timeout %q", f.Baseline, f.FailOnDispatchErrors, f.Timeout)
	}
	want := gate.GatePolicy{Alpha: 0.05, MaxRegressions: ptr(0), MinDelta: 0.02, AllowConfounds: []string{"runtime"}}
	if diff := cmp.Diff(&want, f.Gate); diff != "" {
		t.Errorf("gate policy (-want +got):\n%s", diff)
	}
	req, err := f.submitRequest()
	if err != nil {
		t.Fatal(err)
	}
	if got := mustJSON(req); got != `{"dataset":{"id":"","version":""},"harness":{"id":"","version":""},"concurrency":8,"cases":{"tags":["smoke"]},`+
		`"graders":[{"id":"exact"},{"id":"used-search","kind":"tool_calls","min":1,"name":"search"}],"criticalCases":[{"prefix":"billing/"}],"trials":3}` {
		t.Errorf("submit request %s", got)
	}

	for _, bad := range []struct{ content, want string }{
		{"dataset: qa@1\nharness: h@1\ntrails: 3\n", `unknown field "trails"`},
		{"dataset: qa@1\nharness: h@1\ngate: {allowConfound: [runtime]}\n", `unknown field "allowConfound"`},
		{"dataset: {file: a.csv, ref: qa@1}\nharness: h@1\n", "give one"},
		{"dataset: qa@1\nharness: {}\n", "needs a ref (id@version) or a file"},
		{"dataset: qa@1\nharness: h@1\ntimeout: soon\n", `timeout "soon" is not a positive duration`},
	} {
		os.WriteFile(path, []byte(bad.content), 0o644)
		if _, err := readEvalFile(path, os.Getenv); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: error %v, want %q", bad.content, err, bad.want)
		}
	}
}

type env map[string]string

func (e env) get(k string) string { return e[k] }
