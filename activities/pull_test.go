package activities

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
	"svc/internal/domain/trace"
	"svc/internal/integrations/pull"
	"svc/internal/platform/secrets"
	"svc/internal/service/traces"
	"svc/store"
	"svc/store/records"
	"svc/store/sqlite/sqlitetest"
)

// The case activity of a pulled batch's child run, end to end on a real
// SQLite store against a loopback server answering Langfuse's documented
// public API with the recorded fixture: the trace is fetched with the
// credential of the workspace secret, sealed in the ledger with source
// langfuse under the child run, and graded as an ingested trace.

const pullKey = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="

func langfuseServer(t *testing.T, credential string) *httptest.Server {
	t.Helper()
	trace, err := os.ReadFile(filepath.Join("..", "internal", "integrations", "pull", "testdata", "langfuse_trace.json"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u+":"+p != credential {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"message":"Invalid credentials. Confirm that you've configured the correct host."}`))
			return
		}
		if r.URL.Path != "/api/public/traces/lf-trace-1" {
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"message":"Trace not found"}`))
			return
		}
		w.Write(trace)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// pulledRun creates a pulled batch's child run of case caseID with plan.
func pulledRun(t *testing.T, st store.Store, ws, caseID string, plan pull.Plan) eval.Run {
	t.Helper()
	ctx := t.Context()
	sc := eval.Scorecard{ID: "sc_pull_" + caseID, Tenant: ws, Kind: eval.KindScorecard, Status: eval.ScorecardRunning,
		Dataset: registry.Ref{ID: eval.IDTraces, Version: "abc"}, Harness: registry.Ref{ID: eval.IDTraces, Version: "abc"},
		CreatedAt: progressT0, UpdatedAt: progressT0, Trials: 1}
	row, err := records.ScorecardRow(sc, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateScorecard(ctx, row); err != nil {
		t.Fatal(err)
	}
	canonical := true
	run := eval.Run{ID: eval.ChildRunID(ws, sc.ID, caseID, 0), Tenant: ws, Harness: sc.Harness, CaseID: caseID,
		Status: eval.StatusQueued, CreatedAt: progressT0, UpdatedAt: progressT0, Kind: eval.KindEval, Trigger: eval.TriggerScorecard,
		Origin: &eval.Origin{Source: pull.OriginSource}, ParentScorecardID: sc.ID, Canonical: &canonical, Case: &registry.EvalCase{ID: caseID}}
	rr, err := records.Row(run)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateRun(ctx, rr); err != nil {
		t.Fatal(err)
	}
	doc, _ := json.Marshal(plan)
	if err := st.PutTracePulls(ctx, []store.TracePull{{Workspace: ws, RunID: run.ID, ScorecardID: sc.ID, CreatedAt: progressT0, Doc: doc}}); err != nil {
		t.Fatal(err)
	}
	return run
}

func pullActivities(t *testing.T, st store.Store, ws, credential string) *Activities {
	t.Helper()
	sealer, err := secrets.NewSealer(pullKey)
	if err != nil {
		t.Fatal(err)
	}
	ct, err := sealer.Seal(ws, "lf-key", []byte(credential))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.PutSecret(t.Context(), store.Secret{Workspace: ws, Name: "lf-key", Ciphertext: ct, AllowedHosts: []string{"127.0.0.1"}, UpdatedAt: progressT0}); err != nil {
		t.Fatal(err)
	}
	guard, err := pull.NewGuard("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return &Activities{Store: st, Sealer: sealer, Host: "w1", Logger: slog.New(slog.DiscardHandler),
		TraceSources: &traces.Sources{Store: st, Sealer: sealer, Guard: guard},
		Now:          func() time.Time { return progressT0.Add(time.Minute) }}
}

func finished(t *testing.T, st store.Store, ws, id string) eval.Run {
	t.Helper()
	row, err := st.GetRun(t.Context(), ws, id)
	if err != nil {
		t.Fatal(err)
	}
	run, err := records.FromRow(row)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func TestPulledRunIsFetchedSealedAndGraded(t *testing.T) {
	st := sqlitetest.New(t)
	const ws, cred = "acme", "pk-lf-1:sk-lf-secret"
	srv := langfuseServer(t, cred)
	a := pullActivities(t, st, ws, cred)
	run := pulledRun(t, st, ws, "even1", pull.Plan{Name: "lf", RunID: "lf-trace-1",
		Source: pull.Config{Kind: pull.KindLangfuse, Endpoint: srv.URL, AuthSecret: "lf-key"}})

	status, err := a.DispatchRun(t.Context(), RunRef{Workspace: ws, RunID: run.ID})
	if err != nil {
		t.Fatalf("DispatchRun: %v", err)
	}
	if status.Status != string(eval.StatusSucceeded) {
		t.Fatalf("status %s, want succeeded", status.Status)
	}
	tr, err := st.GetTrajectory(t.Context(), ws, run.ID)
	if err != nil {
		t.Fatalf("the pulled trace is not sealed: %v", err)
	}
	if tr.Source != pull.KindLangfuse || tr.EventCount != 4 {
		t.Errorf("trajectory: source %q, %d events; want langfuse, 4", tr.Source, tr.EventCount)
	}
	got := finished(t, st, ws, run.ID)
	res := got.Result
	if res == nil || res.Provenance == nil || !res.Provenance.Ingested() || res.Provenance.Attestation != eval.AttestationSelfReported {
		t.Fatalf("result %+v: want an ingested result", res)
	}
	if res.Evidence.FinalAnswer != "4" || len(res.Evidence.ToolCalls) != 1 || res.Usage.InputTokens != 812 {
		t.Errorf("evidence %+v, usage %+v: want answer 4, one tool call, 812 input tokens", res.Evidence, res.Usage)
	}
	if len(res.Scores) == 0 {
		t.Errorf("no scores: the default ingest graders did not grade the pulled trace")
	}
	// Again: a terminal run is not fetched twice.
	srv.Close()
	if st2, err := a.DispatchRun(t.Context(), RunRef{Workspace: ws, RunID: run.ID}); err != nil || st2.Status != string(eval.StatusSucceeded) {
		t.Errorf("second dispatch: %v, %v", st2, err)
	}
}

func TestPulledRunFailsItsCaseWithTheReason(t *testing.T) {
	st := sqlitetest.New(t)
	const ws, cred = "acme", "pk-lf-1:sk-lf-secret"
	srv := langfuseServer(t, cred)
	for _, tc := range []struct {
		name, caseID, secretValue, runID, want string
	}{
		{"unknown trace", "c1", cred, "nope", "not found"},
		{"wrong credential", "c2", "pk-lf-1:sk-lf-WRONG", "lf-trace-1", `check the credential in workspace secret "lf-key"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := pullActivities(t, st, ws, tc.secretValue)
			run := pulledRun(t, st, ws, tc.caseID, pull.Plan{Name: "lf", RunID: tc.runID,
				Source: pull.Config{Kind: pull.KindLangfuse, Endpoint: srv.URL, AuthSecret: "lf-key"}})
			status, err := a.DispatchRun(t.Context(), RunRef{Workspace: ws, RunID: run.ID})
			if err != nil {
				t.Fatalf("DispatchRun: %v (a platform's refusal fails the case, not the activity)", err)
			}
			got := finished(t, st, ws, run.ID)
			if status.Status != string(eval.StatusFailed) || got.Error == nil || !strings.Contains(got.Error.Message, tc.want) {
				t.Fatalf("run %s, error %+v: want failed saying %q", status.Status, got.Error, tc.want)
			}
			doc, _ := json.Marshal(got)
			if strings.Contains(string(doc), "sk-lf") {
				t.Errorf("the run record holds the credential: %s", doc)
			}
		})
	}
}

func TestPulledFromTheLedger(t *testing.T) {
	st := sqlitetest.New(t)
	const ws = "acme"
	events := []eval.TraceEvent{{Kind: eval.EventToolCall, Name: "lookup"}, {Kind: eval.EventMessage, Role: "assistant", Content: "right"}}
	sealed, digest, err := trace.SealEvents(events)
	if err != nil {
		t.Fatal(err)
	}
	for id, audience := range map[string]string{"nightly-1": "", "bobs": "user:bob"} {
		if _, _, err := st.SealTrajectory(t.Context(), store.Trajectory{Workspace: ws, RunID: id, Source: "otel", EventCount: 2,
			Digest: digest, SealedAt: progressT0, Audience: audience, Events: sealed}); err != nil {
			t.Fatal(err)
		}
	}
	a := &Activities{Store: st, Host: "w1", Logger: slog.New(slog.DiscardHandler),
		TraceIngest: traces.New(traces.Options{Store: st, Logger: slog.New(slog.DiscardHandler)})}
	ok := pulledRun(t, st, ws, "a", pull.Plan{Name: pull.NameSVC, RunID: "nightly-1", Viewer: "user:alice"})
	if s, err := a.DispatchRun(t.Context(), RunRef{Workspace: ws, RunID: ok.ID}); err != nil || s.Status != string(eval.StatusSucceeded) {
		t.Fatalf("ledger pull: %v, %v", s, err)
	}
	tr, err := st.GetTrajectory(t.Context(), ws, ok.ID)
	if err != nil || tr.Source != pull.NameSVC || tr.Digest != digest {
		t.Errorf("copy: %+v, %v; want the same events, source svc", tr, err)
	}
	if got := finished(t, st, ws, ok.ID); got.Result.Evidence.FinalAnswer != "right" {
		t.Errorf("final answer %q", got.Result.Evidence.FinalAnswer)
	}
	// Another member's personal trajectory is not the submitter's to read.
	hidden := pulledRun(t, st, ws, "b", pull.Plan{Name: pull.NameSVC, RunID: "bobs", Viewer: "user:alice"})
	if s, err := a.DispatchRun(t.Context(), RunRef{Workspace: ws, RunID: hidden.ID}); err != nil || s.Status != string(eval.StatusFailed) {
		t.Fatalf("someone else's trajectory: %v, %v; want a failed case", s, err)
	}
}

// TestPulledRunRetriesAPlatformThatFails: a platform answering 502 is
// asked pullTries times, then the attempt returns a retryable error (the
// chunk is retried); nothing is recorded for the run meanwhile.
func TestPulledRunRetriesAPlatformThatFails(t *testing.T) {
	st := sqlitetest.New(t)
	const ws = "acme"
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		w.WriteHeader(http.StatusBadGateway)
	}))
	defer srv.Close()
	a := pullActivities(t, st, ws, "pk:sk")
	run := pulledRun(t, st, ws, "r", pull.Plan{Name: "lf", RunID: "lf-trace-1",
		Source: pull.Config{Kind: pull.KindLangfuse, Endpoint: srv.URL, AuthSecret: "lf-key"}})
	_, err := a.DispatchRun(t.Context(), RunRef{Workspace: ws, RunID: run.ID})
	if !pull.Retryable(err) || calls != pullTries {
		t.Fatalf("err %v after %d calls: want a retryable error after %d", err, calls, pullTries)
	}
	if got := finished(t, st, ws, run.ID); got.Status != eval.StatusQueued {
		t.Errorf("run %s, want still queued for the next attempt", got.Status)
	}
}
