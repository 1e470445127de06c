package runners_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"svc/internal/platform/derrors"
	"svc/internal/platform/secrets"
	"svc/internal/service/runners"
	"svc/store"
	"svc/store/sqlite/sqlitetest"
)

func queueJob(secretEnv map[string]string) runners.QueueJob {
	return runners.QueueJob{Workspace: "acme", Runtime: "own", ScorecardID: "sc1", At: time.Now(),
		Job: runners.Job{RunID: "run1", Attempt: 1, Command: []string{"/bin/true"}, Case: json.RawMessage(`{"id":"c1"}`), Secrets: secretEnv}}
}

// TestRunnerQueueSealsAndLeasesOpen: a job's secrets are stored sealed
// under its id's name, never in its payload, and the runner's lease opens
// them; queueing the same attempt again adopts the job.
func TestRunnerQueueSealsAndLeasesOpen(t *testing.T) {
	st := sqlitetest.New(t)
	sealer, err := secrets.NewSealer("MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	if err != nil {
		t.Fatal(err)
	}
	q := runners.NewQueue(st, sealer)
	qj, created, err := q.Enqueue(t.Context(), queueJob(map[string]string{"TOKEN": "s3cret-value-123"}))
	if err != nil || !created || qj.ID != runners.JobID("run1", 1) || qj.State != runners.JobQueued {
		t.Fatalf("Enqueue = %+v, %v, %v", qj, created, err)
	}
	row, err := st.GetRunnerJob(t.Context(), "acme", qj.ID)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(row.Payload), "s3cret") || strings.Contains(string(row.Secrets), "s3cret") || len(row.Secrets) == 0 {
		t.Errorf("stored payload %s, secrets %q: want the secrets sealed, apart", row.Payload, row.Secrets)
	}
	plain, err := sealer.Open("acme", runners.SecretsName(qj.ID), row.Secrets)
	if err != nil || string(plain) != `{"TOKEN":"s3cret-value-123"}` {
		t.Errorf("opened %s, %v", plain, err)
	}
	if again, created, err := q.Enqueue(t.Context(), queueJob(map[string]string{"TOKEN": "s3cret-value-123"})); err != nil || created || again.ID != qj.ID {
		t.Errorf("queueing again = %+v, %v, %v; want the job adopted", again, created, err)
	}
}

// TestRunnerQueueRefusesSecretsWithoutASealer: without SVC_SECRET_KEY a
// job with secrets is refused (the case fails) rather than stored open.
func TestRunnerQueueRefusesSecretsWithoutASealer(t *testing.T) {
	st := sqlitetest.New(t)
	q := runners.NewQueue(st, nil)
	if _, _, err := q.Enqueue(t.Context(), queueJob(map[string]string{"TOKEN": "x"})); !errors.Is(err, derrors.ErrInvalid) || !strings.Contains(err.Error(), "SVC_SECRET_KEY") {
		t.Errorf("Enqueue with secrets and no sealer = %v, want ErrInvalid naming SVC_SECRET_KEY", err)
	}
	if js, _ := st.ListRunnerJobs(t.Context(), "acme"); len(js) != 0 {
		t.Errorf("jobs queued %+v, want none", js)
	}
	if _, _, err := q.Enqueue(t.Context(), queueJob(nil)); err != nil {
		t.Errorf("Enqueue without secrets and no sealer = %v", err)
	}
}

// TestRunnerQueueReadsTheResult: a done job carries its runner's result;
// one whose result does not decode carries none.
func TestRunnerQueueReadsTheResult(t *testing.T) {
	st := sqlitetest.New(t)
	q := runners.NewQueue(st, nil)
	qj, _, err := q.Enqueue(t.Context(), queueJob(nil))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, err := st.LeaseRunnerJob(t.Context(), store.RunnerLease{Workspace: "acme", Runner: "box", LeaseID: "L1", Now: now, Until: now.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if got, err := q.Job(t.Context(), "acme", qj.ID); err != nil || got.State != runners.JobLeased || got.LeaseID != "L1" || got.LeaseExpires == nil || got.Result != nil {
		t.Fatalf("leased job = %+v, %v", got, err)
	}
	raw, _ := json.Marshal(runners.Result{ExitCode: 3, Stdout: "answer", Host: "box"})
	if _, err := st.CompleteRunnerJob(t.Context(), "acme", qj.ID, "L1", raw, now); err != nil {
		t.Fatal(err)
	}
	got, err := q.Job(t.Context(), "acme", qj.ID)
	if err != nil || got.State != runners.JobDone || got.Result == nil || got.Result.ExitCode != 3 || got.Result.Host != "box" {
		t.Fatalf("done job = %+v, %v", got, err)
	}
	if err := q.Delete(t.Context(), "acme", qj.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Job(t.Context(), "acme", qj.ID); !errors.Is(err, derrors.ErrNotFound) {
		t.Errorf("a deleted job reads %v, want ErrNotFound", err)
	}
}
