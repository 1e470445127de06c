package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"svc/store"
	"svc/store/sqlite/sqlitetest"
	"svc/store/storetest"
)

// TestStoreLogsFailureIsLogged: run logs are the run's side output, so a
// failed write is logged rather than returned, with the workflow and run
// ids that find the activity in Temporal.
func TestStoreLogsFailureIsLogged(t *testing.T) {
	st := storetest.NewFailing(sqlitetest.New(t))
	st.Fail("AppendRunLogs", errors.New("database is locked"))
	var logs bytes.Buffer
	a := &Activities{Store: st, Logger: slog.New(slog.NewJSONHandler(&logs, nil))}

	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivityWithOptions(func(ctx context.Context) error {
		a.storeLogs(ctx, RunRef{Workspace: "ws", RunID: "run_1"}, []store.RunLog{
			{Workspace: "ws", RunID: "run_1", Seq: 1, Stream: "stdout", Data: "hello\n", At: time.Now()}})
		return nil
	}, activity.RegisterOptions{Name: "StoreLogs"})
	if _, err := env.ExecuteActivity("StoreLogs"); err != nil {
		t.Fatalf("the activity = %v, want nil: a log write is not the activity's failure", err)
	}

	var rec map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(logs.Bytes()), &rec); err != nil {
		t.Fatalf("want one JSON log line, got %q: %v", logs.String(), err)
	}
	for k, want := range map[string]any{"level": "WARN", "workspace": "ws", "run": "run_1", "activity": "StoreLogs"} {
		if rec[k] != want {
			t.Errorf("log %s = %v, want %v", k, rec[k], want)
		}
	}
	if rec["workflowId"] == "" || rec["workflowId"] == nil || rec["workflowRunId"] == "" || rec["workflowRunId"] == nil {
		t.Errorf("log line %v: want the workflow id and run id", rec)
	}
	if e, _ := rec["error"].(string); !strings.Contains(e, "database is locked") {
		t.Errorf("log error = %q, want the write's error", e)
	}
}
