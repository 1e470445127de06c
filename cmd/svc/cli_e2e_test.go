package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The CLI tests below run the real svc binary as a client of a real
// `svc dev`, as a user would: one binary built per test binary (or
// SVC_BIN's, which `make test` builds), one dev service for them all.

var e2e struct {
	once    sync.Once
	err     error
	tmp     string // removed by TestMain
	bin     string
	url     string
	dev     *exec.Cmd
	devDone chan struct{}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if e2e.dev != nil {
		e2e.dev.Process.Kill()
		<-e2e.devDone
	}
	if e2e.tmp != "" {
		os.RemoveAll(e2e.tmp)
	}
	os.Exit(code)
}

// devService builds svc (unless SVC_BIN names one) and starts `svc dev`
// on a fresh data directory, once; it returns the binary and the API's URL.
func devService(t *testing.T) (bin, url string) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts svc dev: skipped in -short mode")
	}
	e2e.once.Do(func() { e2e.err = startDev() })
	if e2e.err != nil {
		t.Fatal(e2e.err)
	}
	return e2e.bin, e2e.url
}

var apiLine = regexp.MustCompile(`API on (http://\S+)`)

func startDev() error {
	tmp, err := os.MkdirTemp("", "svc-cli-e2e-")
	if err != nil {
		return err
	}
	e2e.tmp = tmp
	e2e.bin = os.Getenv("SVC_BIN")
	if e2e.bin == "" {
		// svc-shim beside svc: the local runtime's supervisor.
		build := exec.Command("go", "build", "-o", tmp+"/", "svc/cmd/svc", "svc/cmd/svc-shim")
		if out, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("building svc: %v\n%s", err, out)
		}
		e2e.bin = filepath.Join(tmp, "svc")
	}
	cmd := exec.Command(e2e.bin, "dev")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "SVC_LOG_LEVEL=warn",
		"SVC_DATA_DIR=" + filepath.Join(tmp, "data"), "SVC_ADDR=127.0.0.1:0", "SVC_TEMPORAL_PORT=0"}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var stderr strings.Builder
	cmd.Stderr = &lockedBuilder{b: &stderr}
	if err := cmd.Start(); err != nil {
		return err
	}
	e2e.dev, e2e.devDone = cmd, make(chan struct{})
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := apiLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case urls <- m[1]:
				default:
				}
			}
		}
		cmd.Wait()
		close(e2e.devDone)
	}()
	select {
	case e2e.url = <-urls:
		return nil
	case <-e2e.devDone:
		return fmt.Errorf("svc dev exited before listening:\n%s", stderr.String())
	case <-time.After(2 * time.Minute):
		return errors.New("svc dev did not print its API address within 2 minutes")
	}
}

type lockedBuilder struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// svcCLI runs the binary as a client of url, in dir.
func svcCLI(t *testing.T, bin, url, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "SVC_URL=" + url}
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatalf("svc %v: %v", args, err)
	}
	return o.String(), e.String(), code
}

// normalizer replaces what differs between runs (ids, digests, times,
// pace) with placeholders of the same width, so that tables keep their
// alignment: the n-th distinct scorecard id becomes sc_000…00n.
type normalizer struct {
	ids map[string]string
}

var (
	idPattern     = regexp.MustCompile(`\b(sc|run|score)_[0-9a-f]{24}\b`)
	digestPattern = regexp.MustCompile(`sha256:[0-9a-f]{12}…`)
	timePattern   = regexp.MustCompile(`\b\d{4}-\d\d-\d\d \d\d:\d\d\b`)
	pacePattern   = regexp.MustCompile(`, [0-9.]+ cases/s|, \d+:\d\d(:\d\d)? elapsed|, ETA \d+:\d\d(:\d\d)?|, \d+ running`)
)

// real is the id a placeholder stands for, else s.
func (n *normalizer) real(s string) string {
	for id, r := range n.ids {
		if r == s {
			return id
		}
	}
	return s
}

func (n *normalizer) norm(s string) string {
	if n.ids == nil {
		n.ids = map[string]string{}
	}
	s = idPattern.ReplaceAllStringFunc(s, func(id string) string {
		if r, ok := n.ids[id]; ok {
			return r
		}
		prefix, _, _ := strings.Cut(id, "_")
		count := 0
		for _, r := range n.ids {
			if strings.HasPrefix(r, prefix+"_") {
				count++
			}
		}
		r := fmt.Sprintf("%s_%024d", prefix, count+1)
		n.ids[id] = r
		return r
	})
	s = digestPattern.ReplaceAllString(s, "sha256:xxxxxxxxxxxx…")
	s = timePattern.ReplaceAllString(s, "YYYY-MM-DD hh:mm")
	return pacePattern.ReplaceAllString(s, "")
}

// e2eHarness answers "bad" for the case ids in its first %q, exits 3 for
// those in its second, answers "ok" for every other case, and writes two
// trace events.
const e2eHarness = `set -eu
id=$(grep -o '"id":"[^"]*"' "$SVC_CASE_FILE" | head -n1 | cut -d'"' -f4)
echo '{"kind":"tool_call","name":"lookup","input":{"q":"'"$id"'"},"output":"found"}' >> "$SVC_TRACE_FILE"
echo '{"kind":"llm_call","model":"m1","inputTokens":12,"outputTokens":3,"costUsd":0.0012}' >> "$SVC_TRACE_FILE"
case " %s " in *" $id "*) echo bad; exit 0 ;; esac
case " %s " in *" $id "*) echo "boom in $id" >&2; exit 3 ;; esac
echo ok
`

// TestCLIAgainstDev walks the workflow of docs/cli.md with the real
// binary: register a harness from YAML, push datasets from CSV, JSONL and
// JSON, register a judge from its Python source, run and wait, list, show
// (each format), read a run's logs and trace, diff two scorecards and two
// dataset versions, re-score, cancel, run an eval file that gates, and
// fail on dispatch errors. Tables are compared with golden files.
func TestCLIAgainstDev(t *testing.T) {
	bin, url := devService(t)
	dir := t.TempDir()
	// The local runtime's jobs run as an unprivileged user: the harness
	// scripts live where it can read them.
	jobs, err := os.MkdirTemp("", "svc-cli-job-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(jobs) })
	if err := os.Chmod(jobs, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(path, content string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var n normalizer
	// cli runs svc with args, where an id may be the placeholder an
	// earlier output was normalised to, and returns the outputs normalised.
	cli := func(want int, args ...string) (stdout, stderr string) {
		t.Helper()
		args = slices.Clone(args)
		for i, a := range args {
			args[i] = n.real(a)
		}
		out, errOut, code := svcCLI(t, bin, url, dir, args...)
		if code != want {
			t.Fatalf("svc %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, out, errOut)
		}
		return n.norm(out), n.norm(errOut)
	}
	contains := func(what, got, want string) {
		t.Helper()
		if !strings.Contains(got, want) {
			t.Errorf("%s lacks %q:\n%s", what, want, got)
		}
	}

	// Harnesses from YAML: 1.0.0 breaks q2 and q5, 2.0.0 breaks q3 and q5,
	// and errs on q4.
	for _, h := range []struct{ version, bad, boom string }{{"1.0.0", "q2 q5", ""}, {"2.0.0", "q3 q5", "q4"}} {
		script := filepath.Join(jobs, "agent-"+h.version+".sh")
		write(script, fmt.Sprintf(e2eHarness, h.bad, h.boom))
		write(filepath.Join(dir, "agent-"+h.version+".yaml"),
			fmt.Sprintf("id: agent\nversion: %s\nkind: process\ncommand: [/bin/sh, %s]\n", h.version, script))
		out, _ := cli(0, "harness", "register", "agent-"+h.version+".yaml")
		if want := "harness agent@" + h.version + " registered (sha256:xxxxxxxxxxxx…)\n"; out != want {
			t.Errorf("harness register: %q, want %q", out, want)
		}
	}
	out, _ := cli(0, "harness", "register", "agent-1.0.0.yaml")
	contains("harness register again", out, "harness agent@1.0.0 already registered with this content")
	write(filepath.Join(dir, "missing.json"), `{"id":"missing","version":"1.0.0","kind":"process","command":["/nonexistent/agent"]}`)
	cli(0, "harness", "register", "missing.json")

	// Datasets from CSV (with the exact grader added), JSONL and JSON.
	write(filepath.Join(dir, "qa.csv"), "id,input,target,tags\nq1,say ok,ok,smoke\nq2,say ok,ok,smoke;slow\nq3,say ok,ok,\nq4,say ok,ok,\nq5,say ok,ok,\n")
	out, _ = cli(0, "dataset", "push", "qa.csv", "--version", "1.0.0", "--grader", "exact")
	if want := "dataset qa@1.0.0 registered (5 cases, sha256:xxxxxxxxxxxx…)\n"; out != want {
		t.Errorf("dataset push: %q, want %q", out, want)
	}
	out, _ = cli(0, "dataset", "push", "qa.csv", "--version", "1.0.0", "--grader", "exact")
	contains("dataset push again", out, "dataset qa@1.0.0 already registered with this content")
	out, _ = cli(0, "dataset", "push", "qa.csv", "--version", "1.0.0", "--grader", "exact", "--dry-run")
	contains("dataset push --dry-run", out, "VALID: dataset qa@1.0.0 is registered with this very content")
	_, errOut := cli(2, "dataset", "push", "qa.csv", "--version", "1.0.0")
	contains("dataset push of other content", errOut, "svc dataset: ")
	contains("dataset push of other content", errOut, "qa@1.0.0")
	write(filepath.Join(dir, "qa-1.1.jsonl"), `{"id":"q1","task":"say ok","expected":"ok","graders":[{"id":"exact"}]}
{"id":"q2","task":"say ok, please","expected":"ok","graders":[{"id":"exact"}]}

{"id":"q6","task":"say ok","expected":"ok","graders":[{"id":"exact"}]}
`)
	cli(0, "dataset", "push", "qa-1.1.jsonl", "--id", "qa", "--version", "1.1.0")
	write(filepath.Join(dir, "slow.json"), `[{"id":"s1","task":"say ok","expected":"ok","graders":[{"id":"exact"}]}]`)
	cli(0, "dataset", "push", "slow.json", "--version", "1.0.0")
	write(filepath.Join(dir, "bad.json"), `{"id":"bad","version":"1.0.0","cases":[{"id":"b1","task":1}]}`)
	_, errOut = cli(2, "dataset", "push", "bad.json")
	contains("dataset push of an invalid spec", errOut, "  cases[0].task: ")

	out, _ = cli(0, "dataset", "diff", "qa", "1.0.0", "1.1.0")
	golden(t, "cli_dataset_diff.golden", out)
	cli(1, "dataset", "diff", "qa", "1.0.0", "1.1.0", "--exit-code")
	out, _ = cli(0, "dataset", "list")
	golden(t, "cli_dataset_list.golden", out)

	// A judge from its Python source: no JSON escaping by hand.
	write(filepath.Join(dir, "tone.py"), `import json, sys
inp = json.load(open(sys.argv[1]))
answer = (inp["evidence"] or {}).get("finalAnswer", "")
print(json.dumps({"metric": "judge", "value": 1 if answer == "ok" else 0, "pass": answer == "ok", "detail": "said %s" % answer}))
`)
	out, _ = cli(0, "judge", "register", "--file", "tone.py", "--version", "1.0.0")
	if want := "judge tone@1.0.0 registered (sha256:xxxxxxxxxxxx…)\n"; out != want {
		t.Errorf("judge register: %q, want %q", out, want)
	}

	// Run and wait: stdout is the id alone; stderr the progress, each
	// failing case as it happens, and the hint to show them.
	run := func(harness string, extra ...string) (id, stderr string) {
		t.Helper()
		args := append([]string{"scorecard", "run", "--dataset", "qa@1.0.0", "--harness", harness, "--trials", "3", "--concurrency", "5", "--wait"}, extra...)
		out, errOut := cli(0, args...)
		id = strings.TrimSpace(out)
		if !regexp.MustCompile(`^sc_\d{24}$`).MatchString(id) {
			t.Fatalf("scorecard run printed %q, want the id alone", out)
		}
		contains("scorecard run --wait", errOut, id+" succeeded 15/15 (100%)")
		return id, errOut
	}
	base, _ := run("agent@1.0.0")
	cand, errOut := run("agent@2.0.0")
	contains("scorecard run --wait", errOut, cand+" case q4 failed: the harness exited with code 3: boom in q4\n")
	if c := strings.Count(errOut, "case q4 failed"); c != 1 {
		t.Errorf("the failing case is shown %d times, want once:\n%s", c, errOut)
	}
	contains("scorecard run --wait", errOut, "svc scorecard: "+cand+": 9 of 15 case-trials failed (svc scorecard show "+cand+" --failed)")

	out, _ = cli(0, "scorecard", "list", "--dataset", "qa")
	golden(t, "cli_scorecard_list.golden", out)
	out, _ = cli(0, "scorecard", "show", cand)
	golden(t, "cli_scorecard_show.golden", out)
	for _, f := range []string{"csv", "jsonl", "md"} {
		out, _ = cli(0, "scorecard", "show", cand, "--failed", "--format", f)
		golden(t, "cli_scorecard_show_failed."+f+".golden", out)
	}
	out, _ = cli(0, "scorecard", "get", cand)
	contains("scorecard get", out, "  casePass  15     0.4   0.4")

	// The run of a failing case, from the show table: its logs and trace.
	var q4Run string
	raw, _, _ := svcCLI(t, bin, url, dir, "scorecard", "show", n.real(cand), "--failed", "--format", "csv")
	for _, line := range strings.Split(raw, "\n") {
		if strings.HasPrefix(line, "q4,") {
			q4Run = line[strings.LastIndex(line, ",")+1:]
		}
	}
	if q4Run == "" {
		t.Fatalf("no run of q4 in\n%s", raw)
	}
	stdout, stderr, code := svcCLI(t, bin, url, dir, "runs", "logs", q4Run)
	if code != 0 || stdout != "" || !strings.Contains(stderr, "boom in q4\n") {
		t.Errorf("runs logs: exit %d stdout %q stderr %q; want 0, nothing on stdout, the harness's stderr on stderr", code, stdout, stderr)
	}
	out, _ = cli(0, "runs", "trace", q4Run)
	golden(t, "cli_runs_trace.golden", out)
	_, errOut = cli(2, "runs", "trace", "run_nosuch")
	contains("runs trace of an unknown run", errOut, "svc runs: ")

	// The diff: broke and fixed cases with both answers.
	out, _ = cli(0, "diff", base, cand)
	golden(t, "cli_diff.golden", out)
	cli(1, "diff", base, cand, "--exit-code")

	// Re-scoring with the judge, waiting for it.
	if _, err := exec.LookPath("python3"); err == nil {
		_, errOut = cli(0, "scorecard", "score", cand, "--judge", "tone", "--wait")
		contains("scorecard score --wait", errOut, cand+" scored: revision 2")
		out, _ = cli(0, "scorecard", "get", cand)
		contains("scorecard get after scoring", out, "judge:tone")
	}

	// Cancel a batch under way, wait for it (exit 1), cancel it again (2).
	out, _ = cli(0, "scorecard", "run", "--dataset", "slow@1.0.0", "--harness", "agent@1.0.0", "--trials", "100", "--concurrency", "1")
	slow := strings.TrimSpace(out)
	out, _ = cli(0, "scorecard", "cancel", slow)
	contains("scorecard cancel", out, slow+" cancelled")
	_, errOut = cli(1, "scorecard", "wait", slow)
	contains("scorecard wait of a cancelled batch", errOut, "svc scorecard: "+slow+" cancelled\n")
	cli(2, "scorecard", "cancel", slow)

	// Nothing dispatched: the batch fails, and the count is shown.
	_, errOut = cli(1, "scorecard", "run", "--dataset", "slow@1.0.0", "--harness", "missing@1.0.0", "--wait", "--fail-on-dispatch-errors")
	contains("a batch that could not be dispatched", errOut, "1 failed (1 not dispatched)")
	contains("a batch that could not be dispatched", errOut, "1 of 1 case-trials could not be dispatched")

	// The eval file: push (already registered: harmless), run, gate
	// against the latest scorecard of agent@1.0.0, which blocks.
	write(filepath.Join(dir, "eval.yaml"), `dataset: {file: qa.csv, version: 1.0.0, graders: [exact]}
harness: {file: agent-2.0.0.yaml}
trials: 3
concurrency: 5
baseline: latest:agent@1.0.0
gate: {alpha: 0.05, maxRegressions: 0}
`)
	out, errOut = cli(1, "eval", "run", "eval.yaml")
	contains("eval run", errOut, "dataset qa@1.0.0 already registered with this content")
	contains("eval run", out, "Cases with a trial that did not pass: 3")
	contains("eval run", out, "BLOCK: candidate ")
	contains("eval run", out, "against baseline "+base)
	out, _ = cli(0, "eval", "run", "eval.yaml", "--baseline", "latest:agent@2.0.0", "--json")
	contains("eval run --json", out, `"gate":{`)
	contains("eval run --json", out, `"outcome":"pass"`)

	out, _ = cli(0, "verify", base)
	contains("verify", out, "VERIFIED: scorecard "+base)
	_, errOut = cli(2, "scorecard", "show")
	contains("show without an id", errOut, "want exactly one scorecard id")
}
