package runs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"svc/auth"
	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
	"svc/internal/platform/derrors"
	"svc/internal/platform/reqid"
	"svc/internal/service/models"
	"svc/internal/service/registries"
	"svc/internal/service/runs"
	"svc/store/sqlite/sqlitetest"
	"svc/store/storetest"
)

// failingStarter is an orchestrator that cannot start any workflow.
type failingStarter struct{ err error }

func (s failingStarter) StartRun(ctx context.Context, workspace, runID string) error { return s.err }

// logLines decodes the JSON log lines in b.
func logLines(t *testing.T, b *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(b.Bytes()), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, rec)
	}
	return out
}

// TestSubmitStartFails: a run whose workflow cannot be started is marked
// failed (phase dispatch), so nothing stays queued; when that mark cannot
// be written either, the error is returned, not swallowed, and logged
// with the request id.
func TestSubmitStartFails(t *testing.T) {
	startErr := errors.New("temporal: connection refused")
	markErr := errors.New("database is locked")
	tests := []struct {
		name       string
		markErr    error
		wantStatus eval.Status
		wantText   string // in the message the client reads
	}{
		{"marked failed", nil, eval.StatusFailed, "it is marked failed"},
		{"the mark fails too", markErr, eval.StatusQueued, "could not be marked failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := reqid.With(t.Context(), "req-submit-1")
			now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			st := storetest.NewFailing(sqlitetest.New(t))
			reg := registries.New(st, nil, func() time.Time { return now })
			p := auth.Principal{Subject: "alice", Workspace: "ws", Roles: []auth.Role{auth.RoleAdmin}}
			if _, err := reg.Register(ctx, p, registry.Harness, []byte(`{"id":"h","version":"1.0.0","kind":"process","command":["run"]}`), nil); err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			svc := runs.New(runs.Options{Store: st, Registries: reg, Models: &models.Service{Store: st}, Starter: failingStarter{startErr},
				Now: func() time.Time { return now }, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
			st.Fail("PutRun", tt.markErr)

			_, err := svc.Submit(ctx, p, runs.SubmitRequest{Harness: registry.Ref{ID: "h", Version: "1.0.0"},
				Case: registry.EvalCase{ID: "c", Task: "do c"}}, "api")
			if !errors.Is(err, derrors.ErrUnavailable) || !errors.Is(err, startErr) {
				t.Fatalf("Submit = %v, want ErrUnavailable joined with the start error", err)
			}
			if tt.markErr != nil && !errors.Is(err, tt.markErr) {
				t.Errorf("Submit = %v, want the mark's error returned too", err)
			}
			var public *derrors.Public
			if !errors.As(err, &public) || !strings.Contains(public.Msg, tt.wantText) {
				t.Errorf("public message = %v, want it to contain %q", public, tt.wantText)
			}
			if got := st.Calls("PutRun"); got != 1 {
				t.Errorf("PutRun calls = %d, want 1 (the mark)", got)
			}

			list, _, err := svc.List(ctx, p, runs.ListQuery{})
			if err != nil {
				t.Fatal(err)
			}
			if len(list) != 1 {
				t.Fatalf("List = %d runs, want the 1 recorded", len(list))
			}
			got := list[0]
			if got.Status != tt.wantStatus {
				t.Errorf("status = %s, want %s", got.Status, tt.wantStatus)
			}
			if tt.wantStatus == eval.StatusFailed && (got.Error == nil || got.Error.Phase != eval.PhaseDispatch || got.Error.Code != eval.CodeDispatch) {
				t.Errorf("error = %+v, want code %s in phase %s", got.Error, eval.CodeDispatch, eval.PhaseDispatch)
			}

			var logged []map[string]any
			for _, rec := range logLines(t, &logs) {
				if rec["level"] == "ERROR" {
					logged = append(logged, rec)
				}
			}
			switch {
			case tt.markErr == nil && len(logged) > 0:
				t.Errorf("logged %v, want no error when the mark was written", logged)
			case tt.markErr != nil && len(logged) != 1:
				t.Errorf("logged %v, want one error line", logged)
			case tt.markErr != nil:
				rec := logged[0]
				if rec["request_id"] != "req-submit-1" || rec["run"] != got.ID || !strings.Contains(rec["error"].(string), markErr.Error()) {
					t.Errorf("log line %v, want request_id req-submit-1, run %s and the mark's error", rec, got.ID)
				}
			}
		})
	}
}
