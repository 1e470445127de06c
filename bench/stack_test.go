package bench

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"

	"go.temporal.io/sdk/client"

	"svc/internal/orchestration"
	"svc/internal/testing/stacktest"
	"svc/store"
	"svc/store/pgtest"
)

// The stack is internal/testing/stacktest's, the one the workflows tests use, with
// the worker's activity slots set explicitly.

func TestMain(m *testing.M) { pgtest.Main(m) }

const taskQueue = "bench"

// workerActivities is the worker's activity slots. The SDK's default
// (1,000, what cmd/svc runs with) is already above the largest batch
// concurrency (64); it is set here so the benchmark does not depend on it.
const workerActivities = 1000

// stack is one running service: Temporal, a worker, the API.
type stack struct {
	*stacktest.Stack
	store store.Store
	tc    client.Client
}

func newStack(tb testing.TB, backend string) *stack {
	tb.Helper()
	st := stacktest.New(tb, stacktest.Options{Backend: backend, TaskQueue: taskQueue, Host: "bench-worker", Level: slog.LevelError,
		Worker: orchestration.WorkerOptions{MaxConcurrentActivities: workerActivities}})
	return &stack{Stack: st, store: st.Store, tc: st.Client}
}

// call sends a request with the stack's key; see stacktest.Stack.Call.
func (s *stack) call(tb testing.TB, method, path, body string, want int, out any, hdr ...string) {
	tb.Helper()
	s.Call(tb, method, path, body, want, out, hdr...)
}

// harness registers a process harness id@version running command.
func (s *stack) harness(tb testing.TB, id, version string, command ...string) {
	tb.Helper()
	b, _ := json.Marshal(map[string]any{"id": id, "version": version, "kind": "process", "command": command})
	s.call(tb, "POST", "/harnesses", string(b), 201, nil)
}

// dataset registers dataset id@1.0.0 with n cases c0000, c0001, ... and no
// graders, so each case is graded by its exit code alone.
func (s *stack) dataset(tb testing.TB, id string, n int) {
	tb.Helper()
	cases := make([]map[string]any, n)
	for i := range cases {
		cases[i] = map[string]any{"id": fmt.Sprintf("c%04d", i), "task": fmt.Sprintf("case %d", i)}
	}
	b, _ := json.Marshal(map[string]any{"id": id, "version": "1.0.0", "cases": cases})
	s.call(tb, "POST", "/datasets", string(b), 201, nil)
}
