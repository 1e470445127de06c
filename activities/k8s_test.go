package activities_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"svc/drivers/k8s"
	"svc/drivers/k8s/kubetest"
	"svc/internal/domain/eval"
	"svc/internal/platform/config"
	"svc/internal/testing/stacktest"
	"svc/internal/testing/testwait"
)

// Cases really run on a k8s runtime: the whole service (API, embedded
// Temporal, worker, SQLite store) dispatching to a real kube-apiserver
// (drivers/k8s/kubetest), with the test playing the Job controller and
// the kubelet: it runs each Job's pod as its case says.

// k8sImage is the k8s runtime's default image.
const k8sImage = "registry.example/agent-k8s:1"

type k8sStack struct {
	*stacktest.Stack
	c       *kubetest.Cluster
	kubelet *kubetest.Kubelet

	mu      sync.Mutex
	secrets map[string]string // job -> the secrets file its Secret held
}

func newK8sStack(t *testing.T) *k8sStack {
	t.Helper()
	c := kubetest.Start(t, kubetest.Options{Rules: k8s.Rules()})
	s := &k8sStack{c: c, kubelet: c.StartKubelet(t), secrets: map[string]string{}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go s.playCluster(t, ctx)

	st := stacktest.New(t, stacktest.Options{Backend: "sqlite", TaskQueue: "k8s-it", Host: "test-worker", Level: slog.LevelWarn,
		Config: func(cfg *config.Config) { cfg.ProbeAllow = "127.0.0.1" }})
	s.Stack = st

	// The cluster's credentials: a kubeconfig (server, CA, the restricted
	// user's token) stored as a workspace secret bound to the server.
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: c.URL, CertificateAuthorityData: c.CA}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: c.Token}
	kc.Contexts["evals"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u", Namespace: c.Namespace}
	kc.CurrentContext = "evals"
	raw, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	s.Call(t, "PUT", "/secrets/kubeconfig", fmt.Sprintf(`{"value":%q,"allowedHosts":["127.0.0.1"]}`, raw), 204, nil)
	s.Call(t, "PUT", "/secrets/model-key", fmt.Sprintf(`{"value":%q}`, harnessSecret), 204, nil)
	s.Call(t, "POST", "/runtimes", fmt.Sprintf(`{"id":"kube","version":"1","kind":"k8s","image":%q,"kubeconfigSecret":"kubeconfig",
		"namespace":%q,"nodeSelector":{"pool":"evals"}}`, k8sImage, c.Namespace), 201, nil)
	s.Call(t, "POST", "/harnesses", `{"id":"agent","version":"1.0.0","kind":"process","command":["/bin/agent","--answer"],
		"env":{"MODE":"eval"},"secretEnv":{"MODEL_KEY":"model-key"},"resources":{"cpu":500,"memoryMb":256}}`, 201, nil)
	return s
}

// playCluster runs every Job created in the namespace as its case says:
// "bad*" exits 3, "hold*" runs until its Job is deleted, any other
// answers 4 with a trace.
func (s *k8sStack) playCluster(t *testing.T, ctx context.Context) {
	seen := map[string]bool{}
	for ctx.Err() == nil {
		jobs, err := s.c.Admin.BatchV1().Jobs(s.c.Namespace).List(ctx, metav1.ListOptions{})
		if err == nil {
			for i := range jobs.Items {
				j := &jobs.Items[i]
				if !seen[j.Name] {
					seen[j.Name] = true
					go s.runJob(t, ctx, j)
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (s *k8sStack) runJob(t *testing.T, ctx context.Context, j *batchv1.Job) {
	admin := s.c.Admin
	var caseID string
	for ctx.Err() == nil && caseID == "" {
		cm, err := admin.CoreV1().ConfigMaps(j.Namespace).Get(ctx, k8s.InputName(j.Name), metav1.GetOptions{})
		if err == nil {
			var c struct{ ID string }
			if err := json.Unmarshal([]byte(cm.Data["case.json"]), &c); err != nil {
				t.Errorf("job %s: case file %q: %v", j.Name, cm.Data["case.json"], err)
				return
			}
			caseID = c.ID
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for ctx.Err() == nil {
		sec, err := admin.CoreV1().Secrets(j.Namespace).Get(ctx, k8s.SecretName(j.Name), metav1.GetOptions{})
		if err == nil {
			s.mu.Lock()
			s.secrets[j.Name] = string(sec.Data["svc-secrets.json"])
			s.mu.Unlock()
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	pod, err := s.kubelet.CreatePod(ctx, j)
	if err == nil {
		pod, err = s.kubelet.Run(ctx, pod, time.Now())
	}
	if err != nil {
		if ctx.Err() == nil {
			t.Errorf("job %s: starting its pod: %v", j.Name, err)
		}
		return
	}
	switch {
	case strings.HasPrefix(caseID, "bad"):
		s.kubelet.Write(pod, "harness", "no idea\n")
		_, err = s.kubelet.Exit(ctx, pod, 3, "Error", "", time.Now())
	case strings.HasPrefix(caseID, "hold"):
		s.kubelet.Write(pod, "harness", "thinking about "+caseID+"\n")
		for ctx.Err() == nil {
			cur, err := admin.BatchV1().Jobs(j.Namespace).Get(ctx, j.Name, metav1.GetOptions{})
			if err == nil && cur.DeletionTimestamp != nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		_, err = s.kubelet.Exit(ctx, pod, 143, "Error", "", time.Now())
	default:
		s.kubelet.Write(pod, "harness", "4\n")
		_, err = s.kubelet.Exit(ctx, pod, 0, "Completed",
			`{"kind":"tool_call","name":"calculator","input":{"expr":"2+2"},"output":4}`+"\n", time.Now().Add(time.Second))
	}
	if err != nil && ctx.Err() == nil {
		t.Errorf("job %s: ending its pod: %v", j.Name, err)
	}
}

func (s *k8sStack) wait(t *testing.T, id string) eval.Run {
	t.Helper()
	var run eval.Run
	testwait.UntilValue(t, 2*time.Minute, "run "+id+" to end", func() (eval.Status, bool) {
		run = eval.Run{}
		s.Call(t, "GET", "/runs/"+id, "", 200, &run)
		return run.Status, run.Status.Terminal()
	})
	return run
}

// checkRanOnK8s checks what a run's result records of where it ran, that
// its Job carried no credential and that its secrets went in its Secret.
func (s *k8sStack) checkRanOnK8s(t *testing.T, run eval.Run) {
	t.Helper()
	r := run.Result
	if r == nil {
		t.Fatalf("run %s has no result", run.ID)
	}
	if e := r.Execution; e == nil || e.Driver != k8s.Name || e.Image != k8sImage || e.Runtime != "kube" || e.OS != "linux" {
		t.Errorf("run %s execution = %+v, want driver k8s, image %s, runtime kube", run.ID, e, k8sImage)
	}
	name := k8s.JobName(run.ID, 1)
	j, err := s.c.Admin.BatchV1().Jobs(s.c.Namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("run %s: job %s: %v", run.ID, name, err)
	}
	b, _ := json.Marshal(j)
	for what, v := range map[string]string{"the harness's secret": harnessSecret, "the cluster token": s.c.Token} {
		if strings.Contains(string(b), v) {
			t.Errorf("job %s carries %s", name, what)
		}
	}
	s.mu.Lock()
	file := s.secrets[name]
	s.mu.Unlock()
	if !strings.Contains(file, harnessSecret) {
		t.Errorf("job %s's Secret held %q, want the harness's secret", name, file)
	}
}

func TestK8sRuntime(t *testing.T) {
	s := newK8sStack(t)

	t.Run("run", func(t *testing.T) {
		var queued eval.Run
		s.Call(t, "POST", "/runs", `{"harness":{"id":"agent","version":"latest"},"runtime":"kube",
			"case":{"id":"sum","task":"What is 2+2?","expected":"4","graders":[{"id":"exact"},{"id":"tool_calls","min":1}]}}`, 202, &queued)
		run := s.wait(t, queued.ID)
		if run.Status != eval.StatusSucceeded {
			t.Fatalf("run ended %s: %+v", run.Status, run.Error)
		}
		r := run.Result
		if !r.Pass || r.Evidence == nil || r.Evidence.FinalAnswer != "4" || len(r.Scores) != 2 || !r.TraceSealed || len(r.Trace) == 0 {
			t.Errorf("result pass %v, evidence %+v, scores %+v, trace sealed %v (%d events); want the answer 4 and the job's trace",
				r.Pass, r.Evidence, r.Scores, r.TraceSealed, len(r.Trace))
		}
		s.checkRanOnK8s(t, run)
		j, _ := s.c.Admin.BatchV1().Jobs(s.c.Namespace).Get(context.Background(), k8s.JobName(run.ID, 1), metav1.GetOptions{})
		h := j.Spec.Template.Spec.Containers[0]
		if h.Resources.Limits.Cpu().MilliValue() != 500 || h.Resources.Limits.Memory().Value() != 256<<20 || j.Spec.Template.Spec.NodeSelector["pool"] != "evals" {
			t.Errorf("job resources %v, nodeSelector %v; want the harness's 500m and 256Mi on pool evals", h.Resources.Limits, j.Spec.Template.Spec.NodeSelector)
		}
		testwait.Until(t, time.Minute, "the job's Secret to be deleted", func() bool {
			_, err := s.c.Admin.CoreV1().Secrets(s.c.Namespace).Get(context.Background(), k8s.SecretName(j.Name), metav1.GetOptions{})
			return err != nil
		})
	})

	t.Run("credential missing", func(t *testing.T) {
		// Registered before its secret is stored: the run fails saying
		// which secret to store, and no Job is created.
		s.Call(t, "POST", "/runtimes", fmt.Sprintf(`{"id":"unkeyed","version":"1","kind":"k8s","image":%q,"kubeconfigSecret":"absent-kubeconfig"}`, k8sImage), 201, nil)
		before, err := s.c.Admin.BatchV1().Jobs(s.c.Namespace).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var queued eval.Run
		s.Call(t, "POST", "/runs", `{"harness":{"id":"agent","version":"latest"},"runtime":"unkeyed","case":{"id":"c","task":"t"}}`, 202, &queued)
		run := s.wait(t, queued.ID)
		if run.Status != eval.StatusFailed || run.Error == nil || !strings.Contains(run.Error.Message, `kubeconfigSecret "absent-kubeconfig" is not in the workspace secret store`) {
			t.Errorf("run %s, error %+v; want failed naming the missing kubeconfigSecret", run.Status, run.Error)
		}
		after, err := s.c.Admin.BatchV1().Jobs(s.c.Namespace).List(context.Background(), metav1.ListOptions{})
		if err != nil || len(after.Items) != len(before.Items) {
			t.Errorf("%d jobs before, %d after (%v); want none created without the credential", len(before.Items), len(after.Items), err)
		}
	})

	t.Run("scorecard", func(t *testing.T) {
		var cases []map[string]any
		for _, id := range []string{"ok1", "bad1"} {
			cases = append(cases, map[string]any{"id": id, "task": "What is 2+2?", "expected": "4", "graders": []map[string]any{{"id": "exact"}}})
		}
		b, _ := json.Marshal(map[string]any{"id": "qa", "version": "1.0.0", "cases": cases})
		s.Call(t, "POST", "/datasets", string(b), 201, nil)
		var q eval.Scorecard
		s.Call(t, "POST", "/scorecards", `{"dataset":{"id":"qa","version":"latest"},"harness":{"id":"agent","version":"latest"},
			"runtime":"kube","concurrency":2}`, 202, &q)
		var sc eval.Scorecard
		testwait.UntilValue(t, 2*time.Minute, "batch "+q.ID+" to end", func() (string, bool) {
			sc = eval.Scorecard{}
			s.Call(t, "GET", "/scorecards/"+q.ID, "", 200, &sc)
			return fmt.Sprintf("%s %+v", sc.Status, sc.Progress), eval.ScorecardTerminal(sc.Status) && sc.FinishedAt != nil
		})
		if sc.Status != eval.ScorecardSucceeded || sc.Progress.Done != 2 || sc.Progress.Passed != 1 || sc.Progress.Failed != 1 {
			t.Fatalf("batch %s, progress %+v; want 2 done, 1 passed, 1 failed", sc.Status, sc.Progress)
		}
		for _, row := range sc.Scorecard {
			run := s.wait(t, row.RunID)
			s.checkRanOnK8s(t, run)
			if row.CaseID == "bad1" && (run.Error == nil || !strings.Contains(run.Error.Message, "exited with code 3")) {
				t.Errorf("case bad1: error %+v, want exit code 3", run.Error)
			}
		}
	})

	t.Run("cancel", func(t *testing.T) {
		s.Call(t, "POST", "/datasets", `{"id":"slow","version":"1.0.0","cases":[{"id":"hold1","task":"t"}]}`, 201, nil)
		var q eval.Scorecard
		s.Call(t, "POST", "/scorecards", `{"dataset":{"id":"slow","version":"latest"},"harness":{"id":"agent","version":"latest"},
			"runtime":"kube","concurrency":1}`, 202, &q)
		var name string
		testwait.Until(t, time.Minute, "the case's pod to run", func() bool {
			pods, err := s.c.Admin.CoreV1().Pods(s.c.Namespace).List(context.Background(), metav1.ListOptions{})
			if err != nil {
				return false
			}
			for _, p := range pods.Items {
				if p.Status.Phase == "Running" {
					name = p.Labels[k8s.LabelJob]
					return true
				}
			}
			return false
		})
		s.Call(t, "POST", "/scorecards/"+q.ID+"/cancel", "", 200, nil)
		testwait.Until(t, time.Minute, "the job to be deleted in the foreground", func() bool {
			j, err := s.c.Admin.BatchV1().Jobs(s.c.Namespace).Get(context.Background(), name, metav1.GetOptions{})
			return err == nil && j.DeletionTimestamp != nil && slices.Contains(j.Finalizers, metav1.FinalizerDeleteDependents)
		})
		testwait.Until(t, time.Minute, "the cancelled job's Secret to be deleted", func() bool {
			_, err := s.c.Admin.CoreV1().Secrets(s.c.Namespace).Get(context.Background(), k8s.SecretName(name), metav1.GetOptions{})
			return err != nil
		})
	})
}
