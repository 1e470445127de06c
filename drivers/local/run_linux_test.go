//go:build linux

package local

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/drivers"
	"svc/drivers/local/shim"
	"svc/internal/platform/derrors"
	"svc/internal/testing/testwait"
)

// helperEnv switches the test binary into a helper process that runs one
// tree job through the driver and never returns (see TestParentDeath).
const helperEnv = "LOCAL_TEST_HELPER_ROOT"

func TestMain(m *testing.M) {
	if root := os.Getenv(helperEnv); root != "" {
		os.Exit(helperMain(root, os.Getenv("LOCAL_TEST_HELPER_PIDS")))
	}
	os.Exit(m.Run())
}

// helperMain runs treeScript under a driver rooted at root; it returns
// only if the job ends, which the test counts as a failure.
func helperMain(root, pids string) int {
	o := Options{Root: root}
	jobs := 1
	switch os.Getenv("LOCAL_TEST_HELPER_ISOLATE") {
	case "user":
		uid, gid, err := ResolveUser("")
		if err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			return 3
		}
		o.Isolate = &Isolation{UID: uid, GID: gid, Hide: []string{filepath.Dir(root)}}
	case "pool":
		o.Isolate = &Isolation{UIDs: &DefaultUIDs, Hide: []string{filepath.Dir(root)}}
		jobs = 2 // every job of the server dies with the service
	}
	d := New(o)
	ended := make(chan error)
	for i := range jobs {
		runID := "parent-death"
		if i > 0 {
			runID += fmt.Sprint("-", i+1)
		}
		go func() {
			_, err := d.Run(context.Background(), drivers.Job{
				RunID:   runID,
				Command: []string{"/bin/sh", "-c", treeScript},
				Env:     map[string]string{"PIDS": pids},
			})
			ended <- err
		}()
	}
	fmt.Fprintln(os.Stderr, "helper: a job ended:", <-ended)
	return 3
}

// treeScript starts a tree that a group kill alone would not end: a
// grandchild in the group, one that left it with setsid, and a nested
// shell with a child of its own. It appends every pid to $PIDS, prints
// "ready" when all five are written, creates $PIDS.ready (after which it
// writes nothing more), then waits.
const treeScript = `
sleep 1000 & echo $! >> "$PIDS"
setsid sleep 1000 & echo $! >> "$PIDS"
sh -c 'sleep 1000 & echo $! >> "$PIDS"; : > "$PIDS.inner"; wait' & echo $! >> "$PIDS"
echo $$ >> "$PIDS"
while [ ! -e "$PIDS.inner" ]; do sleep 0.01; done
echo ready
: > "$PIDS.ready"
wait
`

// treePids is how many pids treeScript writes.
const treePids = 5

// newDriver returns a driver rooted in a fresh directory, with a short
// kill grace so that the SIGKILL path is exercised quickly, closed when
// the test ends.
func newDriver(t *testing.T, o Options) *Driver {
	t.Helper()
	if o.Root == "" {
		o.Root = t.TempDir()
	}
	if o.KillGrace == 0 {
		o.KillGrace = 200 * time.Millisecond
	}
	d := New(o)
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return d
}

// mode is how a test's driver runs jobs: each under a supervisor of its
// own (the shim, not isolated), or on the job server, each job as a uid of
// its own from the pool.
type mode struct {
	name string
	pool bool
}

// modes are the modes every behaviour of the driver is tested in.
var modes = []mode{{name: "shim"}, {name: "pool", pool: true}}

// eachMode runs f as a subtest per mode.
func eachMode(t *testing.T, f func(t *testing.T, m mode)) {
	t.Helper()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			if m.pool && os.Geteuid() != 0 {
				t.Skip("the job server needs root")
			}
			f(t, m)
		})
	}
}

// driver returns a driver of mode m for o (see newDriver); in pool mode
// its root is in a data directory of its own, hidden from the jobs.
func (m mode) driver(t *testing.T, o Options) *Driver {
	t.Helper()
	if m.pool {
		dataDir := t.TempDir()
		o.Root = filepath.Join(dataDir, "work")
		o.Isolate = &Isolation{UIDs: &DefaultUIDs, Hide: []string{dataDir}}
	}
	return newDriver(t, o)
}

// jobDir returns a directory that every job of d may write (an isolated
// job's only writable place on disk is its own area, removed when it
// ends) and the test reads afterwards.
func jobDir(t *testing.T, d *Driver) string {
	t.Helper()
	dir, err := os.MkdirTemp(d.Root(), ".test-")
	if err != nil {
		if err := os.MkdirAll(d.Root(), 0o711); err != nil {
			t.Fatal(err)
		}
		if dir, err = os.MkdirTemp(d.Root(), ".test-"); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o1777); err != nil {
		t.Fatal(err)
	}
	return dir
}

// procDir is the /proc where the pids a job of d sees are: the job
// server's, whose PID namespace the jobs share, or the host's.
func procDir(d *Driver) string {
	if d == nil {
		return "/proc"
	}
	if pid := d.serverPid(); pid != 0 {
		return fmt.Sprintf("/proc/%d/root/proc", pid)
	}
	return "/proc"
}

// assertOnlyServer checks, for a driver with a job server, that nothing
// but the server itself is left in its PID namespace, not even a zombie.
func assertOnlyServer(t *testing.T, d *Driver) {
	t.Helper()
	if d.serverPid() == 0 {
		return
	}
	ents, err := os.ReadDir(procDir(d))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err == nil && e.Name() != "1" {
			t.Errorf("process %s is left in the job server's PID namespace", e.Name())
		}
	}
}

// sh is the argv running script with /bin/sh.
func sh(script string) []string { return []string{"/bin/sh", "-c", script} }

// readPids parses the pids file the tree script wrote.
func readPids(t *testing.T, path string) []int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading pids: %v", err)
	}
	var pids []int
	for f := range strings.FieldsSeq(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("pids file %q: %v", b, err)
		}
		pids = append(pids, pid)
	}
	return pids
}

// gone reports whether pid, as a job of d sees it, has no process at all,
// not even a zombie: the shim reaps everything it kills.
func gone(d *Driver, pid int) bool {
	_, err := os.Stat(procDir(d) + "/" + strconv.Itoa(pid))
	return errors.Is(err, os.ErrNotExist)
}

// running reports whether pid is a process that has not exited (a zombie
// has); for processes whose reaping is up to init.
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	p, ok := shim.ParseStat(pid, b)
	return ok && !p.Zombie
}

// assertAreaRemoved checks that nothing of the job is left on disk.
func assertAreaRemoved(t *testing.T, d *Driver, runID string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(d.Root(), areaName(runID))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("work area of %q still exists after Run (stat: %v)", runID, err)
	}
}

func TestRunSuccess(t *testing.T) { eachMode(t, testRunSuccess) }

func testRunSuccess(t *testing.T, m mode) {
	d := m.driver(t, Options{})
	caseJSON := `{"id":"case-1","task":"add"}`
	var (
		mu     sync.Mutex
		logged = map[string]*bytes.Buffer{"stdout": {}, "stderr": {}}
	)
	res, err := d.Run(t.Context(), drivers.Job{
		RunID: "run-ok",
		Command: sh(`cat "$SVC_CASE_FILE"; echo
echo '{"kind":"step"}' >> "$SVC_TRACE_FILE"
echo oops >&2
pwd`),
		Case:  []byte(caseJSON),
		Image: "ignored:latest",
		Log: func(stream string, data []byte) {
			mu.Lock()
			defer mu.Unlock()
			logged[stream].Write(data)
		},
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	wantOut := caseJSON + "\n" + filepath.Join(d.Root(), "run-ok", "work") + "\n"
	want := drivers.Result{
		ExitCode:   0,
		Stdout:     wantOut,
		StdoutTail: wantOut,
		StderrTail: "oops\n",
		Trace:      []byte(`{"kind":"step"}` + "\n"),
		OS:         "linux",
		Driver:     "local",
		Image:      "ignored:latest",
	}
	if res.Duration <= 0 {
		t.Errorf("Duration = %v, want > 0", res.Duration)
	}
	res.Duration = 0
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("Result mismatch (-want +got):\n%s", diff)
	}
	if got := logged["stdout"].String(); got != wantOut {
		t.Errorf("logged stdout = %q, want %q", got, wantOut)
	}
	if got := logged["stderr"].String(); got != "oops\n" {
		t.Errorf("logged stderr = %q, want %q", got, "oops\n")
	}
	assertAreaRemoved(t, d, "run-ok")
}

func TestRunOutputCaps(t *testing.T) { eachMode(t, testRunOutputCaps) }

func testRunOutputCaps(t *testing.T, m mode) {
	d := m.driver(t, Options{})
	const total = drivers.MaxOutput + 1<<20
	var logged int
	res, err := d.Run(t.Context(), drivers.Job{
		RunID: "run-big",
		Command: sh(fmt.Sprintf(`head -c %d /dev/zero | tr '\0' a; printf END
head -c %d /dev/zero | tr '\0' t > "$SVC_TRACE_FILE"`, total, total)),
		Log: func(stream string, data []byte) { logged += len(data) },
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(res.Stdout) != drivers.MaxOutput || strings.Trim(res.Stdout, "a") != "" {
		t.Errorf("Stdout has %d bytes, want the first %d", len(res.Stdout), drivers.MaxOutput)
	}
	if len(res.StdoutTail) != drivers.TailBytes || !strings.HasSuffix(res.StdoutTail, "aEND") {
		t.Errorf("StdoutTail has %d bytes, want the last %d", len(res.StdoutTail), drivers.TailBytes)
	}
	if len(res.Trace) != drivers.MaxOutput {
		t.Errorf("Trace has %d bytes, want %d", len(res.Trace), drivers.MaxOutput)
	}
	if logged != total+len("END") {
		t.Errorf("Log saw %d bytes, want all %d", logged, total+len("END"))
	}
}

func TestRunEnvironment(t *testing.T) { eachMode(t, testRunEnvironment) }

func testRunEnvironment(t *testing.T, m mode) {
	// Variables of the service itself must not reach the harness.
	t.Setenv("SVC_SECRET_KEY", "service-only")
	const secret = "s3cr3t-value"
	type envCase struct {
		name        string
		optEndpoint string
		job         drivers.Job
		want        map[string]string // beyond the fixed contract variables
	}
	tests := []envCase{
		{
			name: "defaults",
			job:  drivers.Job{RunID: "env-1"},
			want: map[string]string{},
		},
		{
			name:        "driver endpoint",
			optEndpoint: "http://127.0.0.1:4318",
			job:         drivers.Job{RunID: "env-2", Env: map[string]string{"FOO": "bar"}},
			want: map[string]string{
				"FOO":                         "bar",
				"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318",
				"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json",
			},
		},
		{
			name:        "job endpoint wins, contract wins over job env",
			optEndpoint: "http://127.0.0.1:4318",
			job: drivers.Job{
				RunID:        "env,3",
				OTLPEndpoint: "http://collector:4318",
				Env: map[string]string{
					"SVC_CASE_FILE":               "/etc/passwd",
					"SVC_RUN_ID":                  "other",
					"OTEL_EXPORTER_OTLP_ENDPOINT": "http://evil",
					"OTEL_RESOURCE_ATTRIBUTES":    "team=a,svc.run_id=other",
					"LANG":                        "en_US.UTF-8",
					shim.Marker:                   "1",
				},
			},
			want: map[string]string{
				"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318",
				"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json",
				"OTEL_RESOURCE_ATTRIBUTES":    "svc.run_id=env%2C3,team=a",
				"LANG":                        "en_US.UTF-8",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := m.driver(t, Options{OTLPEndpoint: tt.optEndpoint})
			j := tt.job
			j.Secrets = map[string]string{"API_KEY": secret}
			// The harness prints its own initial environment (what the
			// driver passed, nothing a shell added), then what its parent,
			// the shim, got in argv and environment (the job server is
			// root's, out of a job's sight), then the secrets file.
			j.Command = sh(`tr '\0' '\n' < /proc/$$/environ; echo ---
tr '\0' ' ' < /proc/$PPID/cmdline 2>/dev/null; tr '\0' ' ' < /proc/$PPID/environ 2>/dev/null; echo; echo ---
stat -c %a "$SVC_SECRETS_FILE"; cat "$SVC_SECRETS_FILE"`)
			res, err := d.Run(t.Context(), j)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			parts := strings.Split(res.Stdout, "---\n")
			if len(parts) != 3 {
				t.Fatalf("stdout = %q, want three parts", res.Stdout)
			}
			got := map[string]string{}
			for line := range strings.Lines(parts[0]) {
				k, v, _ := strings.Cut(strings.TrimSuffix(line, "\n"), "=")
				got[k] = v
			}
			area := filepath.Join(d.Root(), areaName(j.RunID))
			want := map[string]string{
				"PATH":                     os.Getenv("PATH"),
				"HOME":                     filepath.Join(area, "home"),
				"TMPDIR":                   filepath.Join(area, "tmp"),
				"LANG":                     "C.UTF-8",
				"SVC_CASE_FILE":            filepath.Join(area, "case.json"),
				"SVC_TRACE_FILE":           filepath.Join(area, "trace.jsonl"),
				"SVC_WORK_DIR":             filepath.Join(area, "work"),
				"SVC_SECRETS_FILE":         filepath.Join(area, "secrets.json"),
				"SVC_RUN_ID":               j.RunID,
				"OTEL_RESOURCE_ATTRIBUTES": "svc.run_id=" + drivers.PercentEncode(j.RunID),
			}
			for k, v := range tt.want {
				want[k] = v
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("harness environment mismatch (-want +got):\n%s", diff)
			}
			if strings.Contains(parts[0]+parts[1], secret) {
				t.Errorf("a secret value reached the environment or argv of the harness or its supervisor:\n%s", parts[0]+parts[1])
			}
			switch {
			case m.pool && parts[1] != "\n":
				t.Errorf("the harness reads its parent, the job server: %q", parts[1])
			case !m.pool && !strings.HasPrefix(parts[1], shim.Arg0+" "):
				t.Errorf("the harness's parent is %q, want the shim", parts[1])
			}
			mode, content, _ := strings.Cut(parts[2], "\n")
			if mode != "600" {
				t.Errorf("secrets file mode = %s, want 600", mode)
			}
			var secrets map[string]string
			if err := json.Unmarshal([]byte(content), &secrets); err != nil {
				t.Fatalf("secrets file %q: %v", content, err)
			}
			if diff := cmp.Diff(j.Secrets, secrets); diff != "" {
				t.Errorf("secrets file mismatch (-want +got):\n%s", diff)
			}
			assertAreaRemoved(t, d, j.RunID)
		})
	}
}

func TestRunExitCode(t *testing.T) { eachMode(t, testRunExitCode) }

func testRunExitCode(t *testing.T, m mode) {
	d := m.driver(t, Options{})
	res, err := d.Run(t.Context(), drivers.Job{RunID: "run-fail", Command: sh(`echo failing >&2; exit 3`)})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.ExitCode != 3 || res.TimedOut || res.Cancelled || res.StderrTail != "failing\n" {
		t.Errorf("Result = %+v, want exit 3 with stderr %q, not timed out or cancelled", res, "failing\n")
	}
}

// runTree runs treeScript with the given timeout and cancel hook and
// returns the result and the pids the tree wrote.
func runTree(t *testing.T, m mode, runID string, timeout time.Duration, onReady func()) (drivers.Result, []int) {
	t.Helper()
	d := m.driver(t, Options{})
	pidsFile := filepath.Join(jobDir(t, d), "pids")
	var out bytes.Buffer
	res, err := d.Run(t.Context(), drivers.Job{
		RunID: runID,
		// Ignoring SIGTERM, inherited by the whole tree, forces the SIGKILL
		// after the grace.
		Command: sh("trap '' TERM\n" + treeScript),
		Env:     map[string]string{"PIDS": pidsFile},
		Timeout: timeout,
		Log: func(stream string, data []byte) {
			out.Write(data)
			if onReady != nil && strings.Contains(out.String(), "ready\n") {
				onReady()
				onReady = nil
			}
		},
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	pids := readPids(t, pidsFile)
	if len(pids) != treePids {
		t.Fatalf("the tree wrote %d pids, want %d (killed before it was ready?)", len(pids), treePids)
	}
	for _, pid := range pids {
		if !gone(d, pid) {
			t.Errorf("process %d of the job is still there after Run returned", pid)
		}
	}
	assertOnlyServer(t, d)
	assertAreaRemoved(t, d, runID)
	return res, pids
}

func TestRunTimeoutKillsTree(t *testing.T) {
	eachMode(t, func(t *testing.T, m mode) {
		res, _ := runTree(t, m, "run-timeout", 2*time.Second, nil)
		if !res.TimedOut || res.Cancelled || res.ExitCode != -1 || res.Stdout != "ready\n" {
			t.Errorf("Result = %+v, want timed out, exit -1, stdout ready", res)
		}
	})
}

func TestRunCancelKillsTree(t *testing.T) { eachMode(t, testRunCancelKillsTree) }

func testRunCancelKillsTree(t *testing.T, m mode) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	d := m.driver(t, Options{})
	pidsFile := filepath.Join(jobDir(t, d), "pids")
	var out bytes.Buffer
	res, err := d.Run(ctx, drivers.Job{
		RunID:   "run-cancel",
		Command: sh(treeScript),
		Env:     map[string]string{"PIDS": pidsFile},
		Log: func(stream string, data []byte) {
			out.Write(data)
			if strings.Contains(out.String(), "ready\n") {
				cancel()
			}
		},
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !res.Cancelled || res.TimedOut || res.ExitCode != -1 {
		t.Errorf("Result = %+v, want cancelled, exit -1", res)
	}
	pids := readPids(t, pidsFile)
	if len(pids) != treePids {
		t.Fatalf("the tree wrote %d pids, want %d", len(pids), treePids)
	}
	for _, pid := range pids {
		if !gone(d, pid) {
			t.Errorf("process %d of the job is still there after Run returned", pid)
		}
	}
	assertOnlyServer(t, d)
	assertAreaRemoved(t, d, "run-cancel")
}

func TestRunNormalExitKillsLeftovers(t *testing.T) { eachMode(t, testRunNormalExitKillsLeftovers) }

func testRunNormalExitKillsLeftovers(t *testing.T, m mode) {
	d := m.driver(t, Options{})
	pidsFile := filepath.Join(jobDir(t, d), "pids")
	// The harness exits at once, leaving a grandchild that holds stdout
	// and one that left its group.
	res, err := d.Run(t.Context(), drivers.Job{
		RunID:   "run-leftovers",
		Command: sh(`sleep 1000 & echo $! >> "$PIDS"; setsid sleep 1000 & echo $! >> "$PIDS"; echo done`),
		Env:     map[string]string{"PIDS": pidsFile},
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.ExitCode != 0 || res.Stdout != "done\n" {
		t.Errorf("Result = %+v, want exit 0 and stdout done", res)
	}
	for _, pid := range readPids(t, pidsFile) {
		if !gone(d, pid) {
			t.Errorf("process %d the harness left is still there after Run returned", pid)
		}
	}
	assertOnlyServer(t, d)
}

func TestRunFiles(t *testing.T) { eachMode(t, testRunFiles) }

func testRunFiles(t *testing.T, m mode) {
	d := m.driver(t, Options{})
	res, err := d.Run(t.Context(), drivers.Job{
		RunID: "run-files",
		Files: map[string]string{
			"a.txt":          "hello\n",
			"sub/run.sh":     "#!/bin/sh\necho from-run\n",
			"sub/deep/b.txt": "b\n",
		},
		WorkDir: "sub",
		Command: []string{"./run.sh"},
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Stdout != "from-run\n" {
		t.Errorf("stdout = %q, want from-run", res.Stdout)
	}
	res, err = d.Run(t.Context(), drivers.Job{
		RunID:   "run-files-2",
		Files:   map[string]string{"a.txt": "hello\n", "sub/deep/b.txt": "b\n"},
		WorkDir: "sub",
		Command: sh(`cat ../a.txt deep/b.txt; pwd`),
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if want := "hello\nb\n" + filepath.Join(d.Root(), "run-files-2", "work", "sub") + "\n"; res.Stdout != want {
		t.Errorf("stdout = %q, want %q", res.Stdout, want)
	}
}

func TestRunRefuses(t *testing.T) { eachMode(t, testRunRefuses) }

func testRunRefuses(t *testing.T, m mode) {
	d := m.driver(t, Options{})
	outside := filepath.Join(filepath.Dir(d.Root()), "escaped")
	tests := []struct {
		name string
		job  drivers.Job
		want string
	}{
		{"empty command", drivers.Job{Command: nil}, "harness command is empty"},
		{"not on PATH", drivers.Job{Command: []string{"no-such-harness-xyz"}}, `harness command "no-such-harness-xyz" not found on PATH`},
		{"not in work dir", drivers.Job{Command: []string{"./missing.sh"}}, `harness command "./missing.sh" not found in the job's working directory`},
		{"absolute missing", drivers.Job{Command: []string{"/no/such/harness"}}, `harness command "/no/such/harness" does not exist`},
		{"not executable", drivers.Job{Command: []string{"./notes.txt"}, Files: map[string]string{"notes.txt": "hi"}}, `harness command "./notes.txt" is not an executable file`},
		{"file escapes", drivers.Job{Command: []string{"true"}, Files: map[string]string{"../../escaped": "x"}}, `file "../../escaped" must be a relative path`},
		{"file absolute", drivers.Job{Command: []string{"true"}, Files: map[string]string{outside: "x"}}, "must be a relative path"},
		{"workdir escapes", drivers.Job{Command: []string{"true"}, WorkDir: "../.."}, `workDir "../.."`},
		// Found and executable, but exec fails: reported by the supervisor.
		{"bad interpreter", drivers.Job{Command: []string{"./bad.sh"}, Files: map[string]string{"bad.sh": "#!/no/such/interpreter\n"}}, `harness command "./bad.sh" could not be started`},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := tt.job
			j.RunID = fmt.Sprintf("refused-%d", i)
			_, err := d.Run(t.Context(), j)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Run: %v, want an error containing %q", err, tt.want)
			}
			if !errors.Is(err, derrors.ErrInvalid) {
				t.Errorf("Run: %v, want it to wrap derrors.ErrInvalid", err)
			}
			if _, err := os.Stat(outside); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a file was written outside the work directory: %s", outside)
			}
			assertAreaRemoved(t, d, j.RunID)
		})
	}
}

// startLeftover starts, as a crashed attempt of runID would have left it,
// a process group (a shell and a background sleep) whose processes carry
// env, and returns the group id and the sleep's pid.
func startLeftover(t *testing.T, env []string) (pgid, sleepPid int) {
	t.Helper()
	pidsFile := filepath.Join(t.TempDir(), "pids")
	cmd := exec.Command("/bin/sh", "-c", `sleep 1000 & echo $! > "$PIDS"; wait`)
	cmd.Env = append(env, "PIDS="+pidsFile)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(waited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-waited
	})
	testwait.Until(t, 30*time.Second, "the leftover's pid", func() bool {
		b, err := os.ReadFile(pidsFile)
		return err == nil && bytes.HasSuffix(b, []byte("\n"))
	})
	return cmd.Process.Pid, readPids(t, pidsFile)[0]
}

func TestRetryKillsLeftoverGroup(t *testing.T) { eachMode(t, testRetryKillsLeftoverGroup) }

func testRetryKillsLeftoverGroup(t *testing.T, m mode) {
	d := m.driver(t, Options{})
	const runID = "run-retried"
	l := d.newLayout(runID, "")
	pgid, sleepPid := startLeftover(t, []string{drivers.EnvRunID + "=" + runID})
	// What the crashed attempt left on disk: its record and a stale file.
	if err := os.MkdirAll(l.work, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := shim.WriteRecord(l.record, pgid, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(l.work, "stale.txt"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := d.Run(t.Context(), drivers.Job{RunID: runID, Command: sh(`ls -A "$SVC_WORK_DIR"; echo end`)})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Stdout != "end\n" {
		t.Errorf("stdout = %q, want an empty work directory", res.Stdout)
	}
	for _, pid := range []int{pgid, sleepPid} {
		if running(pid) {
			t.Errorf("process %d of the previous attempt survived the retry", pid)
		}
	}
}

func TestRetrySparesOtherGroups(t *testing.T) { eachMode(t, testRetrySparesOtherGroups) }

func testRetrySparesOtherGroups(t *testing.T, m mode) {
	d := m.driver(t, Options{})
	const runID = "run-retried-2"
	l := d.newLayout(runID, "")
	// A group whose processes belong to another run: a recorded pgid that
	// the kernel has since given to someone else must not be killed.
	pgid, sleepPid := startLeftover(t, []string{drivers.EnvRunID + "=some-other-run"})
	if err := os.MkdirAll(l.area, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := shim.WriteRecord(l.record, pgid, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Run(t.Context(), drivers.Job{RunID: runID, Command: []string{"true"}}); err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, pid := range []int{pgid, sleepPid} {
		if !running(pid) {
			t.Errorf("process %d of an unrelated group was killed", pid)
		}
	}
}

func TestConcurrentAttemptSupersedes(t *testing.T) { eachMode(t, testConcurrentAttemptSupersedes) }

func testConcurrentAttemptSupersedes(t *testing.T, m mode) {
	d := m.driver(t, Options{})
	const runID = "run-dup"
	ready := make(chan struct{})
	type outcome struct {
		res drivers.Result
		err error
	}
	first := make(chan outcome, 1)
	go func() {
		var once sync.Once
		res, err := d.Run(t.Context(), drivers.Job{
			RunID:   runID,
			Command: sh(`echo ready; exec sleep 1000`),
			Log:     func(string, []byte) { once.Do(func() { close(ready) }) },
		})
		first <- outcome{res, err}
	}()
	<-ready
	res, err := d.Run(t.Context(), drivers.Job{RunID: runID, Command: sh(`echo second`)})
	if err != nil || res.Stdout != "second\n" {
		t.Fatalf("second attempt: %+v, %v; want stdout second", res, err)
	}
	o := <-first
	if o.err != nil || o.res.ExitCode != -1 {
		t.Errorf("first attempt: %+v, %v; want it killed (exit -1)", o.res, o.err)
	}
	assertAreaRemoved(t, d, runID)
}

// service is this test binary run as a service whose one job is
// treeScript (see helperMain), for the tests that SIGKILL the service.
type service struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once the process is waited for
	stderr bytes.Buffer  // read only after exited is closed
}

// startService starts the helper service with its driver rooted at root,
// the tree writing its pids to pids, and the job isolated as isolate says
// ("user": a supervisor per job, as the svc-job user; "pool": on the job
// server, with two jobs; "": not isolated); a cleanup kills it if the test
// has not.
func startService(t *testing.T, root, pids, isolate string) *service {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s := &service{cmd: exec.Command(exe, "-test.run=^$"), exited: make(chan struct{})}
	s.cmd.Env = append(os.Environ(), helperEnv+"="+root, "LOCAL_TEST_HELPER_PIDS="+pids)
	if isolate != "" {
		s.cmd.Env = append(s.cmd.Env, "LOCAL_TEST_HELPER_ISOLATE="+isolate)
	}
	s.cmd.Stderr = &s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.cmd.Wait(); close(s.exited) }()
	t.Cleanup(func() {
		_ = s.cmd.Process.Kill()
		<-s.exited
	})
	return s
}

// running fails t with the service's stderr if it has exited: its job
// never ends, so the service should run until killed.
func (s *service) running(t *testing.T) {
	t.Helper()
	select {
	case <-s.exited:
		t.Fatalf("the helper exited early: %s", s.stderr.String())
	default:
	}
}

// kill sends the service SIGKILL, as a crash or the OOM killer would, and
// waits for it to exit.
func (s *service) kill(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-s.exited
}

func TestParentDeath(t *testing.T) {
	root := t.TempDir()
	pidsFile := filepath.Join(t.TempDir(), "pids")
	svc := startService(t, root, pidsFile, "")
	testwait.Until(t, 30*time.Second, "the job's tree", func() bool {
		svc.running(t)
		_, err := os.Stat(pidsFile + ".ready")
		return err == nil
	})
	pids := readPids(t, pidsFile)
	if len(pids) != treePids {
		t.Fatalf("the tree wrote %d pids, want %d", len(pids), treePids)
	}
	_, shimPid, ok := shim.ReadRecord(filepath.Join(root, "parent-death", "pgid"))
	if !ok {
		t.Fatal("no record of the job's process group")
	}

	svc.kill(t)
	for _, pid := range pids {
		testwait.Until(t, 30*time.Second, fmt.Sprintf("process %d of the job to be killed and reaped", pid), func() bool { return gone(nil, pid) })
	}
	testwait.Until(t, 30*time.Second, "the shim to exit", func() bool { return !running(shimPid) })
}
