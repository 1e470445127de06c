package trace

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
)

// TestBuildAnalysisIsTheCanonicalDocument: the analysis, made a case at a
// time, is byte for byte the canonical JSON of the whole bundle (its
// digest is what a revision pins), for no case, one, and many with
// scores, verdicts and text that JSON escapes.
func TestBuildAnalysisIsTheCanonicalDocument(t *testing.T) {
	at := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
	pass, fail := true, false
	rate := 0.5
	sc := eval.Scorecard{ID: "sc_1", Dataset: registry.Ref{ID: "ds", Version: "1.0.0"}, Harness: registry.Ref{ID: "h", Version: "2"},
		Summary:  map[string]eval.MetricSummary{"contains": {Count: 3, Mean: 0.25, PassRate: &rate}, "cases": {Count: 1}},
		Manifest: &eval.Manifest{PolicyDigest: "sha256:p", Harness: "sha256:h", GradingPlan: "sha256:g"}}
	rev := eval.ScoringRevision{Revision: 2, Kind: "rescore", Judges: []eval.SealedJudge{{ID: "j", Version: "1", Digest: "sha256:j"}},
		ScorePlaneDigest: "sha256:s", CreatedAt: at, CreatedBy: "user:alice"}
	row := func(i int) eval.CaseRow {
		r := eval.CaseRow{CaseID: fmt.Sprintf("case-%03d \"q\" <%d>", i, i), Trial: i % 3, RunID: fmt.Sprintf("run_%d", i),
			Verdict: "pass", VerdictBasis: "graders", CasePass: i%2 == 0, Critical: i%5 == 0}
		switch i % 3 {
		case 1:
			r.Scores = []eval.Score{{GraderID: "g", Metric: "contains", Value: 1, Pass: &pass, Detail: "tab\there\nnewline é"}}
		case 2:
			r.Scores = []eval.Score{{GraderID: "g", Metric: "contains", Value: 0.125, Pass: &fail}, {GraderID: "j", Metric: "judge", Value: 1e-7}}
		}
		return r
	}
	for _, n := range []int{0, 1, 2, 50} {
		rows := make([]eval.CaseRow, n)
		for i := range rows {
			rows[i] = row(i)
		}
		got, digest, err := BuildAnalysis(sc, rows, rev)
		if err != nil {
			t.Fatal(err)
		}
		whole := Analysis{ScorecardID: sc.ID, Revision: rev.Revision, Kind: rev.Kind, Dataset: sc.Dataset, Harness: sc.Harness,
			Judges: rev.Judges, Summary: sc.Summary, CreatedAt: at, CreatedBy: rev.CreatedBy, Cases: []AnalysisCase{},
			Digests: AnalysisDigests{ScorePlane: "sha256:s", Policy: "sha256:p", Harness: "sha256:h", Grading: "sha256:g"}}
		for _, r := range rows {
			whole.Cases = append(whole.Cases, analysisCase(r))
		}
		want, err := registry.CanonicalJSON(whole)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%d cases: BuildAnalysis differs from the canonical document:\n got %.600s\nwant %.600s", n, got, want)
		}
		if digest != registry.Digest(want) {
			t.Errorf("%d cases: digest %s, want %s", n, digest, registry.Digest(want))
		}
	}
}

// BenchmarkBuildAnalysis100k: the analysis of a 100,000-case batch, the
// bytes it allocates included (-benchmem).
func BenchmarkBuildAnalysis100k(b *testing.B) {
	pass := true
	rows := make([]eval.CaseRow, 100_000)
	for i := range rows {
		rows[i] = eval.CaseRow{CaseID: fmt.Sprintf("c%06d", i), RunID: fmt.Sprintf("run_%024d", i), Verdict: "pass", VerdictBasis: "run",
			CasePass: true, Scores: []eval.Score{{GraderID: "exit", Metric: "exit", Value: 1, Pass: &pass}}}
	}
	sc := eval.Scorecard{ID: "sc_big"}
	rev := eval.ScoringRevision{Revision: 1, Kind: "initial"}
	for b.Loop() {
		if _, _, err := BuildAnalysis(sc, rows, rev); err != nil {
			b.Fatal(err)
		}
	}
}
