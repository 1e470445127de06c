package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"svc/auth"
	"svc/derrors"
	"svc/drivers"
	"svc/drivers/nomad"
	"svc/eval"
	"svc/internal/probers"
	"svc/registry"
)

// jobAttempt is the Job.Attempt of every dispatch of a run. A remote
// driver names the job after the run and this number, and adopts the job
// of that name when it exists; since a run that finished (even failed) is
// terminal and never dispatched again, every dispatch of a run that is
// still open is a retry that must follow the job its predecessor started
// (which may still be running), not start a second one. So the number is
// the same for every dispatch, not run.Attempts (see
// /tmp/decisions-nomad-wiring.md and docs/runtimes.md).
const jobAttempt = 1

// placement is where a run's job runs.
type placement struct {
	driver drivers.Driver
	// remote says the job runs outside this worker (on a cluster), so that
	// it outlives the activity: a lost lease leaves it for the next
	// attempt to adopt rather than stopping it (see jobContext).
	remote bool
}

// place chooses the driver for run: the local driver unless the run names
// a registered runtime of kind nomad, resolved now (its latest version) as
// the run's creator sees it, with its authSecret read from the run's
// workspace. What the run cannot run on (a runtime gone, a k8s runtime, a
// credential missing or bound to other hosts, cpu without cpuMhzPerCore)
// is a case problem; a store or cluster failure is returned for Temporal
// to retry.
func (a *Activities) place(ctx context.Context, run eval.Run, who auth.Principal, hs *registry.HarnessSpec, c registry.EvalCase) (placement, error) {
	local := placement{driver: a.Driver}
	if run.Runtime == "" {
		return local, nil
	}
	rt, err := a.Registries.Resolve(ctx, who, registry.Runtime, run.Runtime, "latest")
	if errors.Is(err, derrors.ErrNotFound) {
		return placement{}, caseErr("runtime %q is no longer registered or visible to the run's creator: %v", run.Runtime, err)
	}
	if err != nil {
		return placement{}, err
	}
	spec := rt.Spec.Runtime()
	switch {
	case spec == nil:
		return placement{}, caseErr("%q is not a runtime", run.Runtime)
	case spec.Kind == registry.RuntimeLocal:
		return local, nil
	case spec.Kind != registry.RuntimeNomad:
		return placement{}, caseErr("runtime %q is a %s runtime, which this worker does not run jobs on yet; use a nomad or local runtime", run.Runtime, spec.Kind)
	}
	jo := jobOptions(hs, c)
	if jo.CPUMillicores > 0 && spec.CPUMhzPerCore == nil {
		declaredBy := fmt.Sprintf("harness %s", hs.ID)
		if c.Resources != nil && c.Resources.CPU != nil {
			declaredBy = fmt.Sprintf("case %q", c.ID)
		}
		return placement{}, caseErr("%s declares resources.cpu (%d millicores) but nomad runtime %q sets no cpuMhzPerCore to convert it to MHz; set cpuMhzPerCore on the runtime or drop resources.cpu", declaredBy, jo.CPUMillicores, run.Runtime)
	}
	d, err := a.nomadDriver(ctx, run.Tenant, rt.Owner, rt.Digest, spec)
	if err != nil {
		return placement{}, err
	}
	return placement{driver: a.admit(ctx, d.WithJobOptions(jo), run, spec, jo.MemoryMB), remote: true}, nil
}

// jobOptions are the resources a job declares: per field, the case's
// declaration, else the harness's (a case knows best what it needs).
func jobOptions(hs *registry.HarnessSpec, c registry.EvalCase) nomad.JobOptions {
	var jo nomad.JobOptions
	for _, r := range []*registry.Resources{hs.Resources, c.Resources} {
		if r == nil {
			continue
		}
		if r.CPU != nil {
			jo.CPUMillicores = *r.CPU
		}
		if r.MemoryMb != nil {
			jo.MemoryMB = *r.MemoryMb
		}
		if r.GPU != nil {
			g := *r.GPU
			jo.GPU = &g
		}
	}
	return jo
}

// remoteDrivers keeps one nomad.Driver per runtime of a workspace (and so
// one connection pool per cluster), rebuilt when the runtime's spec or its
// credential changes. It is safe for concurrent use.
type remoteDrivers struct {
	mu sync.Mutex
	m  map[string]remoteDriver // by workspace, owner and runtime id
}

type remoteDriver struct {
	fingerprint string // the spec's digest and a digest of the credential
	d           *nomad.Driver
}

// nomadDriver returns the driver of nomad runtime spec (registered by
// owner with digest), connected as workspace: the runtime's authSecret is
// opened from workspace's secret store with its allowedHosts, through the
// registry service as POST /runtimes/probe does, and every connection
// dials through the probe guard (SVC_PROBE_ALLOW).
func (a *Activities) nomadDriver(ctx context.Context, workspace, owner, digest string, spec *registry.RuntimeSpec) (*nomad.Driver, error) {
	conn, missing, err := a.Registries.NomadConnection(ctx, workspace, spec)
	switch {
	case errors.Is(err, derrors.ErrInvalid):
		return nil, caseErr("nomad runtime %q: %v", spec.ID, err)
	case err != nil:
		return nil, err
	case missing != "":
		return nil, caseErr("nomad runtime %q cannot be reached: %s", spec.ID, missing)
	}
	sum := sha256.New()
	for _, s := range append([]string{digest, conn.Token}, conn.AllowedHosts...) {
		sum.Write([]byte(s))
		sum.Write([]byte{0})
	}
	fp := hex.EncodeToString(sum.Sum(nil))
	key := strings.Join([]string{workspace, owner, spec.ID}, "\x00")

	a.remotes.mu.Lock()
	defer a.remotes.mu.Unlock()
	if cur, ok := a.remotes.m[key]; ok && cur.fingerprint == fp {
		return cur.d, nil
	}
	d, err := nomad.New(nomad.Options{
		Config:       probers.NomadConfig(conn),
		Runtime:      runtimeOptions(spec),
		OTLPEndpoint: a.OTLPEndpoint,
		Logger:       a.logger(),
	})
	if err != nil {
		// An address or a binding the driver refuses: no job can run.
		return nil, caseErr("nomad runtime %q: %v", spec.ID, err)
	}
	if a.remotes.m == nil {
		a.remotes.m = map[string]remoteDriver{}
	}
	if old, ok := a.remotes.m[key]; ok {
		// Jobs still followed through it keep working: Close only drops
		// its idle connections.
		old.d.Close()
	}
	a.remotes.m[key] = remoteDriver{fingerprint: fp, d: d}
	return d, nil
}

// runtimeOptions are the job settings of a nomad runtime spec.
func runtimeOptions(spec *registry.RuntimeSpec) nomad.RuntimeOptions {
	o := nomad.RuntimeOptions{
		TaskDriver:  spec.Runtime,
		Image:       spec.Image,
		Datacenters: spec.Datacenters,
	}
	for _, c := range spec.Constraints {
		o.Constraints = append(o.Constraints, nomad.Constraint{Attribute: c.Attribute, Operator: c.Operator, Value: c.Value})
	}
	if spec.CPUMhzPerCore != nil {
		o.CPUMhzPerCore = *spec.CPUMhzPerCore
	}
	if spec.GPU != nil {
		o.GPU = *spec.GPU
	}
	return o
}

// jobContext is the context a remote job is run under. It ends with ctx;
// when ctx ended because the attempt lost its lease (its worker is
// stopping, its heartbeats timed out) rather than because a cancel was
// requested, its cause is nomad.Detach, so the job is left running for the
// next attempt to adopt instead of being stopped and recorded cancelled.
func jobContext(ctx context.Context) (context.Context, func()) {
	jctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		if cancelRequested(ctx) {
			cancel(context.Cause(ctx))
			return
		}
		cancel(nomad.Detach(context.Cause(ctx)))
	})
	return jctx, func() {
		stop()
		cancel(nil)
	}
}

// stopRemoteJob stops the job of a run on a nomad runtime that is given up
// without its job being followed to its end (FailRun, after the dispatch's
// retries): the job may still run on the cluster, and no later dispatch
// will adopt it. It is best effort: what fails is logged, and the run is
// recorded failed anyway.
func (a *Activities) stopRemoteJob(ctx context.Context, run eval.Run) {
	if run.Runtime == "" {
		return
	}
	who := auth.Principal{Subject: run.CreatedBy, Workspace: run.Tenant, Roles: []auth.Role{auth.RoleMember}}
	rt, err := a.Registries.Resolve(ctx, who, registry.Runtime, run.Runtime, "latest")
	if err != nil {
		if !errors.Is(err, derrors.ErrNotFound) {
			a.logStopError(ctx, run, err)
		}
		return
	}
	spec := rt.Spec.Runtime()
	if spec == nil || spec.Kind != registry.RuntimeNomad {
		return
	}
	d, err := a.nomadDriver(ctx, run.Tenant, rt.Owner, rt.Digest, spec)
	if err == nil {
		// Bounded well inside FailRun's own timeout, so that a cluster
		// that does not answer cannot keep the run from being recorded.
		sctx, cancel := context.WithTimeout(ctx, stopRemoteTimeout)
		err = d.Stop(sctx, run.ID, jobAttempt)
		cancel()
	}
	if err != nil {
		a.logStopError(ctx, run, err)
	}
}

// stopRemoteTimeout bounds stopRemoteJob.
const stopRemoteTimeout = 20 * time.Second

func (a *Activities) logStopError(ctx context.Context, run eval.Run, err error) {
	a.logger().Warn("stopping the nomad job of a run given up", append(activityAttrs(ctx),
		"workspace", run.Tenant, "run", run.ID, "runtime", run.Runtime, "job", nomad.JobID(run.ID, jobAttempt), "error", err)...)
}
