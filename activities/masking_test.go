package activities

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/sdk/testsuite"

	"svc/auth"
	"svc/drivers"
	"svc/drivers/local"
	"svc/internal/domain/eval"
	"svc/internal/domain/redact"
	"svc/internal/domain/registry"
	"svc/internal/platform/secrets"
	"svc/internal/service/registries"
	"svc/store"
	"svc/store/records"
	"svc/store/sqlite/sqlitetest"
)

// leakyHarness prints the secrets file, the secret on stderr, the secret
// split across two writes (so the streamed logs see it in two chunks) and
// its base64, and writes it into two trace events, raw and base64.
const leakyHarness = `
cat "$SVC_SECRETS_FILE"; echo
v=$(sed -e 's/.*"API_TOKEN":"\([^"]*\)".*/\1/' "$SVC_SECRETS_FILE")
echo "token=$v" >&2
printf 'split:%s' "$(printf %s "$v" | cut -c1-9)"; sleep 0.3; printf '%s\n' "$(printf %s "$v" | cut -c10-)"
printf %s "$v" | base64
printf '{"kind":"message","role":"assistant","content":"the token is %s"}\n' "$v" >> "$SVC_TRACE_FILE"
printf '{"kind":"tool_call","name":"http","input":{"authorization":"Basic %s"}}\n' "$(printf 'user:%s' "$v" | base64)" >> "$SVC_TRACE_FILE"
echo "answer: $v"
`

// TestSecretsMaskedInStoredRun reproduces issue 11, finding 2: a member's
// harness with secretEnv prints the secret (raw, base64, split across
// output chunks) and writes it into its trace. After the run, the stored
// run record (final answer, tails, trace), its logs and its sealed
// trajectory hold no form of the secret and show *** instead, and a
// secret.used event names the secret but never its value.
func TestSecretsMaskedInStoredRun(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the local driver runs jobs on Linux only")
	}
	const (
		ws     = "acme"
		member = "mia"
		secret = "sk-live-Zq8Jm3Xv9TbW2yLp"
	)
	ctx := t.Context()
	st := sqlitetest.New(t)
	sealer, err := secrets.NewSealer(base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 32))))
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := sealer.Seal(ws, "api-token", []byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.PutSecret(ctx, store.Secret{Workspace: ws, Name: "api-token", Ciphertext: sealed, CreatedBy: "admin"}); err != nil {
		t.Fatalf("PutSecret: %v", err)
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	regs := registries.New(st, sealer, clock)
	spec, _ := json.Marshal(map[string]any{
		"id": "leaky", "version": "1.0.0", "kind": "process",
		"command":   []string{"/bin/sh", "-c", leakyHarness},
		"secretEnv": map[string]string{"API_TOKEN": "api-token"},
	})
	mia := auth.Principal{Subject: member, Workspace: ws, Roles: []auth.Role{auth.RoleMember}, Via: auth.ViaOIDC}
	if _, err := regs.Register(ctx, mia, registry.Harness, spec, nil); err != nil {
		t.Fatalf("registering the harness: %v", err)
	}
	run := eval.Run{
		ID: "run_leaky", Tenant: ws, Harness: registry.Ref{ID: "leaky", Version: "1.0.0"}, CaseID: "c1",
		Status: eval.StatusQueued, Kind: eval.KindEval, Trigger: eval.TriggerAPI, CreatedBy: member,
		CreatedAt: now, UpdatedAt: now, Case: &registry.EvalCase{ID: "c1", Task: "leak it", TimeoutSec: 30},
	}
	row, err := records.Row(run)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateRun(ctx, row); err != nil {
		t.Fatalf("CreateRun: %v", err)
	}

	a := &Activities{Store: st, Registries: regs, Sealer: sealer, Host: "w1", Now: clock,
		Driver: local.New(local.Options{Root: t.TempDir()})}
	env := (&testsuite.WorkflowTestSuite{}).NewTestActivityEnvironment()
	env.RegisterActivity(a)
	val, err := env.ExecuteActivity(a.DispatchRun, RunRef{Workspace: ws, RunID: run.ID})
	if err != nil {
		t.Fatalf("DispatchRun: %v", err)
	}
	var status RunStatus
	if err := val.Get(&status); err != nil || status.Status != string(eval.StatusSucceeded) {
		t.Fatalf("DispatchRun = %+v, %v; want succeeded", status, err)
	}

	forms := map[string]string{
		"raw":              secret,
		"base64":           base64.StdEncoding.EncodeToString([]byte(secret)),
		"base64 (no pad)":  base64.RawStdEncoding.EncodeToString([]byte(secret)),
		"base64 embedded":  base64.StdEncoding.EncodeToString([]byte("user:" + secret))[8:24],
		"first split half": secret[:9] + secret[9:12],
	}
	noSecret := func(what, text string) {
		t.Helper()
		for name, f := range forms {
			if strings.Contains(text, f) {
				t.Errorf("%s holds the secret (%s form %q):\n%s", what, name, f, text)
			}
		}
		if !strings.Contains(text, redact.Mask) {
			t.Errorf("%s shows no %s where the secret was:\n%s", what, redact.Mask, text)
		}
	}

	stored, err := st.GetRun(ctx, ws, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	noSecret("the stored run record", string(stored.Doc))
	got, err := records.FromRow(stored)
	if err != nil {
		t.Fatal(err)
	}
	res := got.Result
	if res == nil || res.Process == nil || res.Evidence == nil {
		t.Fatalf("the run has no result: %+v", got)
	}
	noSecret("the final answer", res.Evidence.FinalAnswer)
	noSecret("the stdout tail", res.Process.StdoutTail)
	noSecret("the stderr tail", res.Process.StderrTail)
	if want := "token=***"; !strings.Contains(res.Process.StderrTail, want) {
		t.Errorf("stderr tail %q lacks %q", res.Process.StderrTail, want)
	}
	traceJSON, _ := json.Marshal(res.Trace)
	noSecret("the result's trace", string(traceJSON))
	var kinds []string
	for _, e := range res.Trace {
		kinds = append(kinds, e.Kind)
	}
	if diff := cmp.Diff([]string{eval.EventMessage, eval.EventToolCall}, kinds); diff != "" {
		t.Errorf("trace kinds (-want +got): the masked trace lines must stay valid events\n%s", diff)
	}

	tr, err := st.GetTrajectory(ctx, ws, run.ID)
	if err != nil {
		t.Fatalf("GetTrajectory: %v", err)
	}
	noSecret("the sealed trajectory", string(tr.Events))

	logs, err := st.ListRunLogs(ctx, ws, run.ID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var stdout, all strings.Builder
	for _, c := range logs {
		all.WriteString(c.Data)
		if c.Stream == "stdout" {
			stdout.WriteString(c.Data)
		}
	}
	noSecret("the stored logs", all.String())
	if !strings.Contains(stdout.String(), "split:***\n") {
		t.Errorf("the secret written in two chunks is not masked as one in the stdout log:\n%s", stdout.String())
	}

	events, err := st.ListEvents(ctx, store.EventFilter{Workspace: ws, Type: EventSecretUsed})
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 1 {
		t.Fatalf("%d secret.used events, want 1: %+v", len(events), events)
	}
	e := events[0]
	var data map[string]any
	if err := json.Unmarshal(e.Data, &data); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"runId": run.ID, "attempt": 1.0, "harness": "leaky@1.0.0", "secrets": []any{"api-token"}, "unmasked": []any{}}
	if diff := cmp.Diff(want, data); diff != "" {
		t.Errorf("secret.used data (-want +got):\n%s", diff)
	}
	if e.Actor != member || e.Subject != "run:"+run.ID || strings.Contains(string(e.Data), secret) {
		t.Errorf("secret.used event %+v: want actor %s, subject run:%s and no value", e, member, run.ID)
	}
}

func TestMaskResultClipsCutSecrets(t *testing.T) {
	const secret = "0123456789abcdefghij"
	mask := redact.New([]string{secret})
	tail := secret[6:] + "\n" + strings.Repeat("x", drivers.TailBytes-len(secret[6:])-1)
	head := strings.Repeat("y", drivers.MaxOutput-10) + secret[:10]
	res := maskResult(mask, drivers.Result{Stdout: head, StdoutTail: tail, StderrTail: "short " + secret, Trace: []byte(fmt.Sprintf(`{"kind":"message","content":%q}`, secret))})
	if !strings.HasPrefix(res.StdoutTail, "***\n") {
		t.Errorf("a tail that starts inside a secret keeps it: %q", res.StdoutTail[:30])
	}
	if !strings.HasSuffix(res.Stdout, "y***") {
		t.Errorf("stdout cut at its cap inside a secret keeps it: %q", res.Stdout[len(res.Stdout)-30:])
	}
	if res.StderrTail != "short ***" || string(res.Trace) != `{"kind":"message","content":"***"}` {
		t.Errorf("stderr tail %q, trace %s", res.StderrTail, res.Trace)
	}
	if same := maskResult(redact.New(nil), drivers.Result{Stdout: secret}); same.Stdout != secret {
		t.Error("a job without secrets has its output changed")
	}
}

func TestSecretNames(t *testing.T) {
	names, unmasked := secretNames(
		map[string]string{"A": "tok", "B": "tok", "C": "short-name", "D": "pw"},
		map[string]string{"A": "long-enough", "B": "long-enough", "C": "xyz", "D": ""},
	)
	if diff := cmp.Diff([]string{"pw", "short-name", "tok"}, names); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"pw", "short-name"}, unmasked); diff != "" {
		t.Errorf("unmasked (-want +got):\n%s", diff)
	}
}
