package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"svc/internal/domain/eval"
	"svc/internal/domain/gate"
)

// ciDoc is the CI recipe whose policy and trials the newcomer test runs
// as written.
const ciDoc = "../docs/ci.md"

// docPolicy returns the gate policy of docs/ci.md: the first JSON block
// after its "### A policy file" heading.
func docPolicy(t *testing.T, doc string) string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, "### A policy file")
	if !ok {
		t.Fatalf("%s has no %q section", ciDoc, "### A policy file")
	}
	m := regexp.MustCompile("(?s)```json\n(.*?)```").FindStringSubmatch(rest)
	if m == nil {
		t.Fatalf("%s: no JSON block under %q", ciDoc, "### A policy file")
	}
	var p gate.GatePolicy
	if err := json.Unmarshal([]byte(m[1]), &p); err != nil {
		t.Fatalf("%s's policy is not a gate policy: %v\n%s", ciDoc, err, m[1])
	}
	return m[1]
}

// docTrials returns the TRIALS of docs/ci.md's workflow.
func docTrials(t *testing.T, doc string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^\s*TRIALS: "(\d+)"`).FindStringSubmatch(doc)
	if m == nil {
		t.Fatalf("%s's workflow sets no TRIALS", ciDoc)
	}
	return m[1]
}

// TestNewcomerScenario is the issue a new user filed: a candidate harness
// that breaks 5 of 30 cases (each from 3/3 to 0/3, its metric from 1 to
// 0) passed the gate of docs/ci.md with exit 0. Run with the real binary:
//
//   - docs/ci.md's policy and TRIALS, read from the page and run as its
//     workflow runs them (--strict), block, naming the five cases;
//   - the page's old policy (fdrAlpha 0.1 with 3 trials), which no case
//     can satisfy over 30 cases (p = 0.05, q = 0.3), warns on stderr with
//     the trials that would do, and with a minDelta above the drop that
//     let it pass silently, it passes with the warning and exits 2 under
//     --strict.
func TestNewcomerScenario(t *testing.T) {
	raw, err := os.ReadFile(ciDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	policy, trials := docPolicy(t, doc), docTrials(t, doc)
	mustContain(t, doc, "--policy .github/gate-policy.json --strict")

	dir, scripts := t.TempDir(), jobDir(t)
	svc := start(t, devEnv(filepath.Join(dir, "data")), true, "dev")
	broken := []string{"n03", "n09", "n14", "n21", "n27"}

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
	for i := 1; i <= 30; i++ {
		cases = append(cases, map[string]any{"id": fmt.Sprintf("n%02d", i), "task": "say ok", "expected": "ok",
			"graders": []map[string]any{{"id": "exact"}}})
	}
	if code := call(t, "POST", svc.URL+"/datasets", map[string]any{"id": "newcomer", "version": "1.0.0", "cases": cases}, nil); code != 201 {
		t.Fatalf("POST /datasets = %d, want 201", code)
	}

	cli := func(args ...string) (stdout, stderr string, code int) {
		t.Helper()
		return runCLI(t, svc.URL, args...)
	}
	// As the workflow does: submit both batches, then wait for each.
	var ids []string
	for _, harness := range []string{"agent@1.0.0", "agent@2.0.0"} {
		out, errOut, code := cli("scorecard", "run", "--dataset", "newcomer@1.0.0", "--harness", harness, "--trials", trials, "--concurrency", "16")
		if code != 0 {
			t.Fatalf("svc scorecard run --harness %s exit %d\nstdout: %s\nstderr: %s", harness, code, out, errOut)
		}
		ids = append(ids, strings.TrimSpace(out))
	}
	for _, id := range ids {
		if out, errOut, code := cli("scorecard", "wait", id, "--timeout", "5m"); code != 0 {
			t.Fatalf("svc scorecard wait %s exit %d\nstdout: %s\nstderr: %s", id, code, out, errOut)
		}
	}
	base, cand := ids[0], ids[1]
	var sc eval.Scorecard
	if code := call(t, "GET", svc.URL+"/scorecards/"+cand, nil, &sc); code != 200 || sc.Progress.Passed != 75 || sc.Progress.Failed != 15 {
		t.Fatalf("GET /scorecards/%s = %d, progress %+v; want 75 passed and 15 failed (5 cases broken on 3 trials)", cand, code, sc.Progress)
	}

	writePolicy := func(name, body string) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	gateJSON := func(args ...string) gate.Decision {
		t.Helper()
		out, errOut, _ := cli(append([]string{"gate", "--baseline", base, "--candidate", cand, "--json"}, args...)...)
		var dec gate.Decision
		if err := json.Unmarshal([]byte(out), &dec); err != nil {
			t.Fatalf("svc gate --json %v printed %q: %v\nstderr: %s", args, out, err, errOut)
		}
		return dec
	}

	// docs/ci.md as written blocks, on the five cases and the metric.
	current := writePolicy("gate-policy.json", policy)
	out, errOut, code := cli("gate", "--baseline", base, "--candidate", cand, "--policy", current, "--strict")
	t.Logf("svc gate --policy <docs/ci.md> --strict:\n%s%s", out, errOut)
	if code != 1 || !strings.HasPrefix(out, "BLOCK: candidate "+cand) {
		t.Fatalf("svc gate with docs/ci.md's policy exit %d, want 1 and a BLOCK line\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if errOut != "" {
		t.Errorf("svc gate with docs/ci.md's policy wrote to stderr %q, want nothing: the policy reaches its levels with %s trials", errOut, trials)
	}
	rows := caseRows(out)
	for _, id := range broken {
		want := []string{id, "broke", "3/3", "0/3", "0.05", "-", "yes", "no"}
		if got := rows[id]; !slices.Equal(got, want) {
			t.Errorf("case row of %s = %q, want %q", id, got, want)
		}
	}
	if len(rows) != len(broken) {
		t.Errorf("the case table has %d rows, want the %d broken cases", len(rows), len(broken))
	}
	mustContain(t, out, "5 significant case regressions, more than maxRegressions 0")
	mustContain(t, out, "metric_regression")
	if m := regexp.MustCompile(`(?m)^  exact +passRate +1 +0\.8333 .* regressed$`).FindString(out); m == "" {
		t.Errorf("the metrics table does not show exact regressed from 1 to 0.8333:\n%s", out)
	}
	dec := gateJSON("--policy", current)
	if dec.Outcome != gate.OutcomeBlock || dec.Regressions != 5 || dec.Power == nil || dec.Power.Underpowered != 0 ||
		dec.Metric == nil || dec.Metric.Change != gate.MetricRegressed || dec.Metric.CI.Hi >= 0 {
		t.Errorf("docs/ci.md's policy: outcome %s, %d regressions, power %+v, metric %+v; want block, 5, none underpowered, casePass regressed",
			dec.Outcome, dec.Regressions, dec.Power, dec.Metric)
	}

	// The old example of docs/ci.md (fdrAlpha 0.1 with 3 trials) cannot
	// make a case significant over 30 cases; it blocks on the metric rule
	// alone, and says why no case counted.
	old := `{"alpha": 0.05, "fdrAlpha": 0.1, "maxRegressions": 0, "minDelta": 0.02, "allowConfounds": ["runtime"], "allow_partial": false, "metric": "casePass"}`
	warning := "svc gate: warning: underpowered: with 3 trials per side the smallest p-value a case can reach is 0.05; " +
		"over 30 cases fdrAlpha 0.1 needs p <= 0.003333: no case regression can be significant on its own " +
		"(15 cases failing every trial together could be). Use at least 6 trials per side, or gate on alpha 0.05 without fdrAlpha."
	dec = gateJSON("--policy", writePolicy("old.json", old))
	var reasons []string
	for _, r := range dec.Reasons {
		reasons = append(reasons, r.Code)
	}
	if dec.Outcome != gate.OutcomeBlock || dec.Regressions != 0 || !slices.Equal(reasons, []string{gate.ReasonMetricRegression}) {
		t.Errorf("old policy: outcome %s, %d regressions, reasons %v; want block on metric_regression alone", dec.Outcome, dec.Regressions, reasons)
	}
	if pw := dec.Power; pw == nil || pw.Underpowered != 30 || pw.TrialsNeeded != 6 || pw.JointRegressions != 15 || pw.TrialsPerSide != 3 {
		t.Errorf("old policy: power %+v, want 30 of 30 underpowered, 6 trials needed, 15 joint", pw)
	}
	for _, ct := range dec.Tests {
		if ct.Change == gate.ChangeBroke && (ct.QValue == nil || fmt.Sprintf("%.4g", *ct.QValue) != "0.3" || ct.Significant) {
			t.Errorf("old policy: broken case %s has q %v, significant %v; want 0.3, no", ct.CaseID, ct.QValue, ct.Significant)
		}
	}

	// With a minDelta above the drop (1/6), nothing blocks: the pass that
	// used to be silent now warns, and --strict refuses it.
	loose := writePolicy("loose.json", strings.Replace(old, `"minDelta": 0.02`, `"minDelta": 0.2`, 1))
	out, errOut, code = cli("gate", "--baseline", base, "--candidate", cand, "--policy", loose)
	if code != 0 || !strings.HasPrefix(out, "PASS: candidate "+cand) {
		t.Fatalf("svc gate with the underpowered policy exit %d, want 0 and PASS\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	mustContain(t, errOut, warning)
	mustContain(t, out, "underpowered")
	if strings.Contains(out+errOut, "0000000") {
		t.Errorf("svc gate prints rounding noise:\n%s%s", out, errOut)
	}
	for _, id := range broken {
		want := []string{id, "broke", "3/3", "0/3", "0.05", "0.3", "no", "no"}
		if got := caseRows(out)[id]; !slices.Equal(got, want) {
			t.Errorf("underpowered policy: case row of %s = %q, want %q", id, got, want)
		}
	}
	out, errOut, code = cli("gate", "--baseline", base, "--candidate", cand, "--policy", loose, "--strict")
	if code != 2 {
		t.Errorf("svc gate --strict with the underpowered policy exit %d, want 2\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	mustContain(t, errOut, warning)
	mustContain(t, errOut, "svc gate: --strict: the policy cannot reach its levels with these trials (outcome pass); exit 2")
}
