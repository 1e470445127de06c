package k8s

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"svc/drivers"
	"svc/drivers/probe"
	"svc/internal/platform/derrors"
)

// startFailures are the waiting reasons of a container that will not
// start without a change to the spec or the image: the job can never run.
var startFailures = map[string]string{
	"ErrImagePull":               "check the image name and that the cluster may pull it (imagePullSecrets, registry access)",
	"ImagePullBackOff":           "check the image name and that the cluster may pull it (imagePullSecrets, registry access)",
	"InvalidImageName":           "fix the image name",
	"ErrImageNeverPull":          "the image is not on the node and the pull policy forbids pulling it",
	"CreateContainerConfigError": "check the harness's command, env and the runtime's settings",
	"CreateContainerError":       "check the harness's command and the image",
	"RunContainerError":          "check the harness's command and the image",
}

// watch is the state of one Job being followed: informers on the Job and
// on its pod (list, then watch from the list's resourceVersion,
// reconnecting and re-listing as client-go's reflector does) feed a local
// copy that the loop reads on every change.
type watcher struct {
	d       *Driver
	name    string
	jobs    cache.Store
	pods    cache.Store
	changed chan struct{}
	// failures counts consecutive failed list and watch requests.
	failures atomic.Int32

	out     *drivers.Output
	logs    sync.WaitGroup
	logCtx  context.Context
	cutLogs context.CancelFunc
	logPod  string // the pod whose logs are followed
	logErr  logState
}

// notify wakes the loop.
func (w *watcher) notify() {
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

// countingLW counts the consecutive failures of a ListerWatcher's
// requests, so the follow can give up on a cluster that stopped answering
// (the reflector itself retries for ever).
type countingLW struct {
	cache.ListWatch
	w *watcher
}

func (c *countingLW) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	obj, err := c.ListWatch.ListWithContext(ctx, opts)
	c.count(err)
	return obj, err
}

func (c *countingLW) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	wi, err := c.ListWatch.WatchWithContext(ctx, opts)
	c.count(err)
	return wi, err
}

func (c *countingLW) count(err error) {
	if err == nil {
		c.w.failures.Store(0)
		return
	}
	if c.w.failures.Add(1) >= maxWatchFailures {
		c.w.notify()
	}
}

// start runs the informers until run is done and waits, until ctx is, for
// their first list.
func (w *watcher) start(run, ctx context.Context) error {
	ns := w.d.namespace
	jobLW := &countingLW{w: w, ListWatch: cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", w.name).String()
			return w.d.cs.BatchV1().Jobs(ns).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", w.name).String()
			return w.d.cs.BatchV1().Jobs(ns).Watch(ctx, o)
		},
	}}
	sel := labels.SelectorFromSet(labels.Set{LabelJob: w.name}).String()
	podLW := &countingLW{w: w, ListWatch: cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = sel
			return w.d.cs.CoreV1().Pods(ns).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = sel
			return w.d.cs.CoreV1().Pods(ns).Watch(ctx, o)
		},
	}}
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { w.notify() },
		UpdateFunc: func(any, any) { w.notify() },
		DeleteFunc: func(any) { w.notify() },
	}
	var jc, pc cache.Controller
	w.jobs, jc = cache.NewInformerWithOptions(cache.InformerOptions{ListerWatcher: jobLW, ObjectType: &batchv1.Job{}, Handler: h})
	w.pods, pc = cache.NewInformerWithOptions(cache.InformerOptions{ListerWatcher: podLW, ObjectType: &corev1.Pod{}, Handler: h})
	go jc.RunWithContext(run)
	go pc.RunWithContext(run)
	for !jc.HasSynced() || !pc.HasSynced() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-w.changed:
			if w.failures.Load() >= maxWatchFailures {
				return errWatch
			}
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// state reads the Job (nil once deleted) and its newest pod from the
// informers' copies.
func (w *watcher) state() (*batchv1.Job, *corev1.Pod) {
	var job *batchv1.Job
	if obj, ok, _ := w.jobs.GetByKey(w.d.namespace + "/" + w.name); ok {
		job = obj.(*batchv1.Job)
	}
	var pod *corev1.Pod
	for _, obj := range w.pods.List() {
		p := obj.(*corev1.Pod)
		if pod == nil || pod.CreationTimestamp.Before(&p.CreationTimestamp) {
			pod = p
		}
	}
	return job, pod
}

// containerStatus returns the status of container name in pod.
func containerStatus(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	if pod == nil {
		return nil
	}
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == name {
			return &pod.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// startedAt is when the harness container started, zero if it has not.
func startedAt(cs *corev1.ContainerStatus) time.Time {
	switch {
	case cs == nil:
	case cs.State.Running != nil:
		return cs.State.Running.StartedAt.Time
	case cs.State.Terminated != nil:
		return cs.State.Terminated.StartedAt.Time
	}
	return time.Time{}
}

// podEnded reports whether the pod has ended (every container, the trace
// sidecar included, has stopped).
func podEnded(pod *corev1.Pod) bool {
	return pod != nil && (pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed)
}

// follow watches Job job until its pod has ended, the harness times out
// or ctx is done. ended says whether the Job is over, so that its Secret
// may go.
func (d *Driver) follow(ctx context.Context, job *batchv1.Job, j drivers.Job) (res drivers.Result, ended bool, err error) {
	logCtx, stopLogs := context.WithCancel(context.WithoutCancel(ctx))
	defer stopLogs()
	w := &watcher{d: d, name: job.Name, changed: make(chan struct{}, 1), out: drivers.NewOutput(j.Log), logCtx: logCtx, cutLogs: stopLogs}
	defer w.logs.Wait()
	defer stopLogs() // before Wait: the streams end when Run returns

	// The informers outlive ctx: a cancelled Run still watches its pod
	// stop (see stopped).
	infCtx, stopInformers := context.WithCancel(context.WithoutCancel(ctx))
	defer stopInformers()
	if err := w.start(infCtx, ctx); err != nil {
		if ctx.Err() != nil {
			return w.cancelled(ctx)
		}
		return drivers.Result{}, false, d.describe(ctx, "following job "+job.Name, err)
	}

	var deadline time.Time
	// seen says the informer has shown the Job: its first list may come
	// from the API server's watch cache, a moment behind the create.
	seen := false
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		cur, pod := w.state()
		seen = seen || cur != nil
		hs := containerStatus(pod, harnessContainer)
		if hs != nil && (hs.State.Running != nil || hs.State.Terminated != nil) {
			w.startLogs(ctx, pod.Name)
		}
		if j.Timeout > 0 && deadline.IsZero() && !startedAt(hs).IsZero() {
			// From the harness's start (an adopted Job keeps its
			// deadline); a node clock ahead of ours does not extend it.
			deadline = earliest(startedAt(hs), time.Now()).Add(j.Timeout)
			timer.Reset(time.Until(deadline))
		}
		switch {
		case cur != nil && cur.DeletionTimestamp != nil:
			// Being deleted: by an earlier, cancelled Run of this attempt,
			// or by someone else.
			res, err := w.stopped(ctx, pod, false)
			return res, true, err
		case podEnded(pod):
			res, err := w.finish(ctx, pod)
			return res, true, err
		case cur == nil && seen:
			// Deleted by someone else, pod and all.
			res, err := w.stopped(ctx, pod, false)
			return res, true, err
		case cur == nil:
			// Not in the informer's first list yet.
		case condition(cur, batchv1.JobFailed) != nil && condition(cur, batchv1.JobFailed).Reason == batchv1.JobReasonDeadlineExceeded:
			// The cluster's own bound (activeDeadlineSeconds) ended it.
			res, err := w.stop(ctx, pod, true)
			return res, true, err
		case condition(cur, batchv1.JobFailed) != nil && pod == nil:
			c := condition(cur, batchv1.JobFailed)
			return drivers.Result{}, true, fmt.Errorf("k8s job %s failed without a pod to read (%s: %s)", job.Name, c.Reason, probe.Clean(c.Message, d.creds...))
		}
		if why := startFailure(hs); why != "" {
			d.deleteJob(ctx, job.Name)
			return drivers.Result{}, true, derrors.Invalidf("k8s job %s: the harness container cannot start: %s", job.Name, probe.Clean(why, d.creds...))
		}

		select {
		case <-ctx.Done():
			if drivers.Detaching(ctx) {
				return drivers.Result{}, false, detachedErr(ctx, job.Name)
			}
			res, err := w.stop(ctx, pod, false)
			return res, true, err
		case <-timer.C:
			res, err := w.stop(ctx, pod, true)
			return res, true, err
		case <-w.changed:
			if w.failures.Load() >= maxWatchFailures {
				return drivers.Result{}, false, fmt.Errorf("k8s driver: following job %s at %s: %w (the job is kept; a retry adopts it)", job.Name, d.server, errWatch)
			}
		}
	}
}

// startFailure says why a harness container that is waiting will never
// start, or "" when it may yet.
func startFailure(cs *corev1.ContainerStatus) string {
	if cs == nil || cs.State.Waiting == nil {
		return ""
	}
	fix, ok := startFailures[cs.State.Waiting.Reason]
	if !ok {
		return ""
	}
	msg := cs.State.Waiting.Reason
	if cs.State.Waiting.Message != "" {
		msg += ": " + cs.State.Waiting.Message
	}
	return msg + " (" + fix + ")"
}

// startLogs starts following the harness's output and the trace
// sidecar's log in pod, once.
func (w *watcher) startLogs(ctx context.Context, pod string) {
	if w.logPod != "" {
		return
	}
	w.logPod = pod
	streams, err := w.d.openHarnessLogs(w.logCtx, pod)
	if err != nil {
		w.logErr.set(w.d.describe(w.logCtx, "reading the harness's output", err))
		return
	}
	tr, err := w.d.openLog(w.logCtx, pod, traceContainer, "")
	if err != nil {
		w.logErr.set(w.d.describe(w.logCtx, "reading the trace sidecar's log", err))
	} else {
		streams[drivers.TraceStream] = tr
	}
	for stream, r := range streams {
		w.logs.Add(1)
		go func() {
			defer w.logs.Done()
			if err := copyLog(w.logCtx, r, stream, w.out); err != nil && w.logCtx.Err() == nil {
				err = w.d.describe(w.logCtx, "reading the harness's "+stream, err)
				w.d.log.Warn("k8s driver: following a log", "job", w.name, "pod", pod, "stream", stream, "err", err)
				w.logErr.set(err)
			}
		}()
	}
}

// drainLogs waits up to LogDrain for the log streams to end on their own
// (the kubelet ends a followed log when its container has stopped), then
// cuts them.
func (w *watcher) drainLogs() {
	drivers.Drain(&w.logs, w.d.logDrain, w.cutLogs)
}

// finish builds the Result of a Job whose pod has ended.
func (w *watcher) finish(ctx context.Context, pod *corev1.Pod) (drivers.Result, error) {
	hs := containerStatus(pod, harnessContainer)
	if hs == nil || hs.State.Terminated == nil || startedAt(hs).IsZero() {
		// The pod ended without running the harness (evicted, its node
		// lost): the retried activity makes another attempt.
		return drivers.Result{}, fmt.Errorf("k8s job %s: pod %s ended (%s) before the harness ran: %s", w.name, pod.Name, pod.Status.Phase, probe.Clean(pod.Status.Reason+" "+pod.Status.Message, w.d.creds...))
	}
	w.startLogs(ctx, pod.Name)
	w.drainLogs()
	t := hs.State.Terminated
	res := drivers.Result{ExitCode: int(t.ExitCode)}
	if t.Reason == "OOMKilled" {
		res.ExitCode = -1
	}
	if t.FinishedAt.After(t.StartedAt.Time) {
		res.Duration = t.FinishedAt.Sub(t.StartedAt.Time)
	}
	w.out.Fill(&res)
	if err := w.logErr.get(); err != nil {
		// The output is the harness's answer: rather than a result
		// without it, an error, and the retried activity adopts the
		// ended Job and reads its logs again from the start.
		return drivers.Result{}, fmt.Errorf("%w (the job %s is kept; a retry reads its output again)", err, w.name)
	}
	return res, nil
}

// stop deletes a cancelled (or timed-out) Job with foreground propagation
// and returns what it left.
func (w *watcher) stop(ctx context.Context, pod *corev1.Pod, timedOut bool) (drivers.Result, error) {
	w.d.deleteJob(ctx, w.name)
	return w.stopped(ctx, pod, timedOut)
}

// stopped waits up to StopWait for the pod of a Job being deleted to end
// or go, and returns what it left, TimedOut or Cancelled.
func (w *watcher) stopped(ctx context.Context, pod *corev1.Pod, timedOut bool) (drivers.Result, error) {
	wait := time.NewTimer(w.d.stopWait)
	defer wait.Stop()
loop:
	for pod != nil && !podEnded(pod) {
		select {
		case <-wait.C:
			break loop
		case <-w.changed:
			_, p := w.state()
			if p == nil {
				// Deleted: what was followed of its logs is what is left.
				break loop
			}
			pod = p
		}
	}
	// Exit code -1, as for a job killed by a signal: the harness was
	// stopped (SIGTERM, then SIGKILL), whatever it exited with then.
	res := drivers.Result{ExitCode: -1}
	if hs := containerStatus(pod, harnessContainer); !startedAt(hs).IsZero() || w.logPod != "" {
		w.drainLogs()
		w.out.Fill(&res)
		if hs != nil && hs.State.Terminated != nil {
			if t := hs.State.Terminated; t.FinishedAt.After(t.StartedAt.Time) {
				res.Duration = t.FinishedAt.Sub(t.StartedAt.Time)
			}
		}
	}
	res.TimedOut, res.Cancelled = timedOut, !timedOut
	return res, nil
}

// cancelled is the Result of a follow cancelled before it could watch.
func (w *watcher) cancelled(ctx context.Context) (drivers.Result, bool, error) {
	if drivers.Detaching(ctx) {
		return drivers.Result{}, false, detachedErr(ctx, w.name)
	}
	w.d.deleteJob(ctx, w.name)
	return drivers.Result{ExitCode: -1, Cancelled: true}, true, nil
}

func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
