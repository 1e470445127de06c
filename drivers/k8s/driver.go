package k8s

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"svc/drivers"
	"svc/drivers/probe"
	"svc/internal/platform/derrors"
	"svc/internal/platform/netguard"
)

// Name is the driver's name as it appears in a Result.
const Name = "k8s"

// Defaults of Options.
const (
	// DefaultHelperImage runs the pod's two helpers (copying the harness's
	// files into the work directory, printing the trace file at the end):
	// any image with a POSIX sh, cat and cp will do.
	DefaultHelperImage    = "busybox:1.37"
	DefaultKillGrace      = 5 * time.Second
	DefaultStopWait       = 30 * time.Second
	DefaultLogDrain       = 10 * time.Second
	DefaultStartAllowance = 10 * time.Minute
	DefaultTTL            = time.Hour
	// maxWatchFailures is how many consecutive failed list or watch
	// requests end a follow (the reflector backs off between them).
	maxWatchFailures = 6
	// cleanupTimeout bounds each request made after ctx is done (deleting
	// the Job, the Secret).
	cleanupTimeout = 30 * time.Second
)

// Options configure a Driver.
type Options struct {
	// Config is how to reach the cluster; its credentials only
	// authenticate the control plane and never reach a job.
	Config Config
	// Runtime are the runtime's job settings.
	Runtime RuntimeOptions
	// OTLPEndpoint is the default for Job.OTLPEndpoint.
	OTLPEndpoint string
	// HelperImage is the image of the pod's helper containers; ""
	// means DefaultHelperImage.
	HelperImage string
	// KillGrace is the pod's terminationGracePeriodSeconds, between
	// SIGTERM and SIGKILL; 0 means DefaultKillGrace.
	KillGrace time.Duration
	// StopWait is how long, after deleting a cancelled or timed-out Job,
	// Run waits for its pod to end; 0 means DefaultStopWait.
	StopWait time.Duration
	// LogDrain is how long, once the pod has ended, Run waits for the log
	// streams to end; 0 means DefaultLogDrain.
	LogDrain time.Duration
	// StartAllowance is added to the harness's timeout in the Job's
	// activeDeadlineSeconds, which counts from the Job's start and so
	// includes scheduling and pulling images; 0 means DefaultStartAllowance.
	StartAllowance time.Duration
	// TTL is the Job's ttlSecondsAfterFinished: how long a finished Job
	// (and its pod's logs) stays for a retried activity to adopt and read
	// again; 0 means DefaultTTL.
	TTL time.Duration
	// Logger receives what goes wrong outside a Result (a Secret that
	// could not be deleted); nil means slog.Default().
	Logger *slog.Logger
}

// Driver runs process harnesses as Kubernetes batch/v1 Jobs, one Job per
// attempt of a run. It is safe for concurrent use.
type Driver struct {
	cs             kubernetes.Interface
	http           *http.Client
	server         string // the API server, for messages
	namespace      string
	creds          []string // what no message may repeat
	rt             RuntimeOptions
	job            JobOptions
	otlpEndpoint   string
	helperImage    string
	killGrace      time.Duration
	stopWait       time.Duration
	logDrain       time.Duration
	startAllowance time.Duration
	ttl            time.Duration
	log            *slog.Logger
	// split says whether the cluster serves stdout and stderr apart
	// (pods/log's stream, behind the PodLogsQuerySplitStreams feature
	// gate): 0 not known yet, splitYes, splitNo. Shared by the copies
	// WithJobOptions makes.
	split *atomic.Int32
}

const (
	splitYes = 1
	splitNo  = 2
)

var _ drivers.Driver = (*Driver)(nil)

// New returns a Driver for the cluster and runtime of o; it fails only
// when the connection is refused (see NewClient).
func New(o Options) (*Driver, error) {
	c, err := NewClient(o.Config)
	if err != nil {
		return nil, err
	}
	hc, err := rest.HTTPClientFor(c.REST)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Auth, err)
	}
	cs, err := kubernetes.NewForConfigAndClient(c.REST, hc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Auth, err)
	}
	d := &Driver{
		cs:             cs,
		http:           hc,
		server:         c.REST.Host,
		namespace:      c.Namespace,
		creds:          []string{o.Config.Token, c.REST.BearerToken, c.REST.Password},
		rt:             o.Runtime,
		otlpEndpoint:   o.OTLPEndpoint,
		helperImage:    cmp.Or(o.HelperImage, DefaultHelperImage),
		killGrace:      drivers.OrDefault(o.KillGrace, DefaultKillGrace),
		stopWait:       drivers.OrDefault(o.StopWait, DefaultStopWait),
		logDrain:       drivers.OrDefault(o.LogDrain, DefaultLogDrain),
		startAllowance: drivers.OrDefault(o.StartAllowance, DefaultStartAllowance),
		ttl:            drivers.OrDefault(o.TTL, DefaultTTL),
		log:            cmp.Or(o.Logger, slog.Default()),
		split:          new(atomic.Int32),
	}
	return d, nil
}

// WithJobOptions returns a Driver that runs jobs with the resources jo
// declares, sharing d's connection.
func (d *Driver) WithJobOptions(jo JobOptions) *Driver {
	c := *d
	c.job = jo
	return &c
}

// Namespace is where the driver's Jobs go.
func (d *Driver) Namespace() string { return d.namespace }

// Rules are the rights the runtime's credentials need in its namespace,
// and all they need: a Role with them, bound to the credentials' user, is
// what docs/runtimes.md asks operators for. Secrets are only created and
// deleted, never read: the control plane cannot read another workload's
// Secret with them.
func Rules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"create", "get", "list", "watch", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create"}},
	}
}

// Close releases the driver's idle connections; Runs still following a
// Job keep working.
func (d *Driver) Close() { d.http.CloseIdleConnections() }

// Run runs attempt j.Attempt of run j.RunID as the Job JobName(j.RunID,
// j.Attempt) and follows it to its end: see drivers.Driver.
//
// When that Job already exists (a retried activity calling Run again for
// the same attempt) Run adopts it and follows it instead of creating
// another. A Job that could never run (no image, an image that cannot be
// pulled, a spec the cluster refuses) is an error wrapping
// derrors.ErrInvalid that says what to fix; a non-zero exit, a timeout or
// a cancel are a Result. When the watch itself fails (the cluster
// unreachable for a while) Run returns an error and leaves the Job
// running, for the retry to adopt; so does a cancel whose cause
// drivers.Detach made. Any other cancel of ctx deletes the Job
// (foreground propagation).
func (d *Driver) Run(ctx context.Context, j drivers.Job) (drivers.Result, error) {
	if err := drivers.CheckJob(Name, j); err != nil {
		return drivers.Result{}, err
	}
	name := JobName(j.RunID, j.Attempt)
	sp, err := d.jobSpec(name, j)
	if err != nil {
		return drivers.Result{}, err
	}
	job, err := d.lookup(ctx, name, j.RunID)
	image := sp.image
	switch {
	case err != nil:
	case job != nil:
		image = jobImage(job)
		if !finished(job) && job.DeletionTimestamp == nil {
			// Created by a Run that may have died before its inputs.
			err = d.createInputs(ctx, job, sp, j)
		}
	default:
		job, err = d.create(ctx, sp, j)
		if job != nil {
			image = jobImage(job)
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			if drivers.Detaching(ctx) {
				return drivers.Result{}, detachedErr(ctx, name)
			}
			// Cancelled while dispatching: the creation may have reached
			// the cluster even though its answer did not come.
			d.deleteJob(ctx, name)
			d.deleteSecret(ctx, name)
			return drivers.Result{ExitCode: -1, Cancelled: true, Driver: Name, OS: "linux", Image: image}, nil
		}
		return drivers.Result{}, err
	}

	res, ended, err := d.follow(ctx, job, j)
	if ended && len(j.Secrets) > 0 {
		d.deleteSecret(ctx, name)
	}
	if err != nil {
		return drivers.Result{}, err
	}
	res.Driver = Name
	res.OS = "linux"
	res.Image = image
	return res, nil
}

// detachedErr is what Run returns when ctx was detached from Job name.
func detachedErr(ctx context.Context, name string) error {
	return fmt.Errorf("k8s job %s: %w", name, context.Cause(ctx))
}

// lookup returns Job name if it exists, refusing a Job of that name that
// this driver did not create for runID.
func (d *Driver) lookup(ctx context.Context, name, runID string) (*batchv1.Job, error) {
	job, err := d.cs.BatchV1().Jobs(d.namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, d.describe(ctx, "looking up job "+name, err)
	}
	if job.Annotations[annotationRunID] != runID || job.Labels[labelManagedBy] != managedBy {
		return nil, derrors.Conflictf("k8s job %s exists in namespace %s but was not created by this service for run %s; delete it or use another namespace", name, d.namespace, runID)
	}
	return job, nil
}

// create creates the Job, then its inputs (the case ConfigMap and the
// secrets Secret, owned by the Job so that the cluster deletes them with
// it). The pod cannot start before its volumes exist, so it never runs
// without them. When another Run of this attempt created the Job first,
// create adopts that one.
func (d *Driver) create(ctx context.Context, sp spec, j drivers.Job) (*batchv1.Job, error) {
	job, err := d.cs.BatchV1().Jobs(d.namespace).Create(ctx, sp.job, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		job, err = d.lookup(ctx, sp.job.Name, j.RunID)
		if err == nil && job == nil {
			err = fmt.Errorf("k8s job %s was deleted while being created; retry", sp.job.Name)
		}
		if err != nil {
			return nil, err
		}
	} else if err != nil {
		if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
			return nil, derrors.Invalidf("the cluster refused job %s: %s", sp.job.Name, probe.Clean(statusMessage(err), d.creds...))
		}
		return nil, d.describe(ctx, "creating job "+sp.job.Name, err)
	}
	if err := d.createInputs(ctx, job, sp, j); err != nil {
		if ctx.Err() == nil {
			d.deleteJob(ctx, job.Name)
		}
		return nil, err
	}
	return job, nil
}

// createInputs creates what the Job's pod mounts, unless it exists.
func (d *Driver) createInputs(ctx context.Context, job *batchv1.Job, sp spec, j drivers.Job) error {
	input := sp.input.DeepCopy()
	input.OwnerReferences = []metav1.OwnerReference{ownerRef(job)}
	_, err := d.cs.CoreV1().ConfigMaps(d.namespace).Create(ctx, input, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return d.describe(ctx, "creating the job's input ConfigMap "+input.Name, err)
	}
	if len(j.Secrets) == 0 {
		return nil
	}
	sec, err := d.secretObject(job, j)
	if err != nil {
		return err
	}
	if _, err := d.cs.CoreV1().Secrets(d.namespace).Create(ctx, sec, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		// Never the answer's message: it may repeat what was sent.
		return d.describe(ctx, "creating the job's secrets Secret "+sec.Name, err)
	}
	return nil
}

// Stop deletes the Job of attempt attempt of run runID (foreground, as a
// cancel does) and its Secret, when this service created that Job for
// the run: what a caller that gives the run up without following its Job
// (the dispatch's retries exhausted) does, so that nothing of it is left
// running. No such Job is no error. Every request is bounded by ctx alone.
func (d *Driver) Stop(ctx context.Context, runID string, attempt int) error {
	name := JobName(runID, attempt)
	job, err := d.lookup(ctx, name, runID)
	if err != nil || job == nil {
		return err
	}
	if err := d.cs.BatchV1().Jobs(d.namespace).Delete(ctx, name, foreground()); err != nil && !apierrors.IsNotFound(err) {
		return d.describe(ctx, "deleting job "+name, err)
	}
	if err := d.cs.CoreV1().Secrets(d.namespace).Delete(ctx, SecretName(name), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return d.describe(ctx, "deleting the job's Secret "+SecretName(name), err)
	}
	return nil
}

// foreground deletes an object after its dependents (the pod, the
// ConfigMap, the Secret): the Job stays visible, with a deletion
// timestamp, until its pod is gone.
func foreground() metav1.DeleteOptions {
	return metav1.DeleteOptions{PropagationPolicy: ptr(metav1.DeletePropagationForeground)}
}

// deleteJob deletes Job name (foreground), even when ctx is done.
func (d *Driver) deleteJob(ctx context.Context, name string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := d.cs.BatchV1().Jobs(d.namespace).Delete(ctx, name, foreground()); err != nil && !apierrors.IsNotFound(err) {
		d.log.Warn("k8s driver: deleting job", "job", name, "namespace", d.namespace, "err", d.describe(ctx, "deleting", err))
	}
}

// deleteSecret deletes the Job's Secret, even when ctx is done.
func (d *Driver) deleteSecret(ctx context.Context, name string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := d.cs.CoreV1().Secrets(d.namespace).Delete(ctx, SecretName(name), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		d.log.Warn("k8s driver: deleting the job's Secret", "job", name, "secret", SecretName(name), "err", d.describe(ctx, "deleting", err))
	}
}

// finished reports whether the Job controller has ended the Job.
func finished(job *batchv1.Job) bool {
	return condition(job, batchv1.JobComplete) != nil || condition(job, batchv1.JobFailed) != nil
}

// condition returns the Job's condition of type t when it holds.
func condition(job *batchv1.Job, t batchv1.JobConditionType) *batchv1.JobCondition {
	if job == nil {
		return nil
	}
	for i := range job.Status.Conditions {
		c := &job.Status.Conditions[i]
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return c
		}
	}
	return nil
}

// jobImage reads the image the Job's harness container runs in: for an
// adopted Job, what it really runs.
func jobImage(job *batchv1.Job) string {
	for _, c := range job.Spec.Template.Spec.Containers {
		if c.Name == harnessContainer {
			return c.Image
		}
	}
	return ""
}

// statusMessage is the message of a refusal the API server explains (a
// validation error names the field), for errors that say what to fix.
func statusMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return status.Status().Message
	}
	return "refused"
}

// describe says in the service's words why a request failed: the status
// that came back (never the body, which could repeat what was sent), or
// why none did. An address the guard refuses wraps derrors.ErrInvalid.
func (d *Driver) describe(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("k8s driver: %s: %w", what, ctx.Err())
	}
	var refused *netguard.RefusedError
	if errors.As(err, &refused) {
		// The guard (SVC_PROBE_ALLOW) refuses the address: no retry can
		// reach it, so the job can never run.
		return derrors.Invalidf("k8s driver: %s at %s: %s", what, d.server, probe.Describe(err))
	}
	var why string
	var status apierrors.APIStatus
	switch {
	case apierrors.IsUnauthorized(err):
		why = "401 Unauthorized: the cluster refused the runtime's credentials (check its authSecret or kubeconfigSecret)"
	case apierrors.IsForbidden(err):
		why = fmt.Sprintf("403 Forbidden: the runtime's credentials may not do this in namespace %s (check the Role in docs/runtimes.md)", d.namespace)
	case errors.As(err, &status) && status.Status().Code != 0:
		why = fmt.Sprintf("the cluster answered HTTP %d (%s)", status.Status().Code, status.Status().Reason)
	default:
		why = probe.Describe(err)
	}
	return fmt.Errorf("k8s driver: %s at %s: %s", what, d.server, why)
}

// errWatch ends a follow whose list and watch requests kept failing.
var errWatch = errors.New("the cluster stopped answering the watch of the job and its pod")

// logState collects the first failure of a log stream, which leaves the
// output incomplete.
type logState struct {
	mu  sync.Mutex
	err error
}

func (l *logState) set(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.err = cmp.Or(l.err, err)
}

func (l *logState) get() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}
