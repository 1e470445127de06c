package judges

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"svc/drivers/nomad"
	"svc/drivers/nomad/nomadtest"
	"svc/drivers/probe"
	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
)

// imageJudge is a code judge whose program is an entrypoint in its image.
func imageJudge() *registry.JudgeSpec {
	return &registry.JudgeSpec{Kind: registry.JudgeCode, ID: "img", Version: "1",
		Code: &registry.CodeJudge{Language: "python", Entrypoint: "/judge/run", Image: "registry.example/judge:2", TimeoutSec: 30}}
}

// A code judge with an image entrypoint runs through a cluster runtime's
// driver (here Nomad's, against the loopback cluster): the job runs the
// entrypoint in the judge's image with argv[1] the input file beside it,
// the judge's model variables in its environment, and its output is read
// as the judge's scores.
func TestImageJudgeRunsOnNomad(t *testing.T) {
	c := nomadtest.NewServer(t, nomadtest.Script{Stdout: []string{"checking\n", `{"metric": "judge", "value": 1, "pass": true}` + "\n"}})
	g, err := probe.NewGuard("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	d, err := nomad.New(nomad.Options{
		Config:      nomad.Config{Addr: c.URL, Token: nomadtest.Token, Namespace: "evals", Guard: g, AllowedHosts: []string{"127.0.0.1"}},
		Runtime:     nomad.RuntimeOptions{TaskDriver: "docker", Image: "registry.example/harness:1"},
		PendingPoll: 10 * time.Millisecond, LogDrain: 5 * time.Second, StopWait: 5 * time.Second,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	r := &Runner{Driver: d, Images: true, Env: map[string]string{"OPENAI_BASE_URL": "http://cp.example/judge-proxy/v1", "OPENAI_API_KEY": "jpt_x.y"}}
	in := Input{Case: registry.EvalCase{ID: "c1", Task: "t"}, Evidence: &eval.Evidence{FinalAnswer: "391"}}
	got, err := r.Run(t.Context(), imageJudge(), in, "judge-img-1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]eval.Score{{GraderID: "img", Metric: "judge:img", Value: 1, Pass: truePtr()}}, got); diff != "" {
		t.Errorf("scores (-want +got):\n%s", diff)
	}
	jobs := c.Jobs()
	if len(jobs) != 1 {
		t.Fatalf("the cluster saw %d jobs, want 1", len(jobs))
	}
	_, body, _ := c.Job(jobs[0])
	raw := string(body)
	for _, want := range []string{`"image":"registry.example/judge:2"`, `/judge/run`, `input.json`, `jpt_x.y`, `\"finalAnswer\":\"391\"`} {
		if !strings.Contains(raw, want) {
			t.Errorf("the registered job lacks %s: %s", want, raw)
		}
	}
	var spec map[string]any
	if err := json.Unmarshal(body, &spec); err != nil {
		t.Fatalf("the registered job is not JSON: %v", err)
	}
}

// On a driver that runs processes on the host, an image entrypoint is a
// skip score that says to set a cluster runtime.
func TestImageJudgeOnLocalIsSkipped(t *testing.T) {
	got, err := newRunner(t).Run(t.Context(), imageJudge(), Input{}, newJobID())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !IsSkip(got[0]) || !strings.Contains(got[0].Detail, "set runtime on the judge to a nomad, k8s or runner runtime") {
		t.Errorf("scores = %+v, want the local runtime's skip", got)
	}
}

func TestWithModelUsage(t *testing.T) {
	scores := []eval.Score{{Metric: "judge:j", Value: 1, Detail: "fine"}, {Metric: "judge:j:tone", Value: 0.5}}
	got := WithModelUsage("j", "grader", ModelUsage{Calls: 2, InputTokens: 10, OutputTokens: 3, CostUSD: 0.5, Priced: true}, scores)
	want := []eval.Score{{Metric: "judge:j", Value: 1, Detail: "fine [model grader: 2 calls, 10 input + 3 output tokens, $0.500000]"}, {Metric: "judge:j:tone", Value: 0.5}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if scores[0].Detail != "fine" {
		t.Error("the input was modified")
	}
	got = WithModelUsage("j", "grader", ModelUsage{}, scores[:1])
	if got[0].Detail != "fine [model grader: 0 calls]" {
		t.Errorf("no calls: detail %q", got[0].Detail)
	}
}

func truePtr() *bool { v := true; return &v }
