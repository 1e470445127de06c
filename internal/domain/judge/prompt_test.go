package judge

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
)

func f(x float64) *float64 { return &x }

func TestEffectiveValues(t *testing.T) {
	judgeC := []registry.Criterion{{ID: "own"}}
	rubricC := []registry.Criterion{{ID: "from-rubric", Weight: f(2)}}
	rub := &registry.RubricSpec{ID: "r", Version: "1.0.0", Text: "registered text", Criteria: rubricC, PromptTemplate: "R {verdict_instruction}"}
	ref := &registry.RubricInput{Ref: &registry.Ref{ID: "r", Version: "1.0.0"}}
	model := func(m registry.ModelJudge) *registry.JudgeSpec {
		return &registry.JudgeSpec{Kind: registry.JudgeModel, ID: "j", Version: "1", Model: &m}
	}
	for _, c := range []struct {
		name     string
		j        *registry.JudgeSpec
		override *registry.RubricInput
		rubric   *registry.RubricSpec
		want     Effective
		err      string
	}{
		{name: "inline rubric, own criteria", j: model(registry.ModelJudge{Rubric: &registry.RubricInput{Text: "inline"}, Criteria: judgeC, PassThreshold: f(0.5)}),
			want: Effective{RubricText: "inline", Criteria: judgeC, PassThreshold: f(0.5)}},
		{name: "registered rubric supplies criteria and template", j: model(registry.ModelJudge{Rubric: ref}), rubric: rub,
			want: Effective{RubricText: "registered text", RubricRef: "r@1.0.0", Criteria: rubricC, PromptTemplate: "R {verdict_instruction}"}},
		{name: "judge's own criteria and template win", j: model(registry.ModelJudge{Rubric: ref, Criteria: judgeC, PromptTemplate: "J {verdict_instruction}"}), rubric: rub,
			want: Effective{RubricText: "registered text", RubricRef: "r@1.0.0", Criteria: judgeC, PromptTemplate: "J {verdict_instruction}"}},
		{name: "latest resolves to any version", j: model(registry.ModelJudge{Rubric: &registry.RubricInput{Ref: &registry.Ref{ID: "r", Version: "latest"}}}), rubric: rub,
			want: Effective{RubricText: "registered text", RubricRef: "r@1.0.0", Criteria: rubricC, PromptTemplate: "R {verdict_instruction}"}},
		{name: "override replaces the rubric", j: model(registry.ModelJudge{Rubric: ref}), override: &registry.RubricInput{Text: "other"},
			want: Effective{RubricText: "other"}},
		{name: "unresolved reference", j: model(registry.ModelJudge{Rubric: ref}), err: "does not resolve"},
		{name: "wrong rubric", j: model(registry.ModelJudge{Rubric: ref}), rubric: &registry.RubricSpec{ID: "other", Version: "1.0.0"}, err: "resolved to other@1.0.0"},
		{name: "harness judge", j: &registry.JudgeSpec{Kind: registry.JudgeHarness, ID: "h", Harness: &registry.HarnessJudge{Rubric: ref}}, rubric: rub,
			want: Effective{RubricText: "registered text", RubricRef: "r@1.0.0", Criteria: rubricC, PromptTemplate: "R {verdict_instruction}"}},
		{name: "code judge", j: &registry.JudgeSpec{Kind: registry.JudgeCode, ID: "c", Code: &registry.CodeJudge{}}, want: Effective{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := EffectiveValues(c.j, c.override, c.rubric)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want one saying %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("EffectiveValues (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRender(t *testing.T) {
	long := strings.Repeat("x", MaxDefaultTrace*2)
	ev := Evidence{
		Case:     registry.EvalCase{ID: "c", Task: "add 2 and 2"},
		Trace:    []eval.TraceEvent{{Kind: "message", Role: "assistant", Content: long}},
		Snapshot: &eval.Snapshot{Kind: "browser", DOM: "<p>4</p>"},
		Evidence: &eval.Evidence{FinalAnswer: "4"},
		Slots:    map[string]string{"bound": "B"},
	}
	for _, c := range []struct {
		name       string
		eff        Effective
		contains   []string
		absent     []string
		truncated  bool
		warnings   int
		unboundRaw string
	}{
		{name: "default template cuts the trace", eff: Effective{RubricText: "be right"},
			contains: []string{"## Task\nadd 2 and 2", "## Rubric\nbe right", "## Final answer\n4", `"score": <number`}, truncated: true, warnings: 1,
			absent: []string{"<p>4</p>"}},
		{name: "dom input binds the DOM", eff: Effective{Inputs: []string{"dom"}},
			contains: []string{"## Page DOM\n<p>4</p>"}, absent: []string{`{"kind":"message"`}},
		{name: "custom template keeps the trace whole and an unbound slot verbatim", eff: Effective{PromptTemplate: "{trace}|{bound}|{unbound}|{verdict_instruction}"},
			contains: []string{long, "|B|{unbound}|"}, warnings: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := Render(c.eff, ev)
			for _, s := range c.contains {
				if !strings.Contains(r.Prompt, s) {
					t.Errorf("prompt lacks %.80q", s)
				}
			}
			for _, s := range c.absent {
				if strings.Contains(r.Prompt, s) {
					t.Errorf("prompt holds %.80q", s)
				}
			}
			if len(r.Warnings) != c.warnings {
				t.Errorf("warnings = %q, want %d", r.Warnings, c.warnings)
			}
			for _, s := range r.Slots {
				if s.Name == "trace" && s.Truncated != c.truncated {
					t.Errorf("trace truncated = %v, want %v", s.Truncated, c.truncated)
				}
				if s.Name == "trace" && c.truncated && s.Chars != MaxDefaultTrace {
					t.Errorf("trace chars = %d, want %d", s.Chars, MaxDefaultTrace)
				}
			}
		})
	}
}

func TestParseVerdict(t *testing.T) {
	for _, c := range []struct {
		text string
		want []eval.Score
		err  string
	}{
		{text: "```json\n{\"score\": 0.8, \"pass\": true, \"reason\": \"ok\"}\n```", want: []eval.Score{{GraderID: "j", Metric: "judge:j", Value: 0.8, Pass: func() *bool { b := true; return &b }(), Detail: "ok"}}},
		{text: `{"criteria": {"b": {"score": 1}, "a": {"score": 0.5, "reason": "half"}}}`, want: []eval.Score{
			{GraderID: "j", Metric: "judge:j:a", Value: 0.5, Detail: "half"}, {GraderID: "j", Metric: "judge:j:b", Value: 1}}},
		{text: "no json here", err: "no JSON object"},
		{text: `{"score": 7}`, err: "not between 0 and 1"},
		{text: `{"reason": "x"}`, err: "neither"},
	} {
		v, err := ParseVerdict(c.text)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseVerdict(%q) err = %v, want %q", c.text, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("ParseVerdict(%q): %v", c.text, err)
		}
		if diff := cmp.Diff(c.want, v.Scores("j")); diff != "" {
			t.Errorf("ParseVerdict(%q) scores (-want +got):\n%s", c.text, diff)
		}
	}
}

// TestImageTypeMatchesNetHTTP holds the domain's image sniff to what
// net/http's DetectContentType says for the same bytes.
func TestImageTypeMatchesNetHTTP(t *testing.T) {
	for _, raw := range [][]byte{
		[]byte("\x89PNG\r\n\x1a\n\x00\x00"), []byte("\xff\xd8\xff\xe0JFIF"), []byte("GIF89a..."), []byte("GIF87a..."),
		[]byte("BM\x00\x00"), []byte("\x00\x00\x01\x00\x01\x00"), []byte("RIFF\x00\x00\x00\x00WEBPVP8 "),
		[]byte("plain text"), []byte("<svg xmlns"), {},
	} {
		want := http.DetectContentType(raw)
		if !strings.HasPrefix(want, "image/") {
			want = ""
		}
		if got := imageType(raw); got != want {
			t.Errorf("imageType(%q) = %q, net/http says %q", raw, got, want)
		}
	}
}
