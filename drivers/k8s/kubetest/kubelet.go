package kubetest

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Kubelet plays a node for the tests: it is registered as a Node whose
// kubelet endpoint is a loopback HTTPS server (certificate from the
// cluster's CA, which the API server verifies) answering
// /containerLogs/{namespace}/{pod}/{container}, the path the API server
// proxies pods/log to. It also does, through the API, what the Job
// controller and a kubelet would do to a Job's pod: CreatePod, Run, Exit,
// Wait. Logs are written with Write and end with the container (Exit);
// a followed log streams what is written until then.
type Kubelet struct {
	// Node is the registered Node's name.
	Node string
	c    *Cluster
	srv  *httptest.Server

	mu       sync.Mutex
	logs     map[string]*containerLog // by namespace/pod/container
	requests []string                 // the paths and queries served
}

type containerLog struct {
	chunks  []chunk
	ended   bool
	changed chan struct{} // closed and replaced on every change
}

// chunk is one write of a container to stdout or stderr.
type chunk struct {
	stderr bool
	data   string
}

// read is what a log request for stream ("Stdout", "Stderr", else both
// interleaved, as a kubelet serves them) sees of the log.
func (l *containerLog) read(stream string) []byte {
	var b []byte
	for _, c := range l.chunks {
		if stream == "Stdout" && c.stderr || stream == "Stderr" && !c.stderr {
			continue
		}
		b = append(b, c.data...)
	}
	return b
}

// StartKubelet registers a ready Node served by a fake kubelet.
func (c *Cluster) StartKubelet(t testing.TB) *Kubelet {
	t.Helper()
	k := &Kubelet{Node: "node-1", c: c, logs: map[string]*containerLog{}}
	certPEM, keyPEM := c.issuePEM(t, "kubelet")
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	k.srv = httptest.NewUnstartedServer(http.HandlerFunc(k.serve))
	k.srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	k.srv.StartTLS()
	t.Cleanup(k.srv.Close)
	_, port, _ := net.SplitHostPort(k.srv.Listener.Addr().String())
	p, _ := strconv.Atoi(port)

	ctx := context.Background()
	node, err := c.Admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: k.Node}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status = corev1.NodeStatus{
		Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(p)}},
		Conditions:      []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
	}
	if _, err := c.Admin.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return k
}

func (k *Kubelet) log(ns, pod, container string) *containerLog {
	key := ns + "/" + pod + "/" + container
	l := k.logs[key]
	if l == nil {
		l = &containerLog{changed: make(chan struct{})}
		k.logs[key] = l
	}
	return l
}

// Write appends data to the log of container in pod, as its stdout.
func (k *Kubelet) Write(pod *corev1.Pod, container, data string) {
	k.write(pod, container, chunk{data: data})
}

// WriteStderr appends data to the log of container in pod, as its stderr.
func (k *Kubelet) WriteStderr(pod *corev1.Pod, container, data string) {
	k.write(pod, container, chunk{stderr: true, data: data})
}

func (k *Kubelet) write(pod *corev1.Pod, container string, c chunk) {
	k.mu.Lock()
	defer k.mu.Unlock()
	l := k.log(pod.Namespace, pod.Name, container)
	l.chunks = append(l.chunks, c)
	close(l.changed)
	l.changed = make(chan struct{})
}

// end ends the log of container: followed streams close.
func (k *Kubelet) end(pod *corev1.Pod, container string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	l := k.log(pod.Namespace, pod.Name, container)
	if !l.ended {
		l.ended = true
		close(l.changed)
		l.changed = make(chan struct{})
	}
}

// Requests are the kubelet requests served so far ("/containerLogs/...?query").
func (k *Kubelet) Requests() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string(nil), k.requests...)
}

// serve answers /containerLogs/{ns}/{pod}/{container}[?follow=true&stream=]
// as a kubelet does: the container's log so far (stdout, stderr or both),
// and with follow, what comes until the container has ended.
func (k *Kubelet) serve(w http.ResponseWriter, r *http.Request) {
	k.mu.Lock()
	k.requests = append(k.requests, r.URL.RequestURI())
	k.mu.Unlock()
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/containerLogs/"), "/")
	if !strings.HasPrefix(r.URL.Path, "/containerLogs/") || len(parts) != 3 {
		http.NotFound(w, r)
		return
	}
	follow := r.URL.Query().Get("follow") == "true"
	stream := r.URL.Query().Get("stream")
	w.Header().Set("Content-Type", "text/plain")
	sent := 0
	for {
		k.mu.Lock()
		l := k.log(parts[0], parts[1], parts[2])
		data, ended, changed := l.read(stream)[sent:], l.ended, l.changed
		k.mu.Unlock()
		if len(data) > 0 {
			w.Write(data)
			sent += len(data)
		}
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		if !follow || ended {
			return
		}
		select {
		case <-changed:
		case <-r.Context().Done():
			return
		}
	}
}

// CreatePod creates the pod of job on the node, as the Job controller and
// the scheduler would: the template's metadata and spec, owned by the Job.
func (k *Kubelet) CreatePod(ctx context.Context, job *batchv1.Job) (*corev1.Pod, error) {
	labels := map[string]string{"batch.kubernetes.io/job-name": job.Name}
	for key, v := range job.Spec.Template.Labels {
		labels[key] = v
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: job.Name + "-x7k2p", Namespace: job.Namespace, Labels: labels, Annotations: job.Spec.Template.Annotations,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID,
				Controller: ptr(true), BlockOwnerDeletion: ptr(true)}},
		},
		Spec: *job.Spec.Template.Spec.DeepCopy(),
	}
	pod.Spec.NodeName = k.Node
	return k.c.Admin.CoreV1().Pods(job.Namespace).Create(ctx, pod, metav1.CreateOptions{})
}

// Run marks the pod running: the trace sidecar and the harness started
// at started.
func (k *Kubelet) Run(ctx context.Context, pod *corev1.Pod, started time.Time) (*corev1.Pod, error) {
	return k.updateStatus(ctx, pod, func(p *corev1.Pod) {
		at := metav1.NewTime(started)
		p.Status.Phase = corev1.PodRunning
		p.Status.StartTime = &at
		p.Status.InitContainerStatuses = statuses(p.Spec.InitContainers, func(c corev1.Container) corev1.ContainerState {
			if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
				return corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at}}
			}
			return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: at, FinishedAt: at}}
		})
		p.Status.ContainerStatuses = statuses(p.Spec.Containers, func(corev1.Container) corev1.ContainerState {
			return corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at}}
		})
	})
}

// Wait marks the harness container waiting to start, for reason.
func (k *Kubelet) Wait(ctx context.Context, pod *corev1.Pod, reason, message string) (*corev1.Pod, error) {
	return k.updateStatus(ctx, pod, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodPending
		p.Status.ContainerStatuses = statuses(p.Spec.Containers, func(corev1.Container) corev1.ContainerState {
			return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}
		})
	})
}

// Exit ends the pod as a kubelet does when the harness has exited with
// code (reason "Error", "Completed" or "OOMKilled"): the trace sidecar is
// stopped and prints trace, every log ends, and the pod's phase follows
// the harness's exit.
func (k *Kubelet) Exit(ctx context.Context, pod *corev1.Pod, code int32, reason, trace string, finished time.Time) (*corev1.Pod, error) {
	if trace != "" {
		k.Write(pod, "svc-trace", trace)
	}
	for _, c := range append(append([]corev1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...) {
		k.end(pod, c.Name)
	}
	return k.updateStatus(ctx, pod, func(p *corev1.Pod) {
		at := metav1.NewTime(finished)
		started := at
		if p.Status.StartTime != nil {
			started = *p.Status.StartTime
		}
		p.Status.Phase = corev1.PodSucceeded
		if code != 0 {
			p.Status.Phase = corev1.PodFailed
		}
		p.Status.InitContainerStatuses = statuses(p.Spec.InitContainers, func(corev1.Container) corev1.ContainerState {
			return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: started, FinishedAt: at}}
		})
		p.Status.ContainerStatuses = statuses(p.Spec.Containers, func(corev1.Container) corev1.ContainerState {
			return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, StartedAt: started, FinishedAt: at}}
		})
	})
}

// Complete sets the Job's terminal condition as the Job controller does
// once its pod has ended (Complete, or Failed with reason).
func (k *Kubelet) Complete(ctx context.Context, job *batchv1.Job, failedReason string) error {
	job, err := k.c.Admin.BatchV1().Jobs(job.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	now := metav1.Now()
	if job.Status.StartTime == nil {
		job.Status.StartTime = &now
	}
	if failedReason == "" {
		job.Status.Succeeded = 1
		job.Status.CompletionTime = &now
		job.Status.Conditions = append(job.Status.Conditions,
			batchv1.JobCondition{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastProbeTime: now, LastTransitionTime: now},
			batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastProbeTime: now, LastTransitionTime: now})
	} else {
		job.Status.Failed = 1
		job.Status.Conditions = append(job.Status.Conditions,
			batchv1.JobCondition{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: failedReason, LastProbeTime: now, LastTransitionTime: now},
			batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: failedReason, LastProbeTime: now, LastTransitionTime: now})
	}
	_, err = k.c.Admin.BatchV1().Jobs(job.Namespace).UpdateStatus(ctx, job, metav1.UpdateOptions{})
	return err
}

func (k *Kubelet) updateStatus(ctx context.Context, pod *corev1.Pod, edit func(*corev1.Pod)) (*corev1.Pod, error) {
	cur, err := k.c.Admin.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	edit(cur)
	return k.c.Admin.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
}

// statuses are the container statuses of containers, in state.
func statuses(containers []corev1.Container, state func(corev1.Container) corev1.ContainerState) []corev1.ContainerStatus {
	var out []corev1.ContainerStatus
	for _, c := range containers {
		st := state(c)
		out = append(out, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: "docker.io/library/" + c.Image + "@sha256:0123",
			State: st, Ready: st.Running != nil, Started: ptr(st.Running != nil),
			ContainerID: "containerd://" + c.Name,
		})
	}
	return out
}

func ptr[T any](v T) *T { return &v }
