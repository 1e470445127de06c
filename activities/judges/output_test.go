package judges

import (
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"svc/internal/domain/eval"
)

func TestParseOutput(t *testing.T) {
	tests := []struct {
		name    string
		stdout  string
		want    []eval.Score
		wantErr string // a substring of the error; "" means no error
	}{
		{
			name:   "one score",
			stdout: `{"metric": "judge", "value": 1, "pass": true, "detail": "ok"}` + "\n",
			want:   []eval.Score{{Metric: "judge", Value: 1, Pass: verdict(true), Detail: "ok"}},
		},
		{
			name:   "array",
			stdout: `[{"metric": "a", "value": 0.5}, {"metric": "b", "value": -2e3, "pass": false, "graderId": "g"}]`,
			want:   []eval.Score{{Metric: "a", Value: 0.5}, {GraderID: "g", Metric: "b", Value: -2000, Pass: verdict(false)}},
		},
		{
			name:   "debug lines before, trailing blank lines after",
			stdout: "step 1\n{\"metric\": \"judge\", \"value\": 5}\nstep 2 {\n\n{\"metric\": \"judge\", \"value\": 1}\n\n  \n",
			want:   []eval.Score{{Metric: "judge", Value: 1}},
		},
		{
			name:   "pretty-printed object",
			stdout: "loading\n{\n  \"metric\": \"judge\",\n  \"value\": 0.25,\n  \"detail\": \"a } and a \\\" and { in a string\"\n}\n",
			want:   []eval.Score{{Metric: "judge", Value: 0.25, Detail: `a } and a " and { in a string`}},
		},
		{
			name:   "pretty-printed array with nested members",
			stdout: "[\n  {\"metric\": \"a\", \"value\": 1, \"extra\": {\"k\": [1, 2]}},\n  {\"metric\": \"b\", \"value\": 0}\n]",
			want:   []eval.Score{{Metric: "a", Value: 1}, {Metric: "b", Value: 0}},
		},
		{
			name:   "text before the value on the last line",
			stdout: `score: {"metric": "judge", "value": 1}`,
			want:   []eval.Score{{Metric: "judge", Value: 1}},
		},
		{
			name:   "string ending in escaped backslash",
			stdout: "x\n{\"metric\": \"judge\",\n\"value\": 1, \"detail\": \"C:\\\\\"}",
			want:   []eval.Score{{Metric: "judge", Value: 1, Detail: `C:\`}},
		},
		{
			name:   "null pass, detail and graderId are absent",
			stdout: `{"metric": "judge", "value": 1, "pass": null, "detail": null, "graderId": null}`,
			want:   []eval.Score{{Metric: "judge", Value: 1}},
		},
		{
			name:   "metric trimmed",
			stdout: `{"metric": " judge ", "value": 1}`,
			want:   []eval.Score{{Metric: "judge", Value: 1}},
		},
		{
			name:   "NUL in detail is made storable",
			stdout: `{"metric": "judge", "value": 1, "detail": "a\u0000b"}`,
			want:   []eval.Score{{Metric: "judge", Value: 1, Detail: `a\x00b`}},
		},
		{name: "empty", stdout: " \n\n", wantErr: "stdout is empty"},
		{name: "no JSON", stdout: "all good\n", wantErr: "does not end with a JSON object or array"},
		{name: "a score then a debug line", stdout: "{\"metric\": \"judge\", \"value\": 1}\ndone\n", wantErr: "does not end with a JSON object or array"},
		{name: "a number", stdout: "42\n", wantErr: "the last JSON value is a number"},
		{name: "a string", stdout: `"judge"`, wantErr: "the last JSON value is a string"},
		{name: "empty array", stdout: "[]", wantErr: "empty array"},
		{name: "array of numbers", stdout: "[1, 2]", wantErr: "score [0]: the last JSON value is a number"},
		{name: "missing metric", stdout: `{"value": 1}`, wantErr: `"metric" is missing or empty`},
		{name: "blank metric", stdout: `{"metric": "  ", "value": 1}`, wantErr: `"metric" is missing or empty`},
		{name: "metric not a string", stdout: `{"metric": 3, "value": 1}`, wantErr: `"metric" must be a string, got a number`},
		{name: "metric with a newline", stdout: `{"metric": "a\nb", "value": 1}`, wantErr: "control characters"},
		{name: "metric too long", stdout: `{"metric": "` + strings.Repeat("m", MaxMetricLen+1) + `", "value": 1}`, wantErr: "bytes long"},
		{name: "missing value", stdout: `{"metric": "judge"}`, wantErr: `"value" must be a number, got missing`},
		{name: "string value", stdout: `{"metric": "judge", "value": "1"}`, wantErr: `"value" must be a number, got a string`},
		{name: "boolean value", stdout: `{"metric": "judge", "value": true}`, wantErr: "got a boolean"},
		{name: "infinite value", stdout: `{"metric": "judge", "value": 1e999}`, wantErr: "not a finite number"},
		{name: "pass not a bool", stdout: `{"metric": "judge", "value": 1, "pass": "yes"}`, wantErr: `"pass" must be true or false, got a string`},
		{name: "detail not a string", stdout: `{"metric": "judge", "value": 1, "detail": 3}`, wantErr: `"detail" must be a string`},
		{name: "second element bad", stdout: `[{"metric": "a", "value": 1}, {"metric": "b"}]`, wantErr: "score [1]"},
		{name: "unbalanced", stdout: "x ]", wantErr: "unbalanced brackets"},
		{name: "mismatched", stdout: "{ ]", wantErr: "unbalanced brackets"},
		{name: "unterminated string", stdout: "a\" }", wantErr: "unterminated string"},
		{name: "malformed JSON", stdout: "{\n\"metric\" \"judge\"}", wantErr: "malformed"},
		{name: "too many scores", stdout: "[" + strings.Repeat(`{"metric":"a","value":1},`, MaxScores) + `{"metric":"a","value":1}]`, wantErr: "at most 1000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseOutput(tt.stdout)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseOutput = %+v, %v; want an error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseOutput: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseOutput (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseOutputClipsDetail(t *testing.T) {
	got, err := ParseOutput(`{"metric": "judge", "value": 1, "detail": "` + strings.Repeat("é", MaxDetail+10) + `"}`)
	if err != nil {
		t.Fatal(err)
	}
	if n := utf8.RuneCountInString(got[0].Detail); n != MaxDetail || !strings.HasSuffix(got[0].Detail, "…") {
		t.Errorf("detail has %d runes ending %q, want %d ending with an ellipsis", n, got[0].Detail[len(got[0].Detail)-3:], MaxDetail)
	}
}

func TestRewriteMetrics(t *testing.T) {
	tests := []struct {
		metric, grader         string
		wantMetric, wantGrader string
	}{
		{"judge", "", "judge:acc", "acc"},
		{"tone", "", "judge:acc:tone", "acc"},
		{"judge:acc", "", "judge:acc", "acc"},
		{"judge:acc:tone", "", "judge:acc:tone", "acc"},
		{"milestone:found", "", "judge:acc:milestone:found", "acc"},
		// Another judge's metric, or one that only starts like ours, stays ours.
		{"judge:other", "", "judge:acc:judge:other", "acc"},
		{"judge:accuracy", "", "judge:acc:judge:accuracy", "acc"},
		{"exit_code", "exit_code", "judge:acc:exit_code", "exit_code"},
	}
	for _, tt := range tests {
		in := []eval.Score{{Metric: tt.metric, GraderID: tt.grader, Value: 1}}
		got := RewriteMetrics("acc", in)
		if got[0].Metric != tt.wantMetric || got[0].GraderID != tt.wantGrader {
			t.Errorf("RewriteMetrics(acc, {metric %q grader %q}) = {metric %q grader %q}, want {%q %q}",
				tt.metric, tt.grader, got[0].Metric, got[0].GraderID, tt.wantMetric, tt.wantGrader)
		}
		if in[0].Metric != tt.metric {
			t.Errorf("RewriteMetrics modified its input: %q", in[0].Metric)
		}
		if again := RewriteMetrics("acc", got); again[0].Metric != got[0].Metric {
			t.Errorf("RewriteMetrics is not idempotent: %q -> %q", got[0].Metric, again[0].Metric)
		}
	}
}

func TestIsSkip(t *testing.T) {
	skip := Skip("acc", "no reason")[0]
	tests := []struct {
		name string
		s    eval.Score
		want bool
	}{
		{"Skip's score", skip, true},
		{"judge-printed skip", eval.Score{Metric: "judge:acc", Pass: verdict(false), Detail: "skipped: no screenshot"}, true},
		{"sub-metric", eval.Score{Metric: "judge:acc:tone", Pass: verdict(false), Detail: "skipped: x"}, false},
		{"not a judge metric", eval.Score{Metric: "exit_code", Pass: verdict(false), Detail: "skipped: x"}, false},
		{"passing", eval.Score{Metric: "judge:acc", Pass: verdict(true), Detail: "skipped: x"}, false},
		{"no pass", eval.Score{Metric: "judge:acc", Detail: "skipped: x"}, false},
		{"non-zero value", eval.Score{Metric: "judge:acc", Value: 0.5, Pass: verdict(false), Detail: "skipped: x"}, false},
		{"error detail", eval.Score{Metric: "judge:acc", Pass: verdict(false), Detail: "error: x"}, false},
	}
	for _, tt := range tests {
		if got := IsSkip(tt.s); got != tt.want {
			t.Errorf("IsSkip(%s) = %v, want %v", tt.name, got, tt.want)
		}
	}
	want := eval.Score{GraderID: "acc", Metric: "judge:acc", Value: 0, Pass: verdict(false), Detail: "skipped: no reason"}
	if diff := cmp.Diff(want, skip); diff != "" {
		t.Errorf("Skip (-want +got):\n%s", diff)
	}
}

// FuzzParseOutput checks that no output panics ParseOutput and that what
// it accepts honours the contract.
func FuzzParseOutput(f *testing.F) {
	for _, seed := range []string{
		`{"metric": "judge", "value": 1}`,
		"debug\n[{\"metric\": \"a\", \"value\": 0.5, \"pass\": true}]\n",
		"{\n \"metric\": \"j\",\n \"value\": 1, \"detail\": \"\\\\\\\"}\"\n}",
		`x ]`, `"\"}`, `{"metric":"\u0000","value":-0}`, "[[[[[]]]]]", `}`, `\"}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, stdout string) {
		scores, err := ParseOutput(stdout)
		if err != nil {
			return
		}
		if len(scores) == 0 || len(scores) > MaxScores {
			t.Fatalf("ParseOutput(%q) accepted %d scores", stdout, len(scores))
		}
		for _, s := range scores {
			if strings.TrimSpace(s.Metric) == "" || math.IsNaN(s.Value) || math.IsInf(s.Value, 0) ||
				utf8.RuneCountInString(s.Detail) > MaxDetail || strings.ContainsRune(s.Detail, 0) {
				t.Fatalf("ParseOutput(%q) accepted %+v", stdout, s)
			}
		}
		for _, s := range RewriteMetrics("j", scores) {
			if s.Metric != "judge:j" && !strings.HasPrefix(s.Metric, "judge:j:") {
				t.Fatalf("RewriteMetrics gave %q", s.Metric)
			}
		}
	})
}
