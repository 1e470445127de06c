package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"svc/internal/domain/eval"
	"svc/internal/domain/gate"
)

// gateHarness answers "bad" for the case ids listed in its %q (space
// separated) and "ok" for every other case.
const gateHarness = `set -eu
id=$(grep -o '"id":"[^"]*"' "$SVC_CASE_FILE" | head -n1 | cut -d'"' -f4)
case " %s " in
*" $id "*) echo bad ;;
*) echo ok ;;
esac
`

// TestGateBlocksABrokenHarness is the CI flow of docs/ci.md with the real
// binary: two scorecards of one dataset that differ only in the harness
// version, where the new version breaks two cases on every trial, make
// `svc gate` exit 1 naming both cases; an A/A pair of the old version
// makes it exit 0; `svc verify` of an untouched batch exits 0.
func TestGateBlocksABrokenHarness(t *testing.T) {
	dir, scripts := t.TempDir(), jobDir(t)
	svc := start(t, devEnv(filepath.Join(dir, "data")), true, "dev")
	broken := []string{"g2", "g5"}

	for _, h := range []struct {
		version string
		broken  []string
	}{{"1.0.0", nil}, {"2.0.0", broken}} {
		script := filepath.Join(scripts, "harness-"+h.version+".sh")
		if err := os.WriteFile(script, fmt.Appendf(nil, gateHarness, strings.Join(h.broken, " ")), 0o755); err != nil {
			t.Fatal(err)
		}
		harness := map[string]any{"id": "agent", "version": h.version, "kind": "process", "command": []string{"/bin/sh", script}}
		if code := call(t, "POST", svc.URL+"/harnesses", harness, nil); code != 201 {
			t.Fatalf("POST /harnesses %s = %d, want 201", h.version, code)
		}
	}
	var cases []map[string]any
	for i := 1; i <= 6; i++ {
		cases = append(cases, map[string]any{"id": fmt.Sprintf("g%d", i), "task": "say ok", "expected": "ok",
			"graders": []map[string]any{{"id": "exact"}}})
	}
	if code := call(t, "POST", svc.URL+"/datasets", map[string]any{"id": "gated", "version": "1.0.0", "cases": cases}, nil); code != 201 {
		t.Fatalf("POST /datasets = %d, want 201", code)
	}

	cli := func(args ...string) (stdout, stderr string, code int) {
		t.Helper()
		return runCLI(t, svc.URL, args...)
	}
	runBatch := func(harness string) eval.Scorecard {
		t.Helper()
		out, errOut, code := cli("scorecard", "run", "--dataset", "gated@1.0.0", "--harness", harness,
			"--trials", "3", "--concurrency", "6", "--wait", "--json")
		if code != 0 {
			t.Fatalf("svc scorecard run --harness %s exit %d, want 0\nstdout: %s\nstderr: %s", harness, code, out, errOut)
		}
		var sc eval.Scorecard
		if err := json.Unmarshal([]byte(out), &sc); err != nil {
			t.Fatalf("svc scorecard run --json printed %q: %v", out, err)
		}
		if sc.Status != eval.ScorecardSucceeded || sc.Progress.Done != 18 {
			t.Fatalf("batch %s ended %s with progress %+v, want succeeded with 18 done", sc.ID, sc.Status, sc.Progress)
		}
		// Without a terminal, progress is a plain line per 10% on stderr,
		// ending with the terminal reading.
		mustContain(t, errOut, fmt.Sprintf("%s succeeded 18/18 (100%%)", sc.ID))
		return sc
	}

	base := runBatch("agent@1.0.0")
	cand := runBatch("agent@2.0.0")
	if p := cand.Progress; p.Passed != 12 || p.Failed != 6 {
		t.Fatalf("candidate progress %+v, want 12 passed and 6 failed (two cases broken on 3 trials)", p)
	}

	// The A/A candidate, submitted and then waited for, without --json:
	// stdout is the id alone each time, for ID=$(...).
	out, errOut, code := cli("scorecard", "run", "--dataset", "gated@1.0.0", "--harness", "agent@1.0.0", "--trials", "3")
	same := strings.TrimSpace(out)
	if code != 0 || !regexp.MustCompile(`^sc_\S+$`).MatchString(same) {
		t.Fatalf("svc scorecard run exit %d stdout %q, want 0 and the id alone\nstderr: %s", code, out, errOut)
	}
	if out, errOut, code := cli("scorecard", "wait", same); code != 0 || out != same+"\n" {
		t.Fatalf("svc scorecard wait exit %d stdout %q, want 0 and %q\nstderr: %s", code, out, same, errOut)
	}

	// The broken candidate blocks, naming exactly the broken cases.
	out, errOut, code = cli("gate", "--baseline", base.ID, "--candidate", cand.ID)
	if code != 1 {
		t.Fatalf("svc gate (broken candidate) exit %d, want 1\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	t.Logf("svc gate --baseline %s --candidate %s:\n%s", base.ID, cand.ID, out)
	if !strings.HasPrefix(out, "BLOCK: candidate "+cand.ID) {
		t.Errorf("svc gate output does not start with the BLOCK line:\n%s", out)
	}
	rows := caseRows(out)
	for _, id := range broken {
		// 3 of 3 to 0 of 3 is p = 1/20 exactly, which meets alpha 0.05.
		want := []string{id, "broke", "3/3", "0/3", "0.05", "-", "yes", "no"}
		if got := rows[id]; strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("case row of %s = %q, want %q\n%s", id, got, want, out)
		}
	}
	if len(rows) != len(broken) {
		t.Errorf("the case table has rows %v, want only the broken cases %v\n%s", rows, broken, out)
	}
	mustContain(t, out, "regressions_exceeded")
	mustContain(t, out, "Transitions (cases): 2 broke, 0 fixed, 4 still passing")

	out, errOut, code = cli("gate", "--baseline", base.ID, "--candidate", cand.ID, "--json")
	if code != 1 {
		t.Fatalf("svc gate --json exit %d, want 1\nstderr: %s", code, errOut)
	}
	var dec gate.Decision
	if err := json.Unmarshal([]byte(out), &dec); err != nil {
		t.Fatalf("svc gate --json printed %q: %v", out, err)
	}
	var regressed []string
	for _, r := range dec.Reasons {
		if r.Code == gate.ReasonCaseRegression {
			regressed = append(regressed, r.CaseID)
		}
	}
	if dec.Outcome != gate.OutcomeBlock || dec.Regressions != 2 || strings.Join(regressed, " ") != strings.Join(broken, " ") {
		t.Errorf("decision outcome %s, %d regressions, case_regression reasons for %v; want block, 2, %v", dec.Outcome, dec.Regressions, regressed, broken)
	}
	if dec.Experiment[gate.AxisHarness] != gate.Treatment {
		t.Errorf("harness axis %q, want treatment", dec.Experiment[gate.AxisHarness])
	}

	// Tolerating two regressions lets the same pair through.
	if _, errOut, code := cli("gate", "--baseline", base.ID, "--candidate", cand.ID, "--max-regressions", "2", "--min-delta", "0.5"); code != 0 {
		t.Errorf("svc gate --max-regressions 2 --min-delta 0.5 exit %d, want 0\nstderr: %s", code, errOut)
	}

	// The A/A pair passes.
	out, errOut, code = cli("gate", "--baseline", base.ID, "--candidate", same)
	if code != 0 || !strings.HasPrefix(out, "PASS: candidate "+same) {
		t.Fatalf("svc gate (same harness) exit %d, want 0 and a PASS line\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	mustContain(t, out, "No case passes less often in the candidate (6 cases tested).")
	out, _, code = cli("gate", "--baseline", base.ID, "--candidate", same, "--json")
	dec = gate.Decision{}
	if err := json.Unmarshal([]byte(out), &dec); err != nil || code != 0 || dec.Outcome != gate.OutcomePass {
		t.Errorf("svc gate --json (same harness) exit %d, outcome %q (%v), want 0 and pass", code, dec.Outcome, err)
	}

	out, errOut, code = cli("verify", base.ID)
	if code != 0 || !strings.HasPrefix(out, "VERIFIED: scorecard "+base.ID) {
		t.Errorf("svc verify exit %d, want 0 and VERIFIED\nstdout: %s\nstderr: %s", code, out, errOut)
	}

	// A service error is exit 2 with the service's message and request id.
	_, errOut, code = cli("gate", "--baseline", base.ID, "--candidate", "sc_nosuch")
	if code != 2 || !regexp.MustCompile(`^svc gate: .+ \(request \S+\)\n$`).MatchString(errOut) {
		t.Errorf("svc gate with an unknown candidate exit %d stderr %q, want 2 and one line with the request id", code, errOut)
	}
}

// runCLI runs the svc binary as a client of url and returns its output and
// exit code.
func runCLI(t *testing.T, url string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, svcBin, args...)
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

// caseRows reads the case table of `svc gate`: case id -> its fields.
func caseRows(out string) map[string][]string {
	rows := map[string][]string{}
	in := false
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "Cases that pass less often"):
			in = true
		case in && strings.TrimSpace(line) == "":
			return rows
		case in && !strings.HasPrefix(strings.TrimSpace(line), "CASE"):
			f := strings.Fields(line)
			rows[f[0]] = f
		}
	}
	return rows
}
