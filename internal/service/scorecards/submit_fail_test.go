package scorecards_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"svc/auth"
	"svc/internal/domain/eval"
	"svc/internal/domain/flows"
	"svc/internal/domain/registry"
	"svc/internal/platform/derrors"
	"svc/internal/platform/reqid"
	"svc/internal/service/models"
	"svc/internal/service/registries"
	"svc/internal/service/scorecards"
	"svc/internal/service/scorecards/scorecardstest"
	"svc/store/records"
	"svc/store/sqlite/sqlitetest"
	"svc/store/storetest"
)

// downOrchestrator is an orchestrator that cannot start any workflow;
// onStart, when set, runs first (to break the store at that moment).
type downOrchestrator struct {
	err     error
	onStart func()
}

func (o downOrchestrator) StartScorecard(context.Context, flows.ScorecardInput) error {
	return o.start()
}
func (o downOrchestrator) StartScore(context.Context, flows.ScoreInput) error { return o.start() }
func (o downOrchestrator) start() error {
	if o.onStart != nil {
		o.onStart()
	}
	return o.err
}
func (o downOrchestrator) Cancel(context.Context, string) error { return o.err }
func (o downOrchestrator) Describe(context.Context, string) (flows.DriverView, error) {
	return flows.DriverView{}, o.err
}

// TestSubmitStartFails: a batch whose workflow cannot be started is marked
// failed (phase dispatch), so nothing stays queued; when that mark cannot
// be written either, the error is returned, not swallowed, and logged
// with the request id. A step that cannot be appended is logged, and the
// submit goes on.
func TestSubmitStartFails(t *testing.T) {
	startErr := errors.New("temporal: connection refused")
	writeErr := errors.New("database is locked")
	tests := []struct {
		name       string
		fail       []string // store methods that fail with writeErr
		wantStatus eval.Status
		wantText   string   // in the message the client reads
		wantLogged []string // "LEVEL msg-substring" of the lines logged
	}{
		{"marked failed", nil, eval.ScorecardFailed, "it is marked failed", nil},
		{"the mark fails too", []string{"PutScorecard"}, eval.ScorecardQueued, "could not be marked failed",
			[]string{"ERROR left queued"}},
		{"the steps fail", []string{"AppendScorecardSteps"}, eval.ScorecardFailed, "it is marked failed",
			[]string{"WARN appending scorecard steps"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := reqid.With(t.Context(), "req-submit-2")
			now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			st := storetest.NewFailing(sqlitetest.New(t))
			reg := registries.New(st, nil, func() time.Time { return now })
			p := auth.Principal{Subject: "alice", Workspace: "ws", Roles: []auth.Role{auth.RoleAdmin}}
			for kind, spec := range map[registry.Kind]string{
				registry.Harness: `{"id":"h","version":"1.0.0","kind":"process","command":["run"]}`,
				registry.Dataset: `{"id":"ds","version":"1.0.0","cases":[{"id":"a","task":"do a","graders":[{"id":"g","kind":"exit_code"}]}]}`,
			} {
				if _, err := reg.Register(ctx, p, kind, []byte(spec), nil); err != nil {
					t.Fatal(err)
				}
			}
			var logs bytes.Buffer
			svc := scorecards.New(scorecards.Options{Store: st, Registries: reg, Models: &models.Service{Store: st}, Orchestrator: downOrchestrator{err: startErr},
				Now: func() time.Time { return now }, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
			for _, m := range tt.fail {
				st.Fail(m, writeErr)
			}

			_, err := svc.Submit(ctx, p, scorecards.SubmitRequest{Dataset: registry.Ref{ID: "ds", Version: "1.0.0"},
				Harness: registry.Ref{ID: "h", Version: "1.0.0"}}, "api")
			if !errors.Is(err, derrors.ErrUnavailable) || !errors.Is(err, startErr) {
				t.Fatalf("Submit = %v, want ErrUnavailable joined with the start error", err)
			}
			if markFailed := tt.wantStatus == eval.ScorecardQueued; markFailed != errors.Is(err, writeErr) {
				t.Errorf("Submit = %v; the mark's error returned: %v, want %v", err, !markFailed, markFailed)
			}
			var public *derrors.Public
			if !errors.As(err, &public) || !strings.Contains(public.Msg, tt.wantText) {
				t.Errorf("public message = %v, want it to contain %q", public, tt.wantText)
			}

			st.Fail("PutScorecard", nil)
			list, _, err := svc.List(ctx, p, scorecards.ListQuery{})
			if err != nil {
				t.Fatal(err)
			}
			if len(list) != 1 {
				t.Fatalf("List = %d batches, want the 1 recorded", len(list))
			}
			got := list[0]
			if got.Status != tt.wantStatus {
				t.Errorf("status = %s, want %s", got.Status, tt.wantStatus)
			}
			if tt.wantStatus == eval.ScorecardFailed && (got.Error == nil || got.Error.Phase != eval.PhaseDispatch) {
				t.Errorf("error = %+v, want phase %s", got.Error, eval.PhaseDispatch)
			}

			var logged []string
			for _, line := range bytes.Split(bytes.TrimSpace(logs.Bytes()), []byte("\n")) {
				if len(line) == 0 {
					continue
				}
				var rec map[string]any
				if err := json.Unmarshal(line, &rec); err != nil {
					t.Fatalf("log line %q: %v", line, err)
				}
				if rec["request_id"] != "req-submit-2" || rec["scorecard"] != got.ID || !strings.Contains(rec["error"].(string), writeErr.Error()) {
					t.Errorf("log line %s: want request_id req-submit-2, scorecard %s and the write's error", line, got.ID)
				}
				logged = append(logged, rec["level"].(string)+" "+rec["msg"].(string))
			}
			if len(logged) != len(tt.wantLogged) {
				t.Fatalf("logged %q, want %q", logged, tt.wantLogged)
			}
			for i, want := range tt.wantLogged {
				level, msg, _ := strings.Cut(want, " ")
				if !strings.HasPrefix(logged[i], level+" ") || !strings.Contains(logged[i], msg) {
					t.Errorf("log line %d = %q, want %q", i, logged[i], want)
				}
			}
		})
	}
}

// TestScoreStartFails: a scoring pass that cannot be started releases its
// batch, so the next pass is not refused as one in flight; when the
// release cannot be written, the error is returned and logged with the
// request id.
func TestScoreStartFails(t *testing.T) {
	startErr := errors.New("temporal: connection refused")
	writeErr := errors.New("database is locked")
	for _, releaseFails := range []bool{false, true} {
		t.Run(fmt.Sprintf("release fails %v", releaseFails), func(t *testing.T) {
			ctx := reqid.With(t.Context(), "req-score-1")
			now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			st := storetest.NewFailing(sqlitetest.New(t))
			reg := registries.New(st, nil, func() time.Time { return now })
			p := auth.Principal{Subject: "alice", Workspace: "ws", Roles: []auth.Role{auth.RoleAdmin}}
			if _, err := reg.Register(ctx, p, registry.Judge, []byte(`{"id":"j","version":"1.0.0","kind":"code","language":"python","code":"print(1)"}`), nil); err != nil {
				t.Fatal(err)
			}
			b := scorecardstest.NewBatch(t, st, "ws", "sc_1", 1, now)
			b.Start(t, 0, now)
			b.Finish(t, 0, true, now)
			if _, err := records.UpdateScorecard(ctx, st, "ws", "sc_1", func(sc *eval.Scorecard) error {
				sc.Status = eval.ScorecardSucceeded
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			o := downOrchestrator{err: startErr}
			if releaseFails {
				o.onStart = func() { st.Fail("PutScorecard", writeErr) }
			}
			svc := scorecards.New(scorecards.Options{Store: st, Registries: reg, Models: &models.Service{Store: st}, Orchestrator: o,
				Now: func() time.Time { return now }, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})

			_, err := svc.Score(ctx, p, "sc_1", scorecards.ScoreRequest{Judges: []scorecards.JudgeSel{{ID: "j"}}})
			if !errors.Is(err, derrors.ErrUnavailable) || !errors.Is(err, startErr) {
				t.Fatalf("Score = %v, want ErrUnavailable joined with the start error", err)
			}
			if errors.Is(err, writeErr) != releaseFails {
				t.Errorf("Score = %v; want the release's error returned: %v", err, releaseFails)
			}
			st.Fail("PutScorecard", nil)
			sc, err := svc.Get(ctx, p, "sc_1")
			if err != nil {
				t.Fatal(err)
			}
			if held := sc.ScoringInFlight != ""; held != releaseFails {
				t.Errorf("scoringInFlight = %q; want held: %v", sc.ScoringInFlight, releaseFails)
			}
			line := bytes.TrimSpace(logs.Bytes())
			switch {
			case !releaseFails && len(line) > 0:
				t.Errorf("logged %s, want nothing when the release was written", line)
			case releaseFails:
				var rec map[string]any
				if err := json.Unmarshal(line, &rec); err != nil {
					t.Fatalf("want one JSON log line, got %q: %v", line, err)
				}
				if rec["level"] != "ERROR" || rec["request_id"] != "req-score-1" || rec["scorecard"] != "sc_1" || !strings.Contains(rec["error"].(string), writeErr.Error()) {
					t.Errorf("log line %s: want an error with request_id req-score-1, scorecard sc_1 and the write's error", line)
				}
			}
		})
	}
}
