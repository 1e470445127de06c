package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"svc/drivers/nomad/nomadtest"
	"svc/internal/domain/eval"
	"svc/internal/testing/testwait"
	"svc/store/sqlite"
)

// TestNomadSlotsSurviveDevKill is issue 15's admission kill test: a batch
// of 8 cases on a Nomad runtime with maxConcurrent 3 (a loopback cluster
// answering Nomad's recorded HTTP API; each job runs until the test
// releases it) has `svc dev` SIGKILLed while its three slots are held and
// restarted on the same data dir. The restarted service takes the slots
// over (their holder is the run), never runs more than 3 jobs at once, and
// the batch ends with every case done and not one slot left in the store.
func TestNomadSlotsSurviveDevKill(t *testing.T) {
	cluster := nomadtest.NewServer(t, nomadtest.Script{})
	cluster.ScriptFor(func(nomadtest.Registered) nomadtest.Script {
		return nomadtest.Script{Stdout: []string{"ok\n"}, Hold: true}
	})
	dataDir := t.TempDir()
	env := devEnv(dataDir, "SVC_PROBE_ALLOW=127.0.0.1")
	svc := start(t, env, true, "dev")

	mustCall := func(base, method, path string, body any, want int, out any) {
		t.Helper()
		if code := call(t, method, base+path, body, out); code != want {
			t.Fatalf("%s %s = %d, want %d", method, path, code, want)
		}
	}
	mustCall(svc.URL, "PUT", "/secrets/nomad-token", map[string]any{"value": nomadtest.Token, "allowedHosts": []string{"127.0.0.1"}}, 204, nil)
	mustCall(svc.URL, "POST", "/runtimes", map[string]any{"id": "small", "version": "1", "kind": "nomad", "addr": cluster.URL,
		"image": "registry.example/agent:1", "authSecret": "nomad-token", "datacenters": []string{"dc1"}, "maxConcurrent": 3}, 201, nil)
	mustCall(svc.URL, "POST", "/harnesses", map[string]any{"id": "agent", "version": "1.0.0", "kind": "process",
		"command": []string{"/bin/agent"}}, 201, nil)
	const n = 8
	cases := make([]map[string]any, n)
	for i := range cases {
		cases[i] = map[string]any{"id": fmt.Sprintf("hold%d", i), "task": "hold", "expected": "ok", "graders": []map[string]any{{"id": "contains"}}}
	}
	mustCall(svc.URL, "POST", "/datasets", map[string]any{"id": "held", "version": "1.0.0", "cases": cases}, 201, nil)
	var sc eval.Scorecard
	mustCall(svc.URL, "POST", "/scorecards", map[string]any{"dataset": map[string]string{"id": "held", "version": "1.0.0"},
		"harness": map[string]string{"id": "agent", "version": "1.0.0"}, "runtime": "small", "concurrency": n}, 202, &sc)

	released := map[string]bool{}
	live := func() []string {
		var out []string
		for _, id := range cluster.Jobs() {
			if !released[id] {
				out = append(out, id)
			}
		}
		slices.Sort(out)
		return out
	}
	waitLive := func(want int) []string {
		t.Helper()
		var now []string
		testwait.UntilValue(t, 2*time.Minute, fmt.Sprintf("%d jobs on the cluster (%d released)", want, len(released)), func() (int, bool) {
			now = live()
			if len(now) > 3 {
				t.Fatalf("%d jobs on the cluster at once (%v), over maxConcurrent 3", len(now), now)
			}
			return len(now), len(now) == want
		})
		return now
	}

	// The kill: three jobs hold the runtime's three slots.
	held := waitLive(3)
	svc.signal(syscall.SIGKILL)
	svc.wait(30 * time.Second)
	killed := time.Now()
	svc = start(t, env, true, "dev")
	t.Logf("svc dev killed holding %v; listening again after %s", held, time.Since(killed).Round(10*time.Millisecond))

	// After the restart the same three jobs are adopted, not started again
	// beside them, and each release lets exactly one more start.
	for len(released) < n {
		now := waitLive(min(3, n-len(released)))
		time.Sleep(300 * time.Millisecond) // a job started past the bound would show
		if l := live(); len(l) > 3 {
			t.Fatalf("%d jobs on the cluster at once (%v), over maxConcurrent 3", len(l), l)
		}
		released[now[0]] = true
		cluster.Release(now[0])
	}
	testwait.UntilValue(t, 2*time.Minute, "batch "+sc.ID+" to end", func() (string, bool) {
		var got eval.Scorecard
		mustCall(svc.URL, "GET", "/scorecards/"+sc.ID, nil, 200, &got)
		sc = got
		return fmt.Sprintf("%s %+v", got.Status, got.Progress), eval.ScorecardTerminal(got.Status) && got.FinishedAt != nil
	})
	if sc.Status != eval.ScorecardSucceeded || sc.Progress.Done != n || sc.Progress.DispatchErrors != 0 {
		t.Fatalf("batch ended %s %+v, want succeeded with %d done", sc.Status, sc.Progress, n)
	}
	if got := len(cluster.Jobs()); got != n {
		t.Errorf("the cluster was sent %d jobs for %d cases: a restarted attempt started a job beside the one it should adopt", got, n)
	}

	// No slot is left: not the killed process's, not the restarted one's.
	svc.signal(syscall.SIGTERM)
	svc.wait(30 * time.Second)
	st, err := sqlite.Open(context.Background(), filepath.Join(dataDir, "svc.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	slots, err := st.ListSlots(context.Background(), "default", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(slots) != 0 {
		t.Errorf("%d slots left in the store after the batch: %+v", len(slots), slots)
	}
}
