package e2e

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite" // the test reaches into svc dev's SQLite file to inject store faults

	"svc/internal/domain/eval"
	"svc/internal/testing/testwait"
)

// Spec rules that held only in part (issue 29), each checked through the
// real binary.

// rulesScorecard polls a batch until it is terminal (and its finish has
// written it) and returns it.
func rulesScorecard(t *testing.T, base, id string, d time.Duration) eval.Scorecard {
	t.Helper()
	var sc eval.Scorecard
	testwait.Until(t, d, "batch "+id+" to end", func() bool {
		sc = eval.Scorecard{}
		if code := call(t, "GET", base+"/scorecards/"+id, nil, &sc); code != 200 {
			t.Fatalf("GET /scorecards/%s = %d", id, code)
		}
		return eval.ScorecardTerminal(sc.Status) && sc.FinishedAt != nil
	})
	return sc
}

// rulesSubmit submits a batch of dataset@1.0.0 on harness@1.0.0 (body
// adds to it) and returns its id.
func rulesSubmit(t *testing.T, base, dataset, harness string, body map[string]any) string {
	t.Helper()
	req := map[string]any{"dataset": map[string]string{"id": dataset, "version": "1.0.0"},
		"harness": map[string]string{"id": harness, "version": "1.0.0"}, "concurrency": 4}
	for k, v := range body {
		req[k] = v
	}
	var sc eval.Scorecard
	if code := call(t, "POST", base+"/scorecards", req, &sc); code != 202 || sc.ID == "" {
		t.Fatalf("POST /scorecards %s on %s = %d %+v, want 202 with an id", dataset, harness, code, sc)
	}
	return sc.ID
}

// rulesChild returns the child run of batch id for caseID, read in full.
func rulesChild(t *testing.T, base, id, caseID string) eval.Run {
	t.Helper()
	for _, c := range listChildren(t, base, id) {
		if c.CaseID != caseID {
			continue
		}
		var run eval.Run
		if code := call(t, "GET", base+"/runs/"+c.ID, nil, &run); code != 200 {
			t.Fatalf("GET /runs/%s = %d", c.ID, code)
		}
		return run
	}
	t.Fatalf("batch %s has no child run for case %s", id, caseID)
	return eval.Run{}
}

func rulesRegister(t *testing.T, base, path string, body any) {
	t.Helper()
	var out map[string]any
	if code := call(t, "POST", base+path, body, &out); code != 201 {
		t.Fatalf("POST %s = %d %v, want 201", path, code, out)
	}
}

// rulesCases are n cases id1..idn that expect "ok", graded exactly.
func rulesCases(id string, n int) []map[string]any {
	var cases []map[string]any
	for i := 1; i <= n; i++ {
		cases = append(cases, map[string]any{"id": fmt.Sprintf("%s%d", id, i), "task": "say ok", "expected": "ok",
			"graders": []map[string]any{{"id": "exact"}}})
	}
	return cases
}

// TestBatchWithSomeDispatchFailuresSucceeds is the other side of
// TestBatchThatDispatchedNothingFails (spec §7): a harness whose command
// comes with each case's files cannot start for the one case whose files
// lack it. That case fails, with an error event in its trace and a
// pass:false score saying why; the batch succeeds, measured on the others,
// and `svc scorecard wait --fail-on-dispatch-errors` turns the dispatch
// error into exit 1 for those who want it.
func TestBatchWithSomeDispatchFailuresSucceeds(t *testing.T) {
	svc := start(t, devEnv(filepath.Join(t.TempDir(), "data")), true, "dev")
	rulesRegister(t, svc.URL, "/harnesses", map[string]any{"id": "bring-your-own", "version": "1.0.0", "kind": "process",
		"command": []string{"./agent.sh"}})
	agent := map[string]any{"kind": "repo", "source": map[string]any{"files": map[string]any{"agent.sh": "#!/bin/sh\necho ok\n"}}}
	noAgent := map[string]any{"kind": "repo", "source": map[string]any{"files": map[string]any{"README.md": "no agent here\n"}}}
	cases := rulesCases("ok", 2)
	for _, c := range cases {
		c["env"] = agent
	}
	cases = append(cases, map[string]any{"id": "missing", "task": "say ok", "expected": "ok",
		"graders": []map[string]any{{"id": "exact"}}, "env": noAgent})
	rulesRegister(t, svc.URL, "/datasets", map[string]any{"id": "some-dispatch", "version": "1.0.0", "cases": cases})

	out, errOut, code := runCLI(t, svc.URL, "scorecard", "run", "--dataset", "some-dispatch@1.0.0", "--harness", "bring-your-own@1.0.0",
		"--concurrency", "3", "--wait", "--json")
	if code != 0 {
		t.Fatalf("svc scorecard run --wait exit %d, want 0 (the batch succeeded)\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	var sc eval.Scorecard
	if err := json.Unmarshal([]byte(out), &sc); err != nil {
		t.Fatalf("svc scorecard run --json printed %q: %v", out, err)
	}
	if sc.Status != eval.ScorecardSucceeded || sc.Error != nil {
		t.Fatalf("batch ended %s with error %+v, want succeeded: a case that could not be dispatched fails that case only", sc.Status, sc.Error)
	}
	if p := sc.Progress; p.Done != 3 || p.Passed != 2 || p.Failed != 1 || p.DispatchErrors != 1 {
		t.Errorf("progress %+v, want 3 done, 2 passed, 1 failed, 1 dispatch error", p)
	}
	if len(sc.Scoring) != 1 || sc.AnalysisRef == "" {
		t.Errorf("scoring %+v analysisRef %q, want revision 1 and its analysis", sc.Scoring, sc.AnalysisRef)
	}

	for _, id := range []string{"ok1", "ok2"} {
		if run := rulesChild(t, svc.URL, sc.ID, id); run.Status != eval.StatusSucceeded || run.Result == nil || !run.Result.Pass {
			t.Errorf("case %s ended %s (result %+v), want succeeded and passing", id, run.Status, run.Result)
		}
	}
	run := rulesChild(t, svc.URL, sc.ID, "missing")
	if run.Status != eval.StatusFailed || run.Error == nil || run.Error.Code != eval.CodeDispatch {
		t.Fatalf("case missing ended %s with error %+v, want failed with %s", run.Status, run.Error, eval.CodeDispatch)
	}
	const why = "not found in the job's working directory"
	if !strings.Contains(run.Error.Message, "./agent.sh") || !strings.Contains(run.Error.Message, why) {
		t.Errorf("case missing's error %q does not say that ./agent.sh is %s", run.Error.Message, why)
	}
	if run.Result == nil {
		t.Fatal("case missing has no result")
	}
	if !slices.ContainsFunc(run.Result.Trace, func(e eval.TraceEvent) bool {
		return e.Kind == eval.EventError && e.Code == eval.CodeDispatch && strings.Contains(e.Message, why)
	}) {
		t.Errorf("case missing's trace %+v has no error event with the reason", run.Result.Trace)
	}
	if !slices.ContainsFunc(run.Result.Scores, func(s eval.Score) bool {
		return s.GraderID == "dispatch" && s.Pass != nil && !*s.Pass && strings.Contains(s.Detail, why)
	}) {
		t.Errorf("case missing's scores %+v have no pass:false dispatch score with the reason", run.Result.Scores)
	}

	if _, errOut, code := runCLI(t, svc.URL, "scorecard", "wait", sc.ID, "--fail-on-dispatch-errors"); code != 1 {
		t.Errorf("svc scorecard wait --fail-on-dispatch-errors exit %d, want 1 (one case not dispatched)\nstderr: %s", code, errOut)
	}
}

// rulesFaults opens svc dev's SQLite store beside the running service, to
// inject a store failure the way a full disk or a broken table would: a
// trigger that refuses a write.
func rulesFaults(t *testing.T, dataDir string, triggers ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dataDir, "svc.db")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, tr := range triggers {
		if _, err := db.ExecContext(t.Context(), tr); err != nil {
			t.Fatalf("injecting %s: %v", tr, err)
		}
	}
}

// TestErrorPhaseOffloadAndPersist: a batch whose analysis cannot be stored
// ends failed in phase offload, and one whose case result, or final
// record, cannot be written ends failed in phase persist (spec §2.3); the
// partial scorecard is kept, and the message says what failed without the
// store's internal error. The faults are real: the SQLite store of
// `svc dev` refuses those writes (triggers added while it runs).
func TestErrorPhaseOffloadAndPersist(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	svc := start(t, devEnv(dataDir), true, "dev")
	rulesRegister(t, svc.URL, "/harnesses", map[string]any{"id": "echo", "version": "1.0.0", "kind": "process", "command": []string{"/bin/echo", "ok"}})
	for _, ds := range []struct {
		id string
		n  int
	}{{"offload", 2}, {"persist", 3}, {"final", 1}} {
		rulesRegister(t, svc.URL, "/datasets", map[string]any{"id": ds.id, "version": "1.0.0", "cases": rulesCases(ds.id[:1], ds.n)})
	}
	const refused = "injected fault"
	rulesFaults(t, dataDir,
		// The analysis of the offload batch cannot be stored.
		`CREATE TRIGGER inject_offload BEFORE INSERT ON analyses
		 WHEN NEW.scorecard_id IN (SELECT id FROM scorecards WHERE dataset_id = 'offload')
		 BEGIN SELECT RAISE(ABORT, '`+refused+`: the analysis store is full'); END`,
		// Case p2 runs, but its result cannot be written.
		`CREATE TRIGGER inject_persist_update BEFORE UPDATE ON runs
		 WHEN NEW.case_id = 'p2' AND NEW.status IN ('succeeded', 'failed')
		 BEGIN SELECT RAISE(ABORT, '`+refused+`: the runs table is full'); END`,
		`CREATE TRIGGER inject_persist_insert BEFORE INSERT ON runs
		 WHEN NEW.case_id = 'p2' AND NEW.status IN ('succeeded', 'failed')
		 BEGIN SELECT RAISE(ABORT, '`+refused+`: the runs table is full'); END`,
		// The final batch's record cannot be written succeeded.
		`CREATE TRIGGER inject_final BEFORE UPDATE ON scorecards
		 WHEN NEW.dataset_id = 'final' AND NEW.status = 'succeeded'
		 BEGIN SELECT RAISE(ABORT, '`+refused+`: the scorecards table is full'); END`,
	)
	offload := rulesSubmit(t, svc.URL, "offload", "echo", nil)
	persist := rulesSubmit(t, svc.URL, "persist", "echo", nil)
	final := rulesSubmit(t, svc.URL, "final", "echo", nil)

	internal := func(name, msg string) {
		t.Helper()
		t.Logf("%s: error.message %q", name, msg)
		for _, leak := range []string{refused, "sqlite", "PutRun(", "PutAnalysis(", "activity error", "(ctx"} {
			if strings.Contains(msg, leak) {
				t.Errorf("%s: error message %q carries the internal %q", name, msg, leak)
			}
		}
	}

	t.Run("offload", func(t *testing.T) {
		sc := rulesScorecard(t, svc.URL, offload, 3*time.Minute)
		if sc.Status != eval.ScorecardFailed || sc.Error == nil || sc.Error.Phase != eval.PhaseOffload {
			t.Fatalf("batch ended %s with error %+v, want failed in phase offload", sc.Status, sc.Error)
		}
		if !strings.Contains(sc.Error.Message, "analysis") || !strings.Contains(sc.Error.Message, "could not be stored") {
			t.Errorf("error message %q does not say the analysis could not be stored", sc.Error.Message)
		}
		internal("offload", sc.Error.Message)
		// The partial scorecard is kept; no revision points at an analysis
		// that does not exist.
		if len(sc.Scoring) != 0 || sc.AnalysisRef != "" {
			t.Errorf("scoring %+v analysisRef %q, want neither", sc.Scoring, sc.AnalysisRef)
		}
		if p := sc.Progress; p.Done != 2 || p.Passed != 2 || len(sc.RunIDs) != 2 || len(sc.Summary) == 0 {
			t.Errorf("progress %+v, %d run ids, summary %v: want the two cases' results kept", p, len(sc.RunIDs), sc.Summary)
		}
		if code := call(t, "GET", svc.URL+"/scorecards/"+offload+"/analysis", nil, nil); code != 404 {
			t.Errorf("GET /scorecards/%s/analysis = %d, want 404", offload, code)
		}
	})

	t.Run("persist a case's result", func(t *testing.T) {
		sc := rulesScorecard(t, svc.URL, persist, 3*time.Minute)
		if sc.Status != eval.ScorecardFailed || sc.Error == nil || sc.Error.Phase != eval.PhasePersist {
			t.Fatalf("batch ended %s with error %+v, want failed in phase persist", sc.Status, sc.Error)
		}
		if !strings.Contains(sc.Error.Message, "case p2") || !strings.Contains(sc.Error.Message, "could not be recorded") {
			t.Errorf("error message %q does not say case p2's result could not be recorded", sc.Error.Message)
		}
		internal("persist", sc.Error.Message)
		for _, id := range []string{"p1", "p3"} {
			if run := rulesChild(t, svc.URL, persist, id); run.Status != eval.StatusSucceeded {
				t.Errorf("case %s ended %s, want succeeded (kept)", id, run.Status)
			}
		}
	})

	t.Run("persist the final record", func(t *testing.T) {
		// Only the failure can be written. Its analysis was stored, each
		// attempt the same bundle (a second one would be phase offload).
		sc := rulesScorecard(t, svc.URL, final, 3*time.Minute)
		if sc.Status != eval.ScorecardFailed || sc.Error == nil || sc.Error.Phase != eval.PhasePersist {
			t.Fatalf("batch ended %s with error %+v, want failed in phase persist", sc.Status, sc.Error)
		}
		if !strings.Contains(sc.Error.Message, "final record could not be written") {
			t.Errorf("error message %q does not say the final record could not be written", sc.Error.Message)
		}
		internal("final", sc.Error.Message)
		if run := rulesChild(t, svc.URL, final, "f1"); run.Status != eval.StatusSucceeded {
			t.Errorf("case f1 ended %s, want succeeded (kept)", run.Status)
		}
		if p := sc.Progress; p.Done != 1 || p.Passed != 1 || len(sc.Summary) == 0 {
			t.Errorf("progress %+v summary %v, want the case's result kept", p, sc.Summary)
		}
	})
}

// TestAttestationValues: provenance.attestation takes only the two values
// of spec §2.2, managed for a case this service ran and self_reported for
// one a self-hosted runner ran; a trace this service did not run (pushed
// or pulled through the ingest routes) is self_reported with
// provenance.source ingested.
func TestAttestationValues(t *testing.T) {
	svc := start(t, devEnv(t.TempDir(), "SVC_LOCAL_ISOLATION=none"), true, "dev")
	rulesRegister(t, svc.URL, "/harnesses", map[string]any{"id": "echo", "version": "1.0.0", "kind": "process", "command": []string{"/bin/echo", "ok"}})
	rulesRegister(t, svc.URL, "/datasets", map[string]any{"id": "att", "version": "1.0.0", "cases": rulesCases("a", 1)})
	rulesRegister(t, svc.URL, "/runtimes", map[string]any{"id": "own-boxes", "version": "1", "kind": "runner"})
	var key struct {
		RunnerKey string `json:"runnerKey"`
	}
	if code := call(t, "POST", svc.URL+"/runner-keys", map[string]string{"label": "e2e"}, &key); code != 201 {
		t.Fatalf("POST /runner-keys = %d", code)
	}
	runner := start(t, []string{"SVC_RUNNER_KEY=" + key.RunnerKey, "SVC_DATA_DIR=" + t.TempDir(), "SVC_LOCAL_ISOLATION=none"}, false,
		"runner", "--url", svc.URL, "--workers", "1", "--heartbeat", "1s", "--name", "attest")
	testwait.Until(t, time.Minute, "the runner to start", func() bool { return strings.Contains(runner.Stdout(), "workers leasing") })

	// provenance reads a child's provenance as the API sends it.
	provenance := func(id string) map[string]any {
		t.Helper()
		sc := rulesScorecard(t, svc.URL, id, 3*time.Minute)
		if sc.Status != eval.ScorecardSucceeded {
			t.Fatalf("batch %s ended %s (%+v), want succeeded", id, sc.Status, sc.Error)
		}
		run := rulesChild(t, svc.URL, id, "a1")
		var raw struct {
			Result struct {
				Provenance map[string]any `json:"provenance"`
			} `json:"result"`
		}
		if code := call(t, "GET", svc.URL+"/runs/"+run.ID, nil, &raw); code != 200 {
			t.Fatalf("GET /runs/%s = %d", run.ID, code)
		}
		return raw.Result.Provenance
	}

	managed := rulesSubmit(t, svc.URL, "att", "echo", nil)
	selfHosted := rulesSubmit(t, svc.URL, "att", "echo", map[string]any{"runtime": "own-boxes"})
	var pushed eval.Scorecard
	if code := call(t, "POST", svc.URL+"/scorecards/ingest", map[string]any{
		"dataset": map[string]string{"id": "att", "version": "1.0.0"}, "harness": map[string]string{"id": "echo", "version": "1.0.0"},
		"traces": []map[string]any{{"caseId": "a1", "trace": []map[string]any{{"kind": "message", "role": "assistant", "content": "ok"}}}},
	}, &pushed); code != 202 {
		t.Fatalf("POST /scorecards/ingest = %d %+v, want 202", code, pushed)
	}
	managedRun := ""
	for _, tc := range []struct {
		name, id    string
		attestation string
		source      any
	}{
		{"managed", managed, eval.AttestationManaged, nil},
		{"runner", selfHosted, eval.AttestationSelfReported, nil},
		{"ingested (push)", pushed.ID, eval.AttestationSelfReported, eval.SourceIngested},
	} {
		p := provenance(tc.id)
		if p["attestation"] != tc.attestation || p["source"] != tc.source {
			t.Errorf("%s: provenance %v, want attestation %q and source %v", tc.name, p, tc.attestation, tc.source)
		}
		if tc.name == "managed" {
			managedRun = rulesChild(t, svc.URL, tc.id, "a1").ID
		}
	}

	// A pull from svc's own ledger is ingested too.
	var pulled eval.Scorecard
	if code := call(t, "POST", svc.URL+"/scorecards/ingest/pull", map[string]any{
		"dataset": map[string]string{"id": "att", "version": "1.0.0"}, "harness": map[string]string{"id": "echo", "version": "1.0.0"},
		"source": map[string]string{"name": "svc"}, "runs": []map[string]string{{"caseId": "a1", "runId": managedRun}},
	}, &pulled); code != 202 {
		t.Fatalf("POST /scorecards/ingest/pull = %d %+v, want 202", code, pulled)
	}
	sc := rulesScorecard(t, svc.URL, pulled.ID, 3*time.Minute)
	run := rulesChild(t, svc.URL, sc.ID, "a1")
	if p := run.Result.Provenance; p == nil || p.Attestation != eval.AttestationSelfReported || p.Source != eval.SourceIngested {
		t.Errorf("ingested (pull): provenance %+v, want attestation self_reported and source ingested", p)
	}
}

// TestDeleteLatestVersionIs404: deleting `latest` (or a tag) names no
// exact version, so it is 404 (spec §4.3 names 404 or 403), with a message
// saying an exact version is required; the exact version deletes.
func TestDeleteLatestVersionIs404(t *testing.T) {
	svc := start(t, devEnv(t.TempDir()), true, "dev")
	rulesRegister(t, svc.URL, "/datasets", map[string]any{"id": "qa", "version": "1.0.0", "cases": rulesCases("c", 1)})
	if code := call(t, "PUT", svc.URL+"/datasets/qa/versions/1.0.0/tags", []string{"stable"}, nil); code != 200 {
		t.Fatalf("PUT tags = %d, want 200", code)
	}
	for _, v := range []string{"latest", "stable"} {
		var body struct {
			Error struct{ Code, Message string }
		}
		code := call(t, "DELETE", svc.URL+"/datasets/qa/versions/"+v, nil, &body)
		if code != 404 || body.Error.Code != "NOT_FOUND" || !strings.Contains(body.Error.Message, "exact version") {
			t.Errorf("DELETE /datasets/qa/versions/%s = %d %+v, want 404 NOT_FOUND saying an exact version is required", v, code, body.Error)
		}
	}
	if code := call(t, "GET", svc.URL+"/datasets/qa/versions/1.0.0", nil, nil); code != 200 {
		t.Errorf("GET qa@1.0.0 after the refused deletes = %d, want 200 (still there)", code)
	}
	if code := call(t, "DELETE", svc.URL+"/datasets/qa/versions/1.0.0", nil, nil); code != 204 {
		t.Errorf("DELETE /datasets/qa/versions/1.0.0 = %d, want 204", code)
	}
}

// TestNotificationLinksResolve: the notifications a run and a scorecard
// leave their creator carry the resource type and id, and the service's
// href (spec §6) leads to their pages in the web view.
func TestNotificationLinksResolve(t *testing.T) {
	svc := start(t, devEnv(t.TempDir()), true, "dev")
	rulesRegister(t, svc.URL, "/harnesses", map[string]any{"id": "echo", "version": "1.0.0", "kind": "process", "command": []string{"/bin/echo", "ok"}})
	rulesRegister(t, svc.URL, "/datasets", map[string]any{"id": "qa", "version": "1.0.0", "cases": rulesCases("c", 1)})
	batch := rulesSubmit(t, svc.URL, "qa", "echo", nil)
	var run eval.Run
	if code := call(t, "POST", svc.URL+"/runs", map[string]any{"harness": map[string]string{"id": "echo", "version": "1.0.0"},
		"case": map[string]any{"id": "single", "task": "say ok"}}, &run); code != 202 || run.ID == "" {
		t.Fatalf("POST /runs = %d %+v, want 202 with an id", code, run)
	}
	rulesScorecard(t, svc.URL, batch, 2*time.Minute)

	type note struct {
		Kind string
		Link eval.NotificationLink
		Href string
	}
	var notes []note
	testwait.Until(t, time.Minute, "both notifications", func() bool {
		notes = nil
		if code := call(t, "GET", svc.URL+"/notifications", nil, &notes); code != 200 {
			t.Fatalf("GET /notifications = %d", code)
		}
		return len(notes) >= 2
	})
	want := map[string]note{
		eval.NotifyRunCompleted:       {Link: eval.NotificationLink{ResourceType: "run", ResourceID: run.ID, RunID: run.ID}, Href: "/ui/#/runs/" + run.ID},
		eval.NotifyScorecardCompleted: {Link: eval.NotificationLink{ResourceType: "scorecard", ResourceID: batch, ScorecardID: batch}, Href: "/ui/#/scorecards/" + batch},
	}
	for _, n := range notes {
		w, ok := want[n.Kind]
		if !ok {
			continue
		}
		delete(want, n.Kind)
		if n.Link != w.Link || n.Href != w.Href {
			t.Errorf("%s: link %+v href %q, want %+v and %q", n.Kind, n.Link, n.Href, w.Link, w.Href)
		}
		// The address is the web view's.
		page, _, _ := strings.Cut(n.Href, "#")
		if code := call(t, "GET", svc.URL+page, nil, nil); code != 200 {
			t.Errorf("GET %s = %d, want the web view", page, code)
		}
	}
	for kind := range want {
		t.Errorf("no %s notification in %+v", kind, notes)
	}
}
