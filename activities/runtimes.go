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

	corev1 "k8s.io/api/core/v1"

	"svc/auth"
	"svc/drivers"
	"svc/drivers/k8s"
	"svc/drivers/nomad"
	"svc/drivers/runner"
	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
	"svc/internal/platform/derrors"
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
	// selfReported says the job runs on a self-hosted runner, whose
	// result the service cannot vouch for (provenance.attestation
	// self_reported).
	selfReported bool
}

// selfHosted is the placement of a run on runner runtime spec: its job
// waits in the workspace's lease queue for a runner (drivers/runner).
func (a *Activities) selfHosted(run eval.Run, spec *registry.RuntimeSpec) placement {
	o := runner.Options{Queue: a.RunnerQueue, Workspace: run.Tenant, Runtime: spec.ID, ScorecardID: run.ParentScorecardID, Logger: a.logger()}
	return placement{driver: runner.New(o), remote: true, selfReported: true}
}

// place chooses the driver for run: the local driver unless the run names
// a registered runtime of kind nomad or k8s, resolved now (its latest
// version) as the run's creator sees it, with its credentials read from
// the run's workspace. What the run cannot run on (a runtime gone, a
// credential missing or bound to other hosts, cpu without cpuMhzPerCore on
// nomad) is a case problem; a store or cluster failure is returned for
// Temporal to retry.
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
	case spec.Kind == registry.RuntimeRunner:
		return a.selfHosted(run, spec), nil
	case spec.Kind == registry.RuntimeK8s:
		jo := jobOptions(hs, c)
		d, err := a.k8sDriver(ctx, run.Tenant, rt.Owner, rt.Digest, spec)
		if err != nil {
			return placement{}, err
		}
		kd := d.WithJobOptions(k8s.JobOptions{CPUMillicores: jo.CPUMillicores, MemoryMB: jo.MemoryMB, GPU: jo.GPU})
		return placement{driver: a.admit(ctx, kd, run, spec, jo.MemoryMB), remote: true}, nil
	case spec.Kind != registry.RuntimeNomad:
		return placement{}, caseErr("runtime %q is a %s runtime, which this worker does not run jobs on; use a local, nomad, k8s or runner runtime", run.Runtime, spec.Kind)
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

// remoteDrivers keeps one driver per nomad or k8s runtime of a workspace
// (and so one connection pool per cluster), rebuilt when the runtime's
// spec or its credential changes. It is safe for concurrent use.
type remoteDrivers struct {
	mu sync.Mutex
	m  map[string]remoteDriver // by workspace, owner and runtime id
}

// remoteDriver is one kept driver: nomad or k8s.
type remoteDriver struct {
	fingerprint string // the spec's digest and a digest of the credential
	nomad       *nomad.Driver
	k8s         *k8s.Driver
}

// close drops the driver's idle connections; jobs still followed through
// it keep working.
func (r remoteDriver) close() {
	if r.nomad != nil {
		r.nomad.Close()
	}
	if r.k8s != nil {
		r.k8s.Close()
	}
}

// fingerprint identifies a runtime's spec and credentials, so a kept
// driver is rebuilt when either changes.
func fingerprint(parts ...string) string {
	sum := sha256.New()
	for _, s := range parts {
		sum.Write([]byte(s))
		sum.Write([]byte{0})
	}
	return hex.EncodeToString(sum.Sum(nil))
}

// remote returns the kept driver of key when its fingerprint is fp, else
// builds one with build and keeps it.
func (a *Activities) remote(key, fp string, build func() (remoteDriver, error)) (remoteDriver, error) {
	a.remotes.mu.Lock()
	defer a.remotes.mu.Unlock()
	if cur, ok := a.remotes.m[key]; ok && cur.fingerprint == fp {
		return cur, nil
	}
	d, err := build()
	if err != nil {
		return remoteDriver{}, err
	}
	d.fingerprint = fp
	if a.remotes.m == nil {
		a.remotes.m = map[string]remoteDriver{}
	}
	if old, ok := a.remotes.m[key]; ok {
		old.close()
	}
	a.remotes.m[key] = d
	return d, nil
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
	fp := fingerprint(append([]string{"nomad", digest, conn.Token}, conn.AllowedHosts...)...)
	key := strings.Join([]string{workspace, owner, spec.ID}, "\x00")
	r, err := a.remote(key, fp, func() (remoteDriver, error) {
		d, err := nomad.New(nomad.Options{
			Config:       nomadConfig(conn),
			Runtime:      runtimeOptions(spec),
			OTLPEndpoint: a.OTLPEndpoint,
			Logger:       a.logger(),
		})
		if err != nil {
			// An address or a binding the driver refuses: no job can run.
			return remoteDriver{}, caseErr("nomad runtime %q: %v", spec.ID, err)
		}
		return remoteDriver{nomad: d}, nil
	})
	if err != nil {
		return nil, err
	}
	if r.nomad == nil {
		return nil, fmt.Errorf("runtime %q changed kind while in use; retry", spec.ID)
	}
	return r.nomad, nil
}

// k8sDriver returns the driver of k8s runtime spec (registered by owner
// with digest), connected as workspace with the spec's auth precedence
// (kubeconfigSecret, then server + authSecret, then context), through the
// registry service as POST /runtimes/probe does
// (service.K8sConnection): the same credentials, bindings and guard.
func (a *Activities) k8sDriver(ctx context.Context, workspace, owner, digest string, spec *registry.RuntimeSpec) (*k8s.Driver, error) {
	conn, missing, err := a.Registries.K8sConnection(ctx, workspace, spec)
	switch {
	case errors.Is(err, derrors.ErrInvalid):
		return nil, caseErr("k8s runtime %q: %v", spec.ID, err)
	case err != nil:
		return nil, err
	case missing != "":
		return nil, caseErr("k8s runtime %q cannot be reached: %s", spec.ID, missing)
	}
	fp := fingerprint(append([]string{"k8s", digest, conn.Token, string(conn.Kubeconfig)}, conn.AllowedHosts...)...)
	key := strings.Join([]string{workspace, owner, spec.ID}, "\x00")
	r, err := a.remote(key, fp, func() (remoteDriver, error) {
		d, err := k8s.New(k8s.Options{
			Config:       k8sConfig(conn),
			Runtime:      k8sRuntimeOptions(spec),
			OTLPEndpoint: a.OTLPEndpoint,
			Logger:       a.logger(),
		})
		if err != nil {
			// Credentials or a binding the driver refuses: no job can run.
			return remoteDriver{}, caseErr("k8s runtime %q: %v", spec.ID, err)
		}
		return remoteDriver{k8s: d}, nil
	})
	if err != nil {
		return nil, err
	}
	if r.k8s == nil {
		return nil, fmt.Errorf("runtime %q changed kind while in use; retry", spec.ID)
	}
	return r.k8s, nil
}

// nomadConfig is the driver's connection for what the registry service
// resolved, as internal/probers builds it for a probe.
func nomadConfig(c registry.NomadConnection) nomad.Config {
	return nomad.Config{Addr: c.Addr, Namespace: c.Namespace, Token: c.Token, AllowedHosts: c.AllowedHosts, Guard: c.Guard}
}

// k8sConfig is the driver's connection for what the registry service
// resolved: the same for a probe and for the worker's jobs.
func k8sConfig(c registry.K8sConnection) k8s.Config {
	return k8s.Config{Server: c.Server, Context: c.Context, Namespace: c.Namespace, Token: c.Token,
		Kubeconfig: c.Kubeconfig, AllowedHosts: c.AllowedHosts, Guard: c.Guard, OperatorNamespaces: c.OperatorNamespaces}
}

// k8sRuntimeOptions are the job settings of a k8s runtime spec.
func k8sRuntimeOptions(spec *registry.RuntimeSpec) k8s.RuntimeOptions {
	o := k8s.RuntimeOptions{Image: spec.Image, RuntimeClass: spec.RuntimeClass, NodeSelector: spec.NodeSelector}
	for _, t := range spec.Tolerations {
		op := corev1.TolerationOpEqual
		if t.Operator != "" {
			op = corev1.TolerationOperator(t.Operator)
		}
		o.Tolerations = append(o.Tolerations, corev1.Toleration{
			Key: t.Key, Operator: op, Value: t.Value, Effect: corev1.TaintEffect(t.Effect), TolerationSeconds: t.TolerationSeconds,
		})
	}
	if spec.GPU != nil {
		o.GPU = *spec.GPU
	}
	return o
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
// requested, its cause is drivers.Detach's, which every remote driver
// reads, so the job is left running for the next attempt to adopt instead
// of being stopped and recorded cancelled.
func jobContext(ctx context.Context) (context.Context, func()) {
	jctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		if cancelRequested(ctx) {
			cancel(context.Cause(ctx))
			return
		}
		cancel(drivers.Detach(context.Cause(ctx)))
	})
	return jctx, func() {
		stop()
		cancel(nil)
	}
}

// stopRemoteJob stops the job of a run on a nomad or k8s runtime that is
// given up without its job being followed to its end (FailRun, after the
// dispatch's retries): the job may still run on the cluster, and no later
// dispatch will adopt it. It is best effort: what fails is logged, and the
// run is recorded failed anyway.
func (a *Activities) stopRemoteJob(ctx context.Context, run eval.Run) {
	if run.Runtime == "" {
		return
	}
	who := auth.Principal{Subject: run.CreatedBy, Workspace: run.Tenant, Roles: []auth.Role{auth.RoleMember}}
	rt, err := a.Registries.Resolve(ctx, who, registry.Runtime, run.Runtime, "latest")
	if err != nil {
		if !errors.Is(err, derrors.ErrNotFound) {
			a.logStopError(ctx, run, "", err)
		}
		return
	}
	spec := rt.Spec.Runtime()
	if spec == nil {
		return
	}
	// Bounded well inside FailRun's own timeout, so that a cluster that
	// does not answer cannot keep the run from being recorded.
	sctx, cancel := context.WithTimeout(ctx, stopRemoteTimeout)
	defer cancel()
	var job string
	switch spec.Kind {
	case registry.RuntimeRunner:
		// Its runner learns of it on its next heartbeat; a queued job is
		// never leased.
		// Deleted: a queued job is never leased, and the runner running
		// it learns on its next heartbeat (404) and kills it.
		job = eval.RunnerJobID(run.ID, jobAttempt)
		err = a.Store.DeleteRunnerJob(sctx, run.Tenant, job)
	case registry.RuntimeNomad:
		job = nomad.JobID(run.ID, jobAttempt)
		var d *nomad.Driver
		if d, err = a.nomadDriver(ctx, run.Tenant, rt.Owner, rt.Digest, spec); err == nil {
			err = d.Stop(sctx, run.ID, jobAttempt)
		}
	case registry.RuntimeK8s:
		job = k8s.JobName(run.ID, jobAttempt)
		var d *k8s.Driver
		if d, err = a.k8sDriver(ctx, run.Tenant, rt.Owner, rt.Digest, spec); err == nil {
			err = d.Stop(sctx, run.ID, jobAttempt)
		}
	default:
		return
	}
	if err != nil {
		a.logStopError(ctx, run, job, err)
	}
}

// stopRemoteTimeout bounds stopRemoteJob.
const stopRemoteTimeout = 20 * time.Second

func (a *Activities) logStopError(ctx context.Context, run eval.Run, job string, err error) {
	a.logger().Warn("stopping the remote job of a run given up", append(activityAttrs(ctx),
		"workspace", run.Tenant, "run", run.ID, "runtime", run.Runtime, "job", job, "error", err)...)
}
