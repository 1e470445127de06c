package activities

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"

	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
	"svc/store"
	"svc/store/records"
	"svc/store/sqlite/sqlitetest"
)

// faultyFinishStore fails the first write of one kind after FinishScore's
// revision has committed: the scoring step, or the scorecard.scored event.
type faultyFinishStore struct {
	Store
	failStep, failEvent bool
}

var errInjected = errors.New("injected: the store went away")

func (s *faultyFinishStore) AppendScorecardSteps(ctx context.Context, steps []store.ScorecardStep) error {
	if s.failStep && len(steps) > 0 && strings.HasPrefix(steps[0].Key, "score:") {
		s.failStep = false
		return errInjected
	}
	return s.Store.AppendScorecardSteps(ctx, steps)
}

func (s *faultyFinishStore) AppendEvent(ctx context.Context, e store.Event) (store.Event, error) {
	if s.failEvent && e.Type == "scorecard.scored" {
		s.failEvent = false
		return store.Event{}, errInjected
	}
	return s.Store.AppendEvent(ctx, e)
}

// TestFinishScoreRetriedAfterItsRevisionEmitsScoredOnce (spec §6,
// scorecard.scored; issue 33's exactly-once rule): an attempt of
// FinishScore that committed its scoring revision and then failed (its
// step or its event not written) is retried; the retry finds the pass
// settled, and because the last revision is its own it finishes the
// follow-ups, so scorecard.scored is emitted exactly once, carrying that
// revision and the agent's causedBy. A further retry adds nothing. On the
// real (SQLite) store.
func TestFinishScoreRetriedAfterItsRevisionEmitsScoredOnce(t *testing.T) {
	for _, tc := range []struct {
		name                string
		failStep, failEvent bool
	}{
		{"the step failed", true, false},
		{"the event failed", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			st := sqlitetest.New(t)
			const ws, pass = "acme", "pass_1"
			sc := eval.Scorecard{ID: "sc_s", Tenant: ws, Kind: eval.KindExperiment, Status: eval.ScorecardSucceeded,
				Dataset: registry.Ref{ID: "ds", Version: "1.0.0"}, Harness: registry.Ref{ID: "h", Version: "1.0.0"},
				CreatedAt: progressT0, UpdatedAt: progressT0, Concurrency: 1, Trials: 1, Progress: eval.Progress{Total: 1},
				CreatedBy: "alice", ScoringInFlight: pass}
			row, err := records.ScorecardRow(sc, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.CreateScorecard(ctx, row); err != nil {
				t.Fatal(err)
			}
			canonical := true
			r := eval.Run{CaseID: "c1", Status: eval.StatusSucceeded, Result: &eval.CaseResult{Pass: true}}
			r.ID, r.Tenant, r.Harness, r.Kind, r.Trigger = eval.ChildRunID(ws, sc.ID, r.CaseID, 0), ws, sc.Harness, eval.KindEval, eval.TriggerScorecard
			r.ParentScorecardID, r.Canonical, r.CreatedAt, r.UpdatedAt = sc.ID, &canonical, progressT0, progressT0
			if rr, err := records.Row(r); err != nil {
				t.Fatal(err)
			} else if _, err := st.CreateRun(ctx, rr); err != nil {
				t.Fatal(err)
			}

			faulty := &faultyFinishStore{Store: st, failStep: tc.failStep, failEvent: tc.failEvent}
			a := &Activities{Store: faulty, Now: func() time.Time { return progressT0.Add(time.Minute) }}
			env := (&testsuite.WorkflowTestSuite{}).NewTestActivityEnvironment()
			env.RegisterActivity(a)
			in := FinishScoreInput{ScorecardRef: ScorecardRef{Workspace: ws, ScorecardID: sc.ID}, Pass: pass,
				CreatedBy: "alice", CausedBy: "agent:helper:conv_1"}

			if _, err := env.ExecuteActivity(a.FinishScore, in); err == nil {
				t.Fatal("the first attempt succeeded; want it to fail after its revision committed")
			}
			mid, _, err := records.LoadScorecard(ctx, st, ws, sc.ID)
			if err != nil {
				t.Fatal(err)
			}
			if mid.ScoringInFlight != "" || len(mid.Scoring) != 1 || mid.Scoring[0].JudgeRun != pass {
				t.Fatalf("after the failed attempt: in flight %q, scoring %+v; want the revision committed", mid.ScoringInFlight, mid.Scoring)
			}
			for attempt := 2; attempt <= 3; attempt++ {
				if _, err := env.ExecuteActivity(a.FinishScore, in); err != nil {
					t.Fatalf("attempt %d: %v", attempt, err)
				}
			}

			events, err := st.ListEvents(ctx, store.EventFilter{Workspace: ws, Type: "scorecard.scored"})
			if err != nil {
				t.Fatal(err)
			}
			if len(events) != 1 {
				t.Fatalf("scorecard.scored emitted %d times, want exactly once: %+v", len(events), events)
			}
			var data struct {
				ScorecardID string `json:"scorecardId"`
				Revision    int    `json:"revision"`
				Pass        string `json:"pass"`
			}
			if err := json.Unmarshal(events[0].Data, &data); err != nil {
				t.Fatal(err)
			}
			if data.ScorecardID != sc.ID || data.Revision != 1 || data.Pass != pass || events[0].CausedBy != in.CausedBy {
				t.Errorf("scorecard.scored %+v (data %+v), want revision 1 of %s by %s, causedBy %s", events[0], data, sc.ID, pass, in.CausedBy)
			}
			got, _, err := records.LoadScorecard(ctx, st, ws, sc.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Scoring) != 1 || got.Kind != eval.KindScorecard {
				t.Errorf("after the retries: kind %s, %d revisions; want a scorecard with one", got.Kind, len(got.Scoring))
			}
			steps, err := st.ListScorecardSteps(ctx, ws, sc.ID, 0, 100)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, s := range steps {
				if s.Key == "score:"+pass {
					n++
					if s.Status != "succeeded" {
						t.Errorf("the pass's step %+v, want succeeded", s)
					}
				}
			}
			if n != 1 {
				t.Errorf("the pass's step written %d times, want once", n)
			}
		})
	}
}
