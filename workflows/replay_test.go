package workflows

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
)

// TestReplayCommittedHistories replays histories recorded from real runs
// against today's workflow code: a change that would make a running
// workflow take another path on replay (a non-determinism error after a
// deploy) fails here first. Record new ones with
//
//	go test ./workflows/ -run 'TestRun' -update-histories
//
// and keep the old files: they stand for workflows started by older code.
func TestReplayCommittedHistories(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "histories", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no committed histories in testdata/histories")
	}
	logger := log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			Register(r)
			if err := r.ReplayWorkflowHistoryFromJSONFile(logger, f); err != nil {
				t.Fatalf("replaying %s: %v", f, err)
			}
		})
	}
}
