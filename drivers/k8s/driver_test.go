package k8s_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"svc/drivers"
	"svc/drivers/internal/drivertest"
	"svc/drivers/k8s"
	"svc/drivers/k8s/kubetest"
	"svc/internal/platform/derrors"
	"svc/internal/testing/testwait"
)

// The driver against a real kube-apiserver and etcd (drivers/k8s/kubetest),
// with the test playing the Job controller and the kubelet through the API:
// it creates the Job's pod, drives its status and serves its logs at the
// kubelet endpoint the API server proxies pods/log to.

const (
	image = "registry.example/harness:1"
	// secret is a harness secret's value: it must reach the job only in
	// the mounted Secret.
	secret = "sk-live-0123456789abcdef"
)

// env is one cluster, a node and what the tests share.
type env struct {
	c       *kubetest.Cluster
	kubelet *kubetest.Kubelet
}

// newEnv starts a cluster with a node and the runtime's class.
func newEnv(t *testing.T, o kubetest.Options) *env {
	t.Helper()
	c := kubetest.Start(t, o)
	e := &env{c: c, kubelet: c.StartKubelet(t)}
	// Pod admission looks the runtime's class up.
	rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "gvisor"}, Handler: "runsc"}
	if _, err := c.Admin.NodeV1().RuntimeClasses().Create(context.Background(), rc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return e
}

// rt is the runtime every test uses.
var rt = k8s.RuntimeOptions{
	Image:        image,
	RuntimeClass: "gvisor",
	NodeSelector: map[string]string{"pool": "evals"},
	Tolerations:  []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "evals", Effect: corev1.TaintEffectNoSchedule}},
	GPU:          1,
}

// newDriver returns a driver that authenticates as the cluster's
// restricted user (the Role of k8s.Rules, nothing more).
func (e *env) newDriver(t *testing.T, cfg *k8s.Config) *k8s.Driver {
	t.Helper()
	c := k8s.Config{Server: e.c.URL, Token: e.c.Token, CAData: e.c.CA, Namespace: e.c.Namespace}
	if cfg != nil {
		c = *cfg
	}
	c.Guard, c.AllowedHosts = drivertest.LoopbackGuard(t), []string{"127.0.0.1"}
	d, err := k8s.New(k8s.Options{Config: c, Runtime: rt, StopWait: 30 * time.Second, LogDrain: 10 * time.Second,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return d
}

// job is a small job of run runID, attempt 1.
func job(runID string) drivers.Job {
	return drivers.Job{
		RunID:   runID,
		Attempt: 1,
		Command: []string{"/bin/harness", "--case", "$(HOME)"},
		Env:     map[string]string{"MODEL": "m-1"},
		Case:    []byte(`{"id":"c1","task":"What is 2+2?"}`),
		Timeout: time.Hour,
	}
}

// outcome is what a Run returned.
type outcome struct {
	res drivers.Result
	err error
}

func runAsync(ctx context.Context, d *k8s.Driver, j drivers.Job) <-chan outcome {
	done := make(chan outcome, 1)
	go func() {
		res, err := d.Run(ctx, j)
		done <- outcome{res, err}
	}()
	return done
}

// waitJob waits for the Job of run runID to be created and returns it.
func (e *env) waitJob(t *testing.T, runID string) *batchv1.Job {
	t.Helper()
	name := k8s.JobName(runID, 1)
	return testwait.UntilValue(t, time.Minute, "job "+name+" to be created", func() (*batchv1.Job, bool) {
		j, err := e.c.Admin.BatchV1().Jobs(e.c.Namespace).Get(context.Background(), name, metav1.GetOptions{})
		return j, err == nil
	})
}

// startPod creates the Job's pod and marks it running, as the Job
// controller, the scheduler and the kubelet would.
func (e *env) startPod(t *testing.T, j *batchv1.Job, started time.Time) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	pod, err := e.kubelet.CreatePod(ctx, j)
	if err != nil {
		t.Fatal(err)
	}
	if pod, err = e.kubelet.Run(ctx, pod, started); err != nil {
		t.Fatal(err)
	}
	return pod
}

// followed counts the followed log requests the kubelet served for container.
func (e *env) followed(pod *corev1.Pod, container string) int {
	n := 0
	for _, r := range e.kubelet.Requests() {
		if strings.HasPrefix(r, "/containerLogs/"+pod.Namespace+"/"+pod.Name+"/"+container+"?") && strings.Contains(r, "follow=true") {
			n++
		}
	}
	return n
}

// secretGone reports whether the Job's Secret has been deleted.
func (e *env) secretGone(t *testing.T, name string) bool {
	t.Helper()
	_, err := e.c.Admin.CoreV1().Secrets(e.c.Namespace).Get(context.Background(), k8s.SecretName(name), metav1.GetOptions{})
	return apierrors.IsNotFound(err)
}

// deleting waits until the Job is being deleted with foreground
// propagation (a deletion timestamp and the foregroundDeletion finalizer:
// the garbage collector, which this cluster lacks, would delete the pod,
// then the Job).
func (e *env) deleting(t *testing.T, name string) *batchv1.Job {
	t.Helper()
	return testwait.UntilValue(t, time.Minute, "job "+name+" to be deleted in the foreground", func() (*batchv1.Job, bool) {
		j, err := e.c.Admin.BatchV1().Jobs(e.c.Namespace).Get(context.Background(), name, metav1.GetOptions{})
		return j, err == nil && j.DeletionTimestamp != nil && slices.Contains(j.Finalizers, metav1.FinalizerDeleteDependents)
	})
}

// noCredentials fails when an object of the attempt carries a credential.
func (e *env) noCredentials(t *testing.T, name string, creds map[string]string) {
	t.Helper()
	ctx := context.Background()
	var objs []any
	if j, err := e.c.Admin.BatchV1().Jobs(e.c.Namespace).Get(ctx, name, metav1.GetOptions{}); err == nil {
		objs = append(objs, j)
	}
	if cm, err := e.c.Admin.CoreV1().ConfigMaps(e.c.Namespace).Get(ctx, k8s.InputName(name), metav1.GetOptions{}); err == nil {
		objs = append(objs, cm)
	}
	if s, err := e.c.Admin.CoreV1().Secrets(e.c.Namespace).Get(ctx, k8s.SecretName(name), metav1.GetOptions{}); err == nil {
		objs = append(objs, s)
	}
	pods, _ := e.c.Admin.CoreV1().Pods(e.c.Namespace).List(ctx, metav1.ListOptions{LabelSelector: k8s.LabelJob + "=" + name})
	for i := range pods.Items {
		objs = append(objs, &pods.Items[i])
	}
	if len(objs) == 0 {
		t.Fatalf("no object of job %s to inspect", name)
	}
	for _, o := range objs {
		b, _ := json.Marshal(o)
		for what, v := range creds {
			if strings.Contains(string(b), v) {
				t.Errorf("%T of job %s carries %s", o, name, what)
			}
		}
	}
}

func TestDriver(t *testing.T) {
	e := newEnv(t, kubetest.Options{Rules: k8s.Rules()})
	c := e.c
	ctx := context.Background()

	t.Run("success, secrets as files", func(t *testing.T) {
		d := e.newDriver(t, nil).WithJobOptions(k8s.JobOptions{CPUMillicores: 1500, MemoryMB: 2048})
		var mu sync.Mutex
		streamed := map[string]string{}
		j := job("r-ok")
		j.Secrets = map[string]string{"API_KEY": secret}
		j.Files = map[string]string{"run.sh": "#!/bin/sh\necho hi\n", "data/in.txt": "x"}
		j.WorkDir = "data"
		j.OTLPEndpoint = "https://otlp.example/v1/traces"
		j.Log = func(stream string, data []byte) {
			mu.Lock()
			defer mu.Unlock()
			streamed[stream] += string(data)
		}
		done := runAsync(ctx, d, j)
		kj := e.waitJob(t, "r-ok")
		name := kj.Name

		// What was submitted: one attempt, bounded, placed as the runtime
		// says, with the declared resources, and no secret anywhere in it.
		spec := kj.Spec
		pod := spec.Template.Spec
		if *spec.BackoffLimit != 0 || spec.ActiveDeadlineSeconds == nil || *spec.ActiveDeadlineSeconds != int64((time.Hour+k8s.DefaultStartAllowance).Seconds()) ||
			spec.TTLSecondsAfterFinished == nil || *spec.TTLSecondsAfterFinished != int32(k8s.DefaultTTL.Seconds()) {
			t.Errorf("job spec backoffLimit %v, activeDeadlineSeconds %v, ttl %v", *spec.BackoffLimit, spec.ActiveDeadlineSeconds, spec.TTLSecondsAfterFinished)
		}
		if pod.RestartPolicy != corev1.RestartPolicyNever || *pod.RuntimeClassName != "gvisor" || pod.NodeSelector["pool"] != "evals" ||
			len(pod.Tolerations) != 1 || pod.Tolerations[0].Key != "dedicated" || *pod.AutomountServiceAccountToken {
			t.Errorf("pod spec placement: restart %s, runtimeClass %v, nodeSelector %v, tolerations %v, automount %v",
				pod.RestartPolicy, pod.RuntimeClassName, pod.NodeSelector, pod.Tolerations, *pod.AutomountServiceAccountToken)
		}
		h := pod.Containers[0]
		wantRes := corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("2Gi"), "nvidia.com/gpu": resource.MustParse("1"),
		}
		for _, list := range []corev1.ResourceList{h.Resources.Requests, h.Resources.Limits} {
			for k, want := range wantRes {
				if got := list[k]; got.Cmp(want) != 0 {
					t.Errorf("resource %s = %s, want %s", k, got.String(), want.String())
				}
			}
		}
		if h.Image != image || !slices.Equal(h.Command, []string{"/bin/harness"}) || !slices.Equal(h.Args, []string{"--case", "$$(HOME)"}) || h.WorkingDir != "/svc/work/data" {
			t.Errorf("harness container: image %s, command %q, args %q, workingDir %s", h.Image, h.Command, h.Args, h.WorkingDir)
		}
		gotEnv := map[string]string{}
		for _, v := range h.Env {
			gotEnv[v.Name] = v.Value
		}
		wantEnv := map[string]string{
			"MODEL": "m-1", "SVC_RUN_ID": "r-ok", "SVC_CASE_FILE": "/svc/in/case.json", "SVC_WORK_DIR": "/svc/work",
			"SVC_SECRETS_FILE": "/svc/secrets/svc-secrets.json", "SVC_TRACE_FILE": "/svc/data/svc-trace.jsonl",
			"OTEL_RESOURCE_ATTRIBUTES": "svc.run_id=r-ok", "OTEL_EXPORTER_OTLP_ENDPOINT": "https://otlp.example/v1/traces",
			"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json",
		}
		if diff := cmp.Diff(wantEnv, gotEnv); diff != "" {
			t.Errorf("harness env (-want +got):\n%s", diff)
		}
		mounted := false
		for _, v := range pod.Volumes {
			if v.Secret != nil && v.Secret.SecretName == k8s.SecretName(name) {
				mounted = true
			}
		}
		if !mounted {
			t.Error("the pod does not mount the job's Secret")
		}

		// The Secret holds the secrets file, owned by the Job so the
		// cluster deletes it with the Job.
		sec := testwait.UntilValue(t, time.Minute, "the job's Secret", func() (*corev1.Secret, bool) {
			s, err := c.Admin.CoreV1().Secrets(c.Namespace).Get(ctx, k8s.SecretName(name), metav1.GetOptions{})
			return s, err == nil
		})
		var file map[string]string
		if err := json.Unmarshal(sec.Data["svc-secrets.json"], &file); err != nil || file["API_KEY"] != secret {
			t.Errorf("Secret data %q, want the secrets file {\"API_KEY\": ...}", sec.Data)
		}
		if len(sec.OwnerReferences) != 1 || sec.OwnerReferences[0].UID != kj.UID {
			t.Errorf("Secret owners %+v, want the Job %s", sec.OwnerReferences, kj.UID)
		}
		cm := testwait.UntilValue(t, time.Minute, "the job's input ConfigMap", func() (*corev1.ConfigMap, bool) {
			cm, err := c.Admin.CoreV1().ConfigMaps(c.Namespace).Get(ctx, k8s.InputName(name), metav1.GetOptions{})
			return cm, err == nil
		})
		if cm.Data["case.json"] != string(j.Case) || !slices.ContainsFunc(valuesOf(cm.Data), func(v string) bool { return v == j.Files["run.sh"] }) {
			t.Errorf("input ConfigMap %v, want the case and the files", cm.Data)
		}

		start := time.Now().Add(-3 * time.Second).Truncate(time.Second)
		p := e.startPod(t, kj, start)
		e.noCredentials(t, name, map[string]string{"the harness's secret": secret, "the cluster token": c.Token, "the admin token": kubetest.AdminToken})
		testwait.Until(t, time.Minute, "the driver to follow the harness's log", func() bool { return e.followed(p, "harness") > 0 })
		e.kubelet.Write(p, "harness", "thinking\n")
		e.kubelet.Write(p, "harness", "the answer is 42\n")
		if _, err := e.kubelet.Exit(ctx, p, 0, "Completed", `{"kind":"tool_call","name":"search"}`+"\n", start.Add(2*time.Second)); err != nil {
			t.Fatal(err)
		}
		o := <-done
		if o.err != nil {
			t.Fatal(o.err)
		}
		want := drivers.Result{
			Stdout:     "thinking\nthe answer is 42\n",
			StdoutTail: "thinking\nthe answer is 42\n",
			Trace:      []byte(`{"kind":"tool_call","name":"search"}` + "\n"),
			Duration:   2 * time.Second,
			OS:         "linux",
			Driver:     "k8s",
			Image:      image,
		}
		if diff := cmp.Diff(want, o.res); diff != "" {
			t.Errorf("Result (-want +got):\n%s", diff)
		}
		// This API server keeps PodLogsQuerySplitStreams off (its default):
		// the one log is the harness's stdout.
		mu.Lock()
		if diff := cmp.Diff(map[string]string{"stdout": want.Stdout}, streamed); diff != "" {
			t.Errorf("Log saw (-want +got):\n%s", diff)
		}
		mu.Unlock()
		if e.followed(p, "svc-trace") == 0 {
			t.Error("the trace sidecar's log was not read through pods/log")
		}
		if !e.secretGone(t, name) {
			t.Error("the job's Secret is still there after the job ended")
		}
	})

	t.Run("failure", func(t *testing.T) {
		d := e.newDriver(t, nil)
		done := runAsync(ctx, d, job("r-fail"))
		p := e.startPod(t, e.waitJob(t, "r-fail"), time.Now())
		e.kubelet.Write(p, "harness", "no idea\n")
		if _, err := e.kubelet.Exit(ctx, p, 3, "Error", "", time.Now()); err != nil {
			t.Fatal(err)
		}
		o := <-done
		if o.err != nil || o.res.ExitCode != 3 || o.res.Stdout != "no idea\n" || o.res.TimedOut || o.res.Cancelled {
			t.Errorf("Run = %+v, %v; want exit code 3 with its output", o.res, o.err)
		}
	})

	t.Run("adopt on retry", func(t *testing.T) {
		d := e.newDriver(t, nil)
		j := job("r-adopt")
		j.Secrets = map[string]string{"API_KEY": secret}
		first := runAsync(ctx, d, j)
		kj := e.waitJob(t, "r-adopt")
		p := e.startPod(t, kj, time.Now())
		testwait.Until(t, time.Minute, "the first Run to follow the log", func() bool { return e.followed(p, "harness") == 1 })

		// The activity is retried while the first Run still follows the
		// Job: the second Run of the same attempt adopts it.
		second := runAsync(ctx, d, j)
		testwait.Until(t, time.Minute, "the second Run to follow the log", func() bool { return e.followed(p, "harness") == 2 })
		e.kubelet.Write(p, "harness", "done\n")
		if _, err := e.kubelet.Exit(ctx, p, 0, "Completed", "{}\n", time.Now()); err != nil {
			t.Fatal(err)
		}
		if err := e.kubelet.Complete(ctx, kj, ""); err != nil {
			t.Fatal(err)
		}
		a, b := <-first, <-second
		if a.err != nil || b.err != nil {
			t.Fatalf("Run errors: %v, %v", a.err, b.err)
		}
		if diff := cmp.Diff(a.res, b.res); diff != "" {
			t.Errorf("the adopting Run saw another result (-first +second):\n%s", diff)
		}
		if b.res.Stdout != "done\n" || string(b.res.Trace) != "{}\n" {
			t.Errorf("adopted Result = %+v, want the job's output and trace", b.res)
		}

		// A third Run after the end adopts the finished Job and reads its
		// logs again; it makes no Job, and no Secret, again.
		res, err := d.Run(ctx, j)
		if err != nil || res.Stdout != "done\n" {
			t.Errorf("Run after the end = %+v, %v; want the same result", res, err)
		}
		jobs, err := c.Admin.BatchV1().Jobs(c.Namespace).List(ctx, metav1.ListOptions{LabelSelector: k8s.LabelJob + "=" + kj.Name})
		if err != nil || len(jobs.Items) != 1 || jobs.Items[0].UID != kj.UID {
			t.Errorf("jobs of the attempt: %v, %v; want the one Job", jobs, err)
		}
		if !e.secretGone(t, kj.Name) {
			t.Error("the Secret of the finished Job was created again")
		}
	})

	t.Run("timeout", func(t *testing.T) {
		d := e.newDriver(t, nil)
		j := job("r-slow")
		j.Timeout = time.Second
		j.Secrets = map[string]string{"API_KEY": secret}
		done := runAsync(ctx, d, j)
		kj := e.waitJob(t, "r-slow")
		p := e.startPod(t, kj, time.Now())
		e.kubelet.Write(p, "harness", "working\n")
		// The driver deletes the Job (foreground); the kubelet stops the pod.
		e.deleting(t, kj.Name)
		if _, err := e.kubelet.Exit(ctx, p, 143, "Error", "", time.Now()); err != nil {
			t.Fatal(err)
		}
		o := <-done
		if o.err != nil || !o.res.TimedOut || o.res.Cancelled || o.res.ExitCode != -1 || o.res.Stdout != "working\n" {
			t.Errorf("Run = %+v, %v; want TimedOut, exit -1, with the output so far", o.res, o.err)
		}
		if !e.secretGone(t, kj.Name) {
			t.Error("the Secret is still there after the timeout")
		}
	})

	t.Run("cancel", func(t *testing.T) {
		d := e.newDriver(t, nil)
		j := job("r-cancel")
		j.Secrets = map[string]string{"API_KEY": secret}
		cctx, cancel := context.WithCancel(ctx)
		done := runAsync(cctx, d, j)
		kj := e.waitJob(t, "r-cancel")
		p := e.startPod(t, kj, time.Now())
		testwait.Until(t, time.Minute, "the driver to follow the log", func() bool { return e.followed(p, "harness") > 0 })
		cancel()
		e.deleting(t, kj.Name)
		if _, err := e.kubelet.Exit(ctx, p, 143, "Error", "", time.Now()); err != nil {
			t.Fatal(err)
		}
		o := <-done
		if o.err != nil || !o.res.Cancelled || o.res.TimedOut || o.res.ExitCode != -1 {
			t.Errorf("Run = %+v, %v; want Cancelled, exit -1", o.res, o.err)
		}
		if !e.secretGone(t, kj.Name) {
			t.Error("the Secret is still there after the cancel")
		}
		// A retry of the cancelled attempt adopts the Job being deleted:
		// cancelled, and no second Job.
		res, err := d.Run(ctx, j)
		if err != nil || !res.Cancelled {
			t.Errorf("Run after the cancel = %+v, %v; want Cancelled", res, err)
		}
		if cur, err := c.Admin.BatchV1().Jobs(c.Namespace).Get(ctx, kj.Name, metav1.GetOptions{}); err != nil || cur.UID != kj.UID {
			t.Errorf("job after the retry: %v, %v; want the same Job", cur, err)
		}
	})

	t.Run("detach", func(t *testing.T) {
		d := e.newDriver(t, nil)
		j := job("r-detach")
		j.Secrets = map[string]string{"API_KEY": secret}
		cctx, cancel := context.WithCancelCause(ctx)
		done := runAsync(cctx, d, j)
		kj := e.waitJob(t, "r-detach")
		p := e.startPod(t, kj, time.Now())
		testwait.Until(t, time.Minute, "the driver to follow the log", func() bool { return e.followed(p, "harness") > 0 })
		lost := errors.New("lease lost")
		cancel(drivers.Detach(lost))
		if o := <-done; !errors.Is(o.err, lost) {
			t.Fatalf("Run = %+v, %v; want an error wrapping the detach's cause", o.res, o.err)
		}
		cur, err := c.Admin.BatchV1().Jobs(c.Namespace).Get(ctx, kj.Name, metav1.GetOptions{})
		if err != nil || cur.DeletionTimestamp != nil || e.secretGone(t, kj.Name) {
			t.Fatalf("after a detach: job %v (%v), Secret gone %v; want both left for the next attempt", cur, err, e.secretGone(t, kj.Name))
		}
		next := runAsync(ctx, d, j)
		testwait.Until(t, time.Minute, "the next Run to follow the log", func() bool { return e.followed(p, "harness") == 2 })
		e.kubelet.Write(p, "harness", "4\n")
		if _, err := e.kubelet.Exit(ctx, p, 0, "Completed", "", time.Now()); err != nil {
			t.Fatal(err)
		}
		if o := <-next; o.err != nil || o.res.Stdout != "4\n" || o.res.ExitCode != 0 {
			t.Fatalf("adopting Run = %+v, %v; want the job's output, exit 0", o.res, o.err)
		}
		if !e.secretGone(t, kj.Name) {
			t.Error("the Secret was not deleted once the adopted job ended")
		}
	})

	t.Run("image cannot be pulled", func(t *testing.T) {
		d := e.newDriver(t, nil)
		done := runAsync(ctx, d, job("r-pull"))
		kj := e.waitJob(t, "r-pull")
		pod, err := e.kubelet.CreatePod(ctx, kj)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.kubelet.Wait(ctx, pod, "ErrImagePull", "failed to pull registry.example/harness:1: not found"); err != nil {
			t.Fatal(err)
		}
		o := <-done
		if !errors.Is(o.err, derrors.ErrInvalid) || !strings.Contains(o.err.Error(), "ErrImagePull") || !strings.Contains(o.err.Error(), "check the image name") {
			t.Errorf("Run = %v, want ErrInvalid naming the pull failure and what to check", o.err)
		}
		e.deleting(t, kj.Name)
	})

	t.Run("kubeconfig credentials never reach the job", func(t *testing.T) {
		kc := clientcmdapi.NewConfig()
		kc.Clusters["c"] = &clientcmdapi.Cluster{Server: c.URL, CertificateAuthorityData: c.CA}
		kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: c.Token}
		kc.Contexts["ctx"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u", Namespace: c.Namespace}
		kc.CurrentContext = "ctx"
		raw, err := clientcmd.Write(*kc)
		if err != nil {
			t.Fatal(err)
		}
		d := e.newDriver(t, &k8s.Config{Kubeconfig: raw})
		j := job("r-kubeconfig")
		j.Secrets = map[string]string{"API_KEY": secret}
		done := runAsync(ctx, d, j)
		kj := e.waitJob(t, "r-kubeconfig")
		p := e.startPod(t, kj, time.Now())
		e.noCredentials(t, kj.Name, map[string]string{"the kubeconfig's token": c.Token, "the kubeconfig's CA": string(c.CA)})
		if _, err := e.kubelet.Exit(ctx, p, 0, "Completed", "", time.Now()); err != nil {
			t.Fatal(err)
		}
		if o := <-done; o.err != nil {
			t.Fatal(o.err)
		}
	})

	t.Run("a job this service did not create", func(t *testing.T) {
		name := k8s.JobName("r-foreign", 1)
		foreign := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "x", Image: "x"}}},
		}}}
		if _, err := c.Admin.BatchV1().Jobs(c.Namespace).Create(ctx, foreign, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		d := e.newDriver(t, nil)
		if _, err := d.Run(ctx, job("r-foreign")); !errors.Is(err, derrors.ErrConflict) {
			t.Errorf("Run = %v, want ErrConflict", err)
		}
		if err := d.Stop(ctx, "r-foreign", 1); !errors.Is(err, derrors.ErrConflict) {
			t.Errorf("Stop = %v, want ErrConflict and the Job left", err)
		}
	})
}

func valuesOf(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func TestJobName(t *testing.T) {
	for _, tc := range []struct {
		run     string
		attempt int
		want    string
	}{
		{"r1", 1, "svc-r1-a1"},
		{"r1", 2, "svc-r1-a2"},
		{"run_01HZX", 1, "svc-run-01hzx-"},
		{"Run/With Spaces", 1, "svc-run-with-spaces-"},
	} {
		got := k8s.JobName(tc.run, tc.attempt)
		if !strings.HasPrefix(got, tc.want) || len(got) > 63 {
			t.Errorf("JobName(%q, %d) = %q, want prefix %q within 63 bytes", tc.run, tc.attempt, got, tc.want)
		}
	}
	long := strings.Repeat("x", 300)
	if n := k8s.JobName(long, 1); len(n) > 63 || n == k8s.JobName(long+"y", 1) {
		t.Errorf("JobName of long ids: %q", n)
	}
	if k8s.JobName("a/b", 1) == k8s.JobName("a_b", 1) || k8s.JobName("A", 1) == k8s.JobName("a", 1) {
		t.Error("two run ids share a Job name")
	}
}

func TestJobRefusedBeforeTheCluster(t *testing.T) {
	// No cluster: what cannot run is refused before any request.
	d, err := k8s.New(k8s.Options{Config: k8s.Config{Server: "https://127.0.0.1:1", Token: "t", AllowedHosts: []string{"127.0.0.1"}, Guard: drivertest.LoopbackGuard(t)}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(*drivers.Job)
		want string
	}{
		{"no image", func(*drivers.Job) {}, "image"},
		{"no command", func(j *drivers.Job) { j.Image = "x"; j.Command = nil }, "command is empty"},
		{"file outside", func(j *drivers.Job) { j.Image = "x"; j.Files = map[string]string{"../x": ""} }, "inside the work directory"},
		{"case too large", func(j *drivers.Job) { j.Image = "x"; j.Case = make([]byte, 2<<20) }, "ConfigMap"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := job("r1")
			tc.edit(&j)
			if _, err := d.Run(context.Background(), j); !errors.Is(err, derrors.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Run = %v, want ErrInvalid saying %q", err, tc.want)
			}
		})
	}
}

func TestSplitStreams(t *testing.T) {
	// With the PodLogsQuerySplitStreams feature gate on, the driver reads
	// stdout and stderr apart: the final answer is stdout alone.
	e := newEnv(t, kubetest.Options{Rules: k8s.Rules(), FeatureGates: "PodLogsQuerySplitStreams=true"})
	ctx := context.Background()
	d := e.newDriver(t, nil)
	done := runAsync(ctx, d, job("r-split"))
	p := e.startPod(t, e.waitJob(t, "r-split"), time.Now())
	e.kubelet.WriteStderr(p, "harness", "warn: slow\n")
	e.kubelet.Write(p, "harness", "42\n")
	if _, err := e.kubelet.Exit(ctx, p, 0, "Completed", "", time.Now()); err != nil {
		t.Fatal(err)
	}
	o := <-done
	if o.err != nil || o.res.Stdout != "42\n" || o.res.StderrTail != "warn: slow\n" {
		t.Errorf("Run = %+v, %v; want stdout 42 and stderr apart", o.res, o.err)
	}
	var streams []string
	for _, r := range e.kubelet.Requests() {
		if strings.Contains(r, "/harness?") {
			streams = append(streams, r[strings.Index(r, "?"):])
		}
	}
	if !slices.ContainsFunc(streams, func(q string) bool { return strings.Contains(q, "stream=Stdout") }) ||
		!slices.ContainsFunc(streams, func(q string) bool { return strings.Contains(q, "stream=Stderr") }) {
		t.Errorf("harness log requests %q, want one per stream", streams)
	}
}
