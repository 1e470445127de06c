package nomad_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/drivers"
	"svc/drivers/internal/drivertest"
	"svc/drivers/nomad"
	"svc/drivers/nomad/nomadtest"
	"svc/internal/platform/derrors"
	"svc/internal/testing/testwait"
)

// newDriver returns a driver for the fake cluster at url.
func newDriver(t *testing.T, url string, rt nomad.RuntimeOptions) *nomad.Driver {
	t.Helper()
	d, err := nomad.New(nomad.Options{
		Config: nomad.Config{
			Addr: url, Token: nomadtest.Token, Namespace: "evals",
			Guard: drivertest.LoopbackGuard(t), AllowedHosts: []string{"127.0.0.1"},
		},
		Runtime:     rt,
		PendingPoll: 10 * time.Millisecond,
		LogDrain:    5 * time.Second,
		StopWait:    5 * time.Second,
		Logger:      slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return d
}

var dockerRuntime = nomad.RuntimeOptions{TaskDriver: "docker", Image: "registry.example/harness:1"}

// job is a small job of run r1, attempt 1.
func job() drivers.Job {
	return drivers.Job{
		RunID:   "r1",
		Attempt: 1,
		Command: []string{"/bin/harness", "--case", "x"},
		Env:     map[string]string{"MODEL": "m-1"},
		Case:    []byte(`{"id":"c1","task":"say {{ hello }} and ${NOMAD_TASK_DIR}"}`),
	}
}

// registered returns the Job object of the one PUT /v1/jobs the cluster saw.
func registered(t *testing.T, c *nomadtest.Server) (raw string, job map[string]any) {
	t.Helper()
	for _, r := range c.Requests() {
		if r.Method == "PUT" && r.Path == "/v1/jobs" {
			var req struct{ Job map[string]any }
			if err := json.Unmarshal(r.Body, &req); err != nil {
				t.Fatal(err)
			}
			return string(r.Body), req.Job
		}
	}
	t.Fatal("no job was registered")
	return "", nil
}

// task returns the one task of a registered job.
func task(t *testing.T, job map[string]any) map[string]any {
	t.Helper()
	groups, _ := job["TaskGroups"].([]any)
	if len(groups) != 1 {
		t.Fatalf("job has %d task groups, want 1", len(groups))
	}
	tasks, _ := groups[0].(map[string]any)["Tasks"].([]any)
	if len(tasks) != 1 {
		t.Fatalf("group has %d tasks, want 1", len(tasks))
	}
	return tasks[0].(map[string]any)
}

func TestRunSuccess(t *testing.T) {
	c := nomadtest.NewServer(t, nomadtest.Script{
		Stdout: []string{"thinking\n", "the answer is 42\n"},
		Stderr: []string{"warn: slow\n"},
		Trace:  `{"kind":"tool_call","name":"search"}` + "\n",
		Hold:   true,
	})
	d := newDriver(t, c.URL, dockerRuntime)
	var mu sync.Mutex
	streamed := map[string]string{}
	j := job()
	j.Log = func(stream string, data []byte) {
		mu.Lock()
		defer mu.Unlock()
		streamed[stream] += string(data)
	}
	done := runAsync(context.Background(), d, j)
	// While the job runs, the driver waits on its allocations with
	// blocking queries (index and wait), not by polling.
	id := nomad.JobID("r1", 1)
	testwait.Until(t, 10*time.Second, "a blocking query on the running job's allocations", func() bool {
		if c.TaskState(id) != "running" {
			return false
		}
		for _, r := range c.Requests() {
			if r.Path == "/v1/job/"+id+"/allocations" && r.Query.Get("index") != "" && r.Query.Get("wait") != "" {
				return true
			}
		}
		return false
	})
	c.Release(id)
	o := <-done
	res, err := o.res, o.err
	if err != nil {
		t.Fatal(err)
	}
	want := drivers.Result{
		Stdout:     "thinking\nthe answer is 42\n",
		StdoutTail: "thinking\nthe answer is 42\n",
		StderrTail: "warn: slow\n",
		Trace:      []byte(`{"kind":"tool_call","name":"search"}` + "\n"),
		OS:         "linux",
		Driver:     "nomad",
		Image:      "registry.example/harness:1",
	}
	if res.Duration <= 0 {
		t.Errorf("Duration = %v, want the task's run time", res.Duration)
	}
	res.Duration = 0
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("Result (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"stdout": want.Stdout, "stderr": want.StderrTail}, streamed); diff != "" {
		t.Errorf("Log saw (-want +got):\n%s", diff)
	}
	for _, typ := range []string{"stdout", "stderr"} {
		found := false
		for _, r := range c.Requests() {
			if strings.HasPrefix(r.Path, "/v1/client/fs/logs/") && r.Query.Get("type") == typ {
				found = r.Query.Get("follow") == "true" && r.Query.Get("origin") == "start" && r.Query.Get("task") == "harness"
			}
		}
		if !found {
			t.Errorf("no followed %s log stream from the start was requested", typ)
		}
	}
	if n := c.Count("PUT", "/v1/var/"); n != 0 {
		t.Errorf("%d Variables written for a job without secrets", n)
	}
}

func TestRunExitCode(t *testing.T) {
	c := nomadtest.NewServer(t, nomadtest.Script{Stdout: []string{"no\n"}, Exit: 3})
	res, err := newDriver(t, c.URL, dockerRuntime).Run(context.Background(), job())
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 3 || res.TimedOut || res.Cancelled || res.Stdout != "no\n" {
		t.Errorf("Result = %+v, want exit code 3 with its output", res)
	}
}

func TestJobSpec(t *testing.T) {
	c := nomadtest.NewServer(t, nomadtest.Script{})
	two := 2
	d := newDriver(t, c.URL, nomad.RuntimeOptions{
		TaskDriver:    "docker",
		Image:         "registry.example/harness:1",
		Datacenters:   []string{"dc1", "dc2"},
		Constraints:   []nomad.Constraint{{Attribute: "${attr.kernel.name}", Value: "linux"}, {Attribute: "${meta.gpu}", Operator: "is_set"}},
		CPUMhzPerCore: 2400,
		GPU:           1,
	}).WithJobOptions(nomad.JobOptions{CPUMillicores: 1500, MemoryMB: 2048, GPU: &two})
	j := job()
	j.Image = "registry.example/other:2"
	j.Timeout = time.Hour
	j.OTLPEndpoint = "https://otlp.example/v1/traces"
	j.Files = map[string]string{"run.sh": "#!/bin/sh\necho {{ . }}\n", "data/in.txt": "x"}
	j.WorkDir = "data"
	res, err := d.Run(context.Background(), j)
	if err != nil {
		t.Fatal(err)
	}
	if res.Image != "registry.example/other:2" {
		t.Errorf("Image = %q, want the job's image", res.Image)
	}
	_, spec := registered(t, c)
	id := nomad.JobID("r1", 1)
	group := spec["TaskGroups"].([]any)[0].(map[string]any)
	tk := task(t, spec)
	got := map[string]any{
		"ID": spec["ID"], "Type": spec["Type"], "Namespace": spec["Namespace"],
		"Datacenters": spec["Datacenters"], "Constraints": spec["Constraints"], "Meta": spec["Meta"],
		"Count":   group["Count"],
		"Restart": group["RestartPolicy"].(map[string]any)["Attempts"],
		"Resched": []any{group["ReschedulePolicy"].(map[string]any)["Attempts"], group["ReschedulePolicy"].(map[string]any)["Unlimited"]},
		"Driver":  tk["Driver"], "Config": tk["Config"], "Resources": tk["Resources"],
	}
	want := map[string]any{
		"ID": id, "Type": "batch", "Namespace": "evals",
		"Datacenters": []any{"dc1", "dc2"},
		"Constraints": []any{
			map[string]any{"LTarget": "${attr.kernel.name}", "Operand": "=", "RTarget": "linux"},
			map[string]any{"LTarget": "${meta.gpu}", "Operand": "is_set", "RTarget": ""},
		},
		"Meta":    map[string]any{"svc.run_id": "r1", "svc.attempt": "1"},
		"Count":   1.0,
		"Restart": 0.0,
		"Resched": []any{0.0, false},
		"Driver":  "docker",
		"Config": map[string]any{
			"image": "registry.example/other:2", "command": "/bin/harness", "args": []any{"--case", "x"},
			"work_dir": "/local/work/data",
		},
		"Resources": map[string]any{
			"CPU": 3600.0, "MemoryMB": 2048.0,
			"Devices": []any{map[string]any{"Name": "nvidia/gpu", "Count": 2.0}},
		},
	}
	if diff := cmp.Diff(want, dropNulls(got)); diff != "" {
		t.Errorf("job spec (-want +got):\n%s", diff)
	}

	env := tk["Env"].(map[string]any)
	wantEnv := map[string]any{
		"MODEL":                       "m-1",
		"SVC_RUN_ID":                  "r1",
		"SVC_CASE_FILE":               "${NOMAD_TASK_DIR}/case.json",
		"SVC_WORK_DIR":                "${NOMAD_TASK_DIR}/work",
		"SVC_SECRETS_FILE":            "${NOMAD_SECRETS_DIR}/svc-secrets.json",
		"SVC_TRACE_FILE":              "${NOMAD_ALLOC_DIR}/data/svc-trace.jsonl",
		"OTEL_RESOURCE_ATTRIBUTES":    "svc.run_id=r1",
		"OTEL_EXPORTER_OTLP_ENDPOINT": "https://otlp.example/v1/traces",
		"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json",
	}
	if diff := cmp.Diff(wantEnv, env); diff != "" {
		t.Errorf("task env (-want +got):\n%s", diff)
	}

	// The case and the files go in verbatim: their delimiters occur
	// nowhere in them, so "{{ hello }}" is not a template action.
	templates := map[string]map[string]any{}
	for _, tm := range tk["Templates"].([]any) {
		m := tm.(map[string]any)
		templates[m["DestPath"].(string)] = m
	}
	for dest, data := range map[string]string{
		"local/case.json":        string(j.Case),
		"local/work/run.sh":      j.Files["run.sh"],
		"local/work/data/in.txt": "x",
	} {
		tm := templates[dest]
		if tm == nil {
			t.Errorf("no template renders %s", dest)
			continue
		}
		l, r := tm["LeftDelim"].(string), tm["RightDelim"].(string)
		if tm["EmbeddedTmpl"] != data || l == "" || r == "" || strings.Contains(data, l) || strings.Contains(data, r) {
			t.Errorf("template %s = %q with delimiters %q %q, want the data verbatim under delimiters it lacks", dest, tm["EmbeddedTmpl"], l, r)
		}
	}
	if p := templates["local/work/run.sh"]["Perms"]; p != "0755" {
		t.Errorf("run.sh perms = %v, want 0755 for a script", p)
	}
	if tm := templates["secrets/svc-secrets.json"]; tm == nil || tm["EmbeddedTmpl"] != "{}" || tm["Perms"] != "0600" {
		t.Errorf("secrets template = %v, want an empty object, 0600", tm)
	}
}

func TestJobSpecRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		rt   nomad.RuntimeOptions
		jo   nomad.JobOptions
		edit func(*drivers.Job)
		want string
	}{
		{name: "cpu without cpuMhzPerCore", rt: dockerRuntime, jo: nomad.JobOptions{CPUMillicores: 500}, want: "cpuMhzPerCore"},
		{name: "no image", rt: nomad.RuntimeOptions{TaskDriver: "docker"}, want: "image"},
		{name: "unknown task driver", rt: nomad.RuntimeOptions{TaskDriver: "qemu"}, want: "raw_exec"},
		{name: "workDir on exec", rt: nomad.RuntimeOptions{TaskDriver: "exec"}, edit: func(j *drivers.Job) { j.WorkDir = "x" }, want: "workDir"},
		{name: "file outside", rt: dockerRuntime, edit: func(j *drivers.Job) { j.Files = map[string]string{"../x": ""} }, want: "inside the work directory"},
		{name: "no command", rt: dockerRuntime, edit: func(j *drivers.Job) { j.Command = nil }, want: "command is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := nomadtest.NewServer(t, nomadtest.Script{})
			j := job()
			if tc.edit != nil {
				tc.edit(&j)
			}
			_, err := newDriver(t, c.URL, tc.rt).WithJobOptions(tc.jo).Run(context.Background(), j)
			if !errors.Is(err, derrors.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run = %v, want ErrInvalid saying %q", err, tc.want)
			}
			if n := len(c.Requests()); n != 0 {
				t.Errorf("%d requests reached the cluster for a job that cannot run", n)
			}
		})
	}
}

func TestExecDriver(t *testing.T) {
	c := nomadtest.NewServer(t, nomadtest.Script{})
	res, err := newDriver(t, c.URL, nomad.RuntimeOptions{TaskDriver: "raw_exec", Image: "ignored:1"}).Run(context.Background(), job())
	if err != nil {
		t.Fatal(err)
	}
	_, spec := registered(t, c)
	want := map[string]any{"command": "/bin/harness", "args": []any{"--case", "x"}}
	if diff := cmp.Diff(want, task(t, spec)["Config"]); diff != "" || res.Image != "" {
		t.Errorf("raw_exec config (-want +got):\n%s\nImage %q, want none", diff, res.Image)
	}
}

func TestSecretsAsFiles(t *testing.T) {
	const secret = "sk-live-0123456789abcdef"
	c := nomadtest.NewServer(t, nomadtest.Script{Stdout: []string{"ok\n"}})
	d := newDriver(t, c.URL, dockerRuntime)
	j := job()
	j.Secrets = map[string]string{"API_KEY": secret}
	if _, err := d.Run(context.Background(), j); err != nil {
		t.Fatal(err)
	}
	id := nomad.JobID("r1", 1)
	path := "/v1/var/nomad/jobs/" + id

	raw, spec := registered(t, c)
	if strings.Contains(raw, secret) {
		t.Error("the registered job contains the secret value")
	}
	tk := task(t, spec)
	for k, v := range tk["Env"].(map[string]any) {
		if strings.Contains(k+"="+v.(string), secret) {
			t.Errorf("env %s carries the secret", k)
		}
	}
	var secretsTmpl map[string]any
	for _, tm := range tk["Templates"].([]any) {
		if m := tm.(map[string]any); m["DestPath"] == "secrets/svc-secrets.json" {
			secretsTmpl = m
		}
	}
	if secretsTmpl == nil || secretsTmpl["Perms"] != "0600" || secretsTmpl["Once"] != true ||
		!strings.HasPrefix(secretsTmpl["EmbeddedTmpl"].(string), `{{ with nomadVar "nomad/jobs/`+id+`" }}`) {
		t.Errorf("secrets template = %v, want the job's Variable rendered once, 0600", secretsTmpl)
	}

	// The Variable is written before the job and deleted after it.
	var order []string
	for _, r := range c.Requests() {
		switch {
		case r.Path == path && r.Method == "PUT":
			order = append(order, "write variable")
			var v struct {
				Items map[string]string
			}
			if err := json.Unmarshal(r.Body, &v); err != nil || v.Items["API_KEY"] != secret {
				t.Errorf("Variable written with %s, want the secret under API_KEY", r.Body)
			}
		case r.Path == "/v1/jobs" && r.Method == "PUT":
			order = append(order, "register")
		case r.Path == path && r.Method == "DELETE":
			order = append(order, "delete variable")
		case r.Path != path && strings.Contains(string(r.Body), secret):
			t.Errorf("%s %s carried the secret", r.Method, r.Path)
		}
		if strings.Contains(r.Query.Encode(), secret) || strings.Contains(r.Query.Encode(), nomadtest.Token) {
			t.Errorf("%s %s carried a credential in its query", r.Method, r.Path)
		}
		if strings.Contains(string(r.Body), nomadtest.Token) {
			t.Errorf("%s %s carried the cluster token in its body", r.Method, r.Path)
		}
	}
	if diff := cmp.Diff([]string{"write variable", "register", "delete variable"}, order); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	left := c.Variables()
	if left != 0 {
		t.Errorf("%d Variables left after the job", left)
	}
}

func TestAdoptOnRetry(t *testing.T) {
	c := nomadtest.NewServer(t, nomadtest.Script{Stdout: []string{"done\n"}, Trace: "{}\n", Hold: true})
	d := newDriver(t, c.URL, dockerRuntime)
	id := nomad.JobID("r1", 1)
	first := runAsync(context.Background(), d, job())
	testwait.Until(t, 10*time.Second, "the first attempt's job to run", func() bool { return c.TaskState(id) == "running" })

	// The activity is retried while the first Run still follows the job:
	// the second Run of the same attempt adopts it.
	second := runAsync(context.Background(), d, job())
	testwait.Until(t, 10*time.Second, "the second Run to look the job up", func() bool {
		return c.Count("GET", "/v1/job/"+id) >= 2
	})
	c.Release(id)
	a, b := <-first, <-second
	if a.err != nil || b.err != nil {
		t.Fatalf("Run errors: %v, %v", a.err, b.err)
	}
	a.res.Duration, b.res.Duration = 0, 0
	if diff := cmp.Diff(a.res, b.res); diff != "" {
		t.Errorf("the adopting Run saw another result (-first +second):\n%s", diff)
	}
	if b.res.Stdout != "done\n" || string(b.res.Trace) != "{}\n" {
		t.Errorf("adopted Result = %+v, want the job's output and trace", b.res)
	}
	if n := c.Count("PUT", "/v1/jobs"); n != 1 {
		t.Errorf("%d jobs registered, want 1", n)
	}

	// A third Run after the job ended adopts the dead job too.
	res, err := d.Run(context.Background(), job())
	if err != nil || res.Stdout != "done\n" {
		t.Errorf("Run after the end = %+v, %v; want the same result", res, err)
	}
	if n := c.Count("PUT", "/v1/jobs"); n != 1 {
		t.Errorf("%d jobs registered after a third Run, want 1", n)
	}

	// Another attempt is another job.
	j := job()
	j.Attempt = 2
	done := runAsync(context.Background(), d, j)
	testwait.Until(t, 10*time.Second, "attempt 2 to run", func() bool { return c.TaskState(nomad.JobID("r1", 2)) == "running" })
	c.Release(nomad.JobID("r1", 2))
	if o := <-done; o.err != nil {
		t.Fatal(o.err)
	}
	if n := c.Count("PUT", "/v1/jobs"); n != 2 {
		t.Errorf("%d jobs registered after attempt 2, want 2", n)
	}
}

func TestAdoptRefusesForeignJob(t *testing.T) {
	c := nomadtest.NewServer(t, nomadtest.Script{})
	id := nomad.JobID("r1", 1)
	c.AddJob(id, map[string]any{"ID": id, "Meta": map[string]any{"owner": "someone"}})
	_, err := newDriver(t, c.URL, dockerRuntime).Run(context.Background(), job())
	if !errors.Is(err, derrors.ErrConflict) {
		t.Fatalf("Run = %v, want ErrConflict for a job this service did not register", err)
	}
}

// outcome is what a Run returned.
type outcome struct {
	res drivers.Result
	err error
}

// runAsync runs j in the background.
func runAsync(ctx context.Context, d *nomad.Driver, j drivers.Job) <-chan outcome {
	done := make(chan outcome, 1)
	go func() {
		res, err := d.Run(ctx, j)
		done <- outcome{res, err}
	}()
	return done
}

// stopped checks that job id was deregistered once, without purge.
func stopped(t *testing.T, c *nomadtest.Server, id string) {
	t.Helper()
	n := 0
	for _, r := range c.Requests() {
		if r.Method == "DELETE" && r.Path == "/v1/job/"+id {
			n++
			if r.Query.Get("purge") == "true" {
				t.Error("the job was purged; deregister keeps it for Nomad's GC")
			}
		}
	}
	if n != 1 {
		t.Errorf("job deregistered %d times, want 1", n)
	}
}

func TestTimeout(t *testing.T) {
	c := nomadtest.NewServer(t, nomadtest.Script{Stdout: []string{"working\n"}, Hold: true})
	j := job()
	j.Timeout = 200 * time.Millisecond
	j.Secrets = map[string]string{"K": "v-secret"}
	start := time.Now()
	res, err := newDriver(t, c.URL, dockerRuntime).Run(context.Background(), j)
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut || res.Cancelled || res.ExitCode != -1 || res.Stdout != "working\n" {
		t.Errorf("Result = %+v, want TimedOut, exit -1, with the output so far", res)
	}
	if time.Since(start) < j.Timeout {
		t.Errorf("Run returned after %v, before the timeout", time.Since(start))
	}
	stopped(t, c, nomad.JobID("r1", 1))
	if c.Count("DELETE", "/v1/var/") != 1 {
		t.Error("the secrets Variable was not deleted after the timeout")
	}
}

func TestCancel(t *testing.T) {
	c := nomadtest.NewServer(t, nomadtest.Script{Stdout: []string{"working\n"}, Hold: true})
	id := nomad.JobID("r1", 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := runAsync(ctx, newDriver(t, c.URL, dockerRuntime), job())
	testwait.Until(t, 10*time.Second, "the job to run", func() bool { return c.TaskState(id) == "running" })
	cancel()
	o := <-done
	res, err := o.res, o.err
	if err != nil {
		t.Fatal(err)
	}
	if !res.Cancelled || res.TimedOut || res.ExitCode != -1 {
		t.Errorf("Result = %+v, want Cancelled with exit -1", res)
	}
	stopped(t, c, id)
	if s := c.TaskState(id); s != "dead" {
		t.Errorf("task state after Run = %q, want dead", s)
	}

	// A retry of the cancelled attempt adopts the stopped job: cancelled.
	res, err = newDriver(t, c.URL, dockerRuntime).Run(context.Background(), job())
	if err != nil || !res.Cancelled || res.ExitCode != -1 {
		t.Errorf("Run after the cancel = %+v, %v; want the stopped job's Cancelled result", res, err)
	}
	if n := c.Count("PUT", "/v1/jobs"); n != 1 {
		t.Errorf("%d jobs registered, want 1", n)
	}
}

func TestCancelBeforePlacement(t *testing.T) {
	c := nomadtest.NewServer(t, nomadtest.Script{Hold: true})
	c.SetStep(200 * time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	done := runAsync(ctx, newDriver(t, c.URL, dockerRuntime), job())
	testwait.Until(t, 10*time.Second, "the job to be registered", func() bool { return c.Count("PUT", "/v1/jobs") == 1 })
	cancel()
	o := <-done
	res, err := o.res, o.err
	if err != nil {
		t.Fatal(err)
	}
	if !res.Cancelled || res.ExitCode != -1 {
		t.Errorf("Result = %+v, want Cancelled with exit -1", res)
	}
	stopped(t, c, nomad.JobID("r1", 1))
}

func TestCancelDuringRegistration(t *testing.T) {
	c := nomadtest.NewServer(t, nomadtest.Script{Hold: true, SlowRegister: true})
	ctx, cancel := context.WithCancel(context.Background())
	j := job()
	j.Secrets = map[string]string{"K": "v-secret"}
	done := runAsync(ctx, newDriver(t, c.URL, dockerRuntime), j)
	testwait.Until(t, 10*time.Second, "the registration to reach the cluster", func() bool { return c.Count("PUT", "/v1/jobs") == 1 })
	cancel()
	o := <-done
	if o.err != nil || !o.res.Cancelled {
		t.Fatalf("Run = %+v, %v; want a Cancelled result", o.res, o.err)
	}
	stopped(t, c, nomad.JobID("r1", 1))
	if c.Count("DELETE", "/v1/var/") != 1 {
		t.Error("the secrets Variable was not deleted")
	}
}

func TestPlacementFailure(t *testing.T) {
	c := nomadtest.NewServer(t, nomadtest.Script{PlacementFails: true})
	j := job()
	j.Secrets = map[string]string{"K": "v-secret"}
	_, err := newDriver(t, c.URL, dockerRuntime).Run(context.Background(), j)
	if !errors.Is(err, derrors.ErrInvalid) {
		t.Fatalf("Run = %v, want an ErrInvalid dispatch error", err)
	}
	for _, want := range []string{"cannot be placed", "3 node(s) excluded by constraint ${attr.kernel.name} = windows", "fix the runtime's constraints"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	stopped(t, c, nomad.JobID("r1", 1))
	if c.Count("DELETE", "/v1/var/") != 1 {
		t.Error("the secrets Variable was not deleted after the placement failure")
	}
}

func TestTaskNeverStarts(t *testing.T) {
	c := nomadtest.NewServer(t, nomadtest.Script{DriverFailure: true})
	_, err := newDriver(t, c.URL, dockerRuntime).Run(context.Background(), job())
	if !errors.Is(err, derrors.ErrInvalid) || !strings.Contains(err.Error(), "Failed to pull") || !strings.Contains(err.Error(), "check the image") {
		t.Fatalf("Run = %v, want ErrInvalid with the driver's failure and what to check", err)
	}
}

func TestLogsRefused(t *testing.T) {
	c := nomadtest.NewServer(t, nomadtest.Script{Stdout: []string{"answer\n"}, LogsRefused: true})
	_, err := newDriver(t, c.URL, dockerRuntime).Run(context.Background(), job())
	if err == nil || !strings.Contains(err.Error(), "reading the task's std") || !strings.Contains(err.Error(), "HTTP 403") {
		t.Fatalf("Run = %v, want an error saying the output could not be read", err)
	}
	if n := c.Count("DELETE", "/v1/job/"); n != 0 {
		t.Errorf("the ended job was deregistered %d times; it is kept for the retry", n)
	}
}

func TestTokenRefused(t *testing.T) {
	c := nomadtest.NewServer(t, nomadtest.Script{})
	d, err := nomad.New(nomad.Options{Config: nomad.Config{
		Addr: c.URL, Token: "tok-wrong-1234", Guard: drivertest.LoopbackGuard(t), AllowedHosts: []string{"127.0.0.1"},
	}, Runtime: dockerRuntime})
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.Run(context.Background(), job())
	if err == nil || !strings.Contains(err.Error(), "refused the runtime's token") || strings.Contains(err.Error(), "tok-wrong-1234") || strings.Contains(err.Error(), "ACL token not found") {
		t.Fatalf("Run = %v, want the refusal in the service's words, without the token or the body", err)
	}
}

func TestJobID(t *testing.T) {
	for _, tc := range []struct {
		run     string
		attempt int
		want    string
	}{
		{"r1", 1, "svc-r1-a1"},
		{"r1", 2, "svc-r1-a2"},
		{"run/with spaces", 1, "svc-run_with_spaces-"},
	} {
		got := nomad.JobID(tc.run, tc.attempt)
		if !strings.HasPrefix(got, tc.want) {
			t.Errorf("JobID(%q, %d) = %q, want prefix %q", tc.run, tc.attempt, got, tc.want)
		}
	}
	if nomad.JobID("a/b", 1) == nomad.JobID("a_b", 1) || nomad.JobID("a b", 1) == nomad.JobID("a/b", 1) {
		t.Error("two run ids share a job ID")
	}
}

// dropNulls removes the null members of decoded JSON objects (the fields
// the driver leaves to Nomad's defaults).
func dropNulls(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, x := range v {
			if x != nil {
				out[k] = dropNulls(x)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = dropNulls(x)
		}
		return out
	}
	return v
}

func TestDetach(t *testing.T) {
	c := nomadtest.NewServer(t, nomadtest.Script{Stdout: []string{"working\n"}, Trace: "{}\n", Hold: true})
	d := newDriver(t, c.URL, dockerRuntime)
	id := nomad.JobID("r1", 1)
	j := job()
	j.Secrets = map[string]string{"K": "v-secret-value"}
	ctx, cancel := context.WithCancelCause(context.Background())
	done := runAsync(ctx, d, j)
	testwait.Until(t, 10*time.Second, "the job to run", func() bool { return c.TaskState(id) == "running" })

	// The worker lost its lease: the job is left, not stopped.
	lost := errors.New("lease lost")
	cancel(drivers.Detach(lost))
	o := <-done
	if !errors.Is(o.err, lost) {
		t.Fatalf("Run = %+v, %v; want an error wrapping the detach's cause", o.res, o.err)
	}
	if n := c.Count("DELETE", "/v1/job/"); n != 0 || c.Stopped(id) {
		t.Errorf("the detached job was deregistered %d times; it is left for the next attempt", n)
	}
	if c.Variables() != 1 {
		t.Errorf("%d Variables after a detach, want the job's secrets kept for the next attempt", c.Variables())
	}

	// The next attempt adopts the running job and follows it to its end.
	next := runAsync(context.Background(), d, j)
	testwait.Until(t, 10*time.Second, "the next Run to look the job up", func() bool { return c.Count("GET", "/v1/job/"+id) >= 2 })
	c.Release(id)
	o = <-next
	if o.err != nil || o.res.Stdout != "working\n" || o.res.ExitCode != 0 || o.res.Cancelled {
		t.Fatalf("adopting Run = %+v, %v; want the job's output, exit 0", o.res, o.err)
	}
	if n := c.Count("PUT", "/v1/jobs"); n != 1 {
		t.Errorf("%d jobs registered, want 1", n)
	}
	if c.Variables() != 0 {
		t.Error("the secrets Variable was not deleted once the adopted job ended")
	}
}

func TestStop(t *testing.T) {
	c := nomadtest.NewServer(t, nomadtest.Script{Stdout: []string{"working\n"}, Hold: true})
	d := newDriver(t, c.URL, dockerRuntime)
	id := nomad.JobID("r1", 1)
	if err := d.Stop(context.Background(), "r1", 1); err != nil {
		t.Fatalf("Stop of a run without a job = %v, want nil", err)
	}
	j := job()
	j.Secrets = map[string]string{"K": "v-secret-value"}
	ctx, cancel := context.WithCancelCause(context.Background())
	done := runAsync(ctx, d, j)
	testwait.Until(t, 10*time.Second, "the job to run", func() bool { return c.TaskState(id) == "running" })
	cancel(drivers.Detach(errors.New("lease lost")))
	<-done

	// Given up on: the job is stopped, not purged, and its secrets go.
	if err := d.Stop(context.Background(), "r1", 1); err != nil {
		t.Fatal(err)
	}
	stopped(t, c, id)
	if c.TaskState(id) != "dead" || c.Variables() != 0 {
		t.Errorf("after Stop: task %s, %d Variables; want dead, none", c.TaskState(id), c.Variables())
	}
	// Another service's job of that ID is left alone.
	other := nomad.JobID("r2", 1)
	c.AddJob(other, map[string]any{"ID": other, "Meta": map[string]any{"owner": "someone"}})
	if err := d.Stop(context.Background(), "r2", 1); !errors.Is(err, derrors.ErrConflict) || c.Stopped(other) {
		t.Errorf("Stop of a foreign job = %v (stopped %v), want ErrConflict and the job left", err, c.Stopped(other))
	}
}

func TestAddressRefusedByGuard(t *testing.T) {
	c := nomadtest.NewServer(t, nomadtest.Script{})
	// No guard: the default one, which refuses loopback.
	d, err := nomad.New(nomad.Options{Config: nomad.Config{
		Addr: c.URL, Token: nomadtest.Token, AllowedHosts: []string{"127.0.0.1"},
	}, Runtime: dockerRuntime})
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.Run(context.Background(), job())
	if !errors.Is(err, derrors.ErrInvalid) || !strings.Contains(err.Error(), "SVC_PROBE_ALLOW") {
		t.Fatalf("Run = %v, want ErrInvalid naming SVC_PROBE_ALLOW: no retry can reach a refused address", err)
	}
	if n := len(c.Requests()); n != 0 {
		t.Errorf("%d requests reached the refused address", n)
	}
}
