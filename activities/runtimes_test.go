package activities

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"svc/auth"
	"svc/drivers/nomad"
	"svc/drivers/nomad/nomadtest"
	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
	"svc/internal/platform/netguard"
	"svc/internal/platform/secrets"
	"svc/internal/service/registries"
	"svc/internal/testing/testwait"
	"svc/store"
	"svc/store/records"
	"svc/store/sqlite/sqlitetest"
)

// nomadFixture is a worker's Activities with a nomad runtime "cluster"
// (pointing at a fake cluster) and a harness "agent" registered in
// workspace ws.
type nomadFixture struct {
	a       *Activities
	st      store.Store
	cluster *nomadtest.Server
}

const nomadWS = "ws-nomad"

func newNomadFixture(t *testing.T, sc nomadtest.Script) *nomadFixture {
	t.Helper()
	ctx := t.Context()
	st := sqlitetest.New(t)
	sealer, err := secrets.NewSealer(base64.StdEncoding.EncodeToString([]byte(strings.Repeat("n", 32))))
	if err != nil {
		t.Fatal(err)
	}
	guard, err := netguard.NewProbeGuard("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	regs := registries.New(st, sealer, time.Now, registries.WithProbeGuard(guard))
	admin := auth.Principal{Subject: "admin", Workspace: nomadWS, Roles: []auth.Role{auth.RoleAdmin}, Via: auth.ViaOIDC}
	cluster := nomadtest.NewServer(t, sc)
	if err := regs.PutSecret(ctx, admin, "nomad-token", nomadtest.Token, []string{"127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	for kind, spec := range map[registry.Kind]map[string]any{
		registry.Runtime: {"id": "cluster", "version": "1", "kind": "nomad", "addr": cluster.URL, "image": "registry.example/agent:1", "authSecret": "nomad-token"},
		registry.Harness: {"id": "agent", "version": "1.0.0", "kind": "process", "command": []string{"/bin/agent"}},
	} {
		raw, _ := json.Marshal(spec)
		if _, err := regs.Register(ctx, admin, kind, raw, nil); err != nil {
			t.Fatalf("registering the %s: %v", kind, err)
		}
	}
	return &nomadFixture{
		a:       &Activities{Store: st, Registries: regs, Sealer: sealer, Host: "w1", Logger: slog.New(slog.DiscardHandler)},
		st:      st,
		cluster: cluster,
	}
}

// run creates a queued run of the agent on the cluster runtime, as edit
// (if any) changes it.
func (f *nomadFixture) run(t *testing.T, id string, edit ...func(*eval.Run)) eval.Run {
	t.Helper()
	now := time.Now().UTC()
	run := eval.Run{
		ID: id, Tenant: nomadWS, Harness: registry.Ref{ID: "agent", Version: "1.0.0"}, CaseID: "c1",
		Status: eval.StatusQueued, Kind: eval.KindEval, Trigger: eval.TriggerAPI, CreatedBy: "admin",
		CreatedAt: now, UpdatedAt: now, Runtime: "cluster",
		Case: &registry.EvalCase{ID: "c1", Task: "t", Placement: &registry.Placement{Target: "cluster"}},
	}
	for _, e := range edit {
		e(&run)
	}
	row, err := records.Row(run)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.CreateRun(t.Context(), row); err != nil {
		t.Fatal(err)
	}
	return run
}

// A dispatch that loses its lease leaves its Nomad job running, and the
// next dispatch of the run adopts that job rather than starting a second:
// every dispatch of a run names the same job.
func TestNomadRedispatchAdoptsTheJob(t *testing.T) {
	f := newNomadFixture(t, nomadtest.Script{Stdout: []string{"4\n"}, Hold: true})
	run := f.run(t, "run_adopt")
	ref := RunRef{Workspace: nomadWS, RunID: run.ID}
	job := nomad.JobID(run.ID, 1)

	// Outside a workflow's cancel, a context that ends is a lost lease.
	ctx, cancel := context.WithCancelCause(t.Context())
	first := make(chan error, 1)
	go func() {
		_, err := f.a.DispatchRun(ctx, ref)
		first <- err
	}()
	testwait.Until(t, 20*time.Second, "the job to run", func() bool { return f.cluster.TaskState(job) == "running" })
	cancel(errors.New("the activity attempt lost its lease"))
	if err := <-first; err == nil || !strings.Contains(err.Error(), "left for a later attempt") {
		t.Fatalf("the dispatch that lost its lease = %v, want an error leaving the job", err)
	}
	if f.cluster.Stopped(job) {
		t.Fatal("the job was stopped when its dispatch lost its lease")
	}

	second := make(chan error, 1)
	var st RunStatus
	go func() {
		var err error
		st, err = f.a.DispatchRun(t.Context(), ref)
		second <- err
	}()
	testwait.Until(t, 20*time.Second, "the second dispatch to look the job up", func() bool { return f.cluster.Count("GET", "/v1/job/"+job) >= 2 })
	f.cluster.Release(job)
	if err := <-second; err != nil || st.Status != string(eval.StatusSucceeded) {
		t.Fatalf("the second dispatch = %+v, %v; want the adopted job's success", st, err)
	}
	if n := f.cluster.Count("PUT", "/v1/jobs"); n != 1 {
		t.Errorf("%d jobs registered for one run dispatched twice, want 1", n)
	}
	row, err := f.st.GetRun(t.Context(), nomadWS, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := records.FromRow(row)
	if got.Attempts != 2 || got.Result == nil || got.Result.Evidence.FinalAnswer != "4" || got.Result.Execution.Driver != nomad.Name {
		t.Errorf("run after adoption: attempts %d, result %+v", got.Attempts, got.Result)
	}
}

// A run given up (its dispatch's retries exhausted) stops its job.
func TestFailRunStopsTheNomadJob(t *testing.T) {
	f := newNomadFixture(t, nomadtest.Script{Hold: true})
	run := f.run(t, "run_given_up")
	job := nomad.JobID(run.ID, 1)
	ctx, cancel := context.WithCancelCause(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := f.a.DispatchRun(ctx, RunRef{Workspace: nomadWS, RunID: run.ID})
		done <- err
	}()
	testwait.Until(t, 20*time.Second, "the job to run", func() bool { return f.cluster.TaskState(job) == "running" })
	cancel(errors.New("lease lost"))
	<-done

	st, err := f.a.FailRun(t.Context(), FailInput{RunRef: RunRef{Workspace: nomadWS, RunID: run.ID}, Code: "INTERNAL", Message: "gave up"})
	if err != nil || st.Status != string(eval.StatusFailed) {
		t.Fatalf("FailRun = %+v, %v", st, err)
	}
	if !f.cluster.Stopped(job) {
		t.Error("the given-up run's job is still running")
	}
	for _, q := range f.cluster.Requests() {
		if q.Method == "DELETE" && q.Path == "/v1/job/"+job && q.Query.Get("purge") == "true" {
			t.Error("the job was purged")
		}
	}
}

// What a run cannot run on fails the run, saying why; nothing reaches
// the cluster.
func TestNomadPlacementRefusals(t *testing.T) {
	f := newNomadFixture(t, nomadtest.Script{})
	ctx := t.Context()
	admin := auth.Principal{Subject: "admin", Workspace: nomadWS, Roles: []auth.Role{auth.RoleAdmin}, Via: auth.ViaOIDC}
	for _, spec := range []map[string]any{
		{"id": "kube", "version": "1", "kind": "k8s", "image": "x"},
		{"id": "cpuless", "version": "1", "kind": "nomad", "addr": f.cluster.URL, "image": "x", "authSecret": "nomad-token"},
	} {
		raw, _ := json.Marshal(spec)
		if _, err := f.a.Registries.(*registries.Service).Register(ctx, admin, registry.Runtime, raw, nil); err != nil {
			t.Fatal(err)
		}
	}
	cpu := 500
	for _, tc := range []struct {
		runtime string
		edit    func(*eval.Run)
		want    string
	}{
		{runtime: "ghost", want: `runtime "ghost" is no longer registered`},
		{runtime: "kube", want: "k8s runtime"},
		{runtime: "cpuless", edit: func(r *eval.Run) { r.Case.Resources = &registry.Resources{CPU: &cpu} }, want: `case "c1" declares resources.cpu`},
	} {
		t.Run(tc.runtime, func(t *testing.T) {
			run := f.run(t, "run_"+tc.runtime, func(r *eval.Run) {
				r.Runtime, r.Case.Placement.Target = tc.runtime, tc.runtime
				if tc.edit != nil {
					tc.edit(r)
				}
			})
			st, err := f.a.dispatch(ctx, run, grading{})
			if err != nil || st.Status != string(eval.StatusFailed) {
				t.Fatalf("dispatch = %+v, %v; want a failed run", st, err)
			}
			row, err := f.st.GetRun(ctx, nomadWS, run.ID)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := records.FromRow(row)
			if got.Error == nil || !strings.Contains(got.Error.Message, tc.want) {
				t.Errorf("error %+v, want it to say %q", got.Error, tc.want)
			}
		})
	}
	if n := len(f.cluster.Requests()); n != 0 {
		t.Errorf("%d requests reached the cluster", n)
	}
}
