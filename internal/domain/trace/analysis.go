package trace

import (
	"bytes"
	"fmt"
	"time"

	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
)

// Analysis is the bundle a scoring revision freezes (spec §9.6): what the
// revision judged, so that a gate decision that pinned it can be explained
// later even after further re-scoring.
type Analysis struct {
	ScorecardID string                        `json:"scorecardId"`
	Revision    int                           `json:"revision"`
	Kind        string                        `json:"kind"` // initial or rescore
	Dataset     registry.Ref                  `json:"dataset"`
	Harness     registry.Ref                  `json:"harness"`
	Judges      []eval.SealedJudge            `json:"judges"`
	Summary     map[string]eval.MetricSummary `json:"summary"`
	Cases       []AnalysisCase                `json:"cases"`
	Digests     AnalysisDigests               `json:"digests"`
	CreatedAt   time.Time                     `json:"createdAt"`
	CreatedBy   string                        `json:"createdBy,omitempty"`
}

// AnalysisCase is one (case, trial) as the revision judged it.
type AnalysisCase struct {
	CaseID       string       `json:"caseId"`
	Trial        int          `json:"trial"`
	RunID        string       `json:"runId"`
	Verdict      string       `json:"verdict"`
	VerdictBasis string       `json:"verdictBasis"`
	CasePass     bool         `json:"casePass"`
	Critical     bool         `json:"critical,omitempty"`
	Scores       []eval.Score `json:"scores"`
}

// AnalysisDigests pins what the revision rests on.
type AnalysisDigests struct {
	ScorePlane string `json:"scorePlane"`
	Policy     string `json:"policy,omitempty"`
	Harness    string `json:"harness,omitempty"`
	Grading    string `json:"grading,omitempty"`
}

// BuildAnalysis is the frozen bundle of revision rev of sc over rows, as
// canonical JSON with its digest.
func BuildAnalysis(sc eval.Scorecard, rows []eval.CaseRow, rev eval.ScoringRevision) ([]byte, string, error) {
	a := Analysis{
		ScorecardID: sc.ID, Revision: rev.Revision, Kind: rev.Kind, Dataset: sc.Dataset, Harness: sc.Harness,
		Judges: rev.Judges, Summary: sc.Summary, CreatedAt: rev.CreatedAt, CreatedBy: rev.CreatedBy,
		Digests: AnalysisDigests{ScorePlane: rev.ScorePlaneDigest},
	}
	if a.Judges == nil {
		a.Judges = []eval.SealedJudge{}
	}
	if a.Summary == nil {
		a.Summary = map[string]eval.MetricSummary{}
	}
	if m := sc.Manifest; m != nil {
		a.Digests.Policy, a.Digests.Harness, a.Digests.Grading = m.PolicyDigest, m.Harness, m.GradingPlan
	}
	doc, err := canonicalAnalysis(a, rows)
	if err != nil {
		return nil, "", fmt.Errorf("encoding the analysis of %s@%d: %w", sc.ID, rev.Revision, err)
	}
	return doc, registry.Digest(doc), nil
}

// analysisCase is row as the analysis shows it.
func analysisCase(r eval.CaseRow) AnalysisCase {
	scores := r.Scores
	if scores == nil {
		scores = []eval.Score{}
	}
	return AnalysisCase{CaseID: r.CaseID, Trial: r.Trial, RunID: r.RunID, Verdict: r.Verdict,
		VerdictBasis: r.VerdictBasis, CasePass: r.CasePass, Critical: r.Critical, Scores: scores}
}

// canonicalAnalysis is registry.CanonicalJSON of a with its Cases made
// from rows, made a case at a time: the rest of the document is
// canonicalised with an empty case list, whose place is then filled with
// the cases' canonical forms in order. A canonical array is its elements'
// canonical forms, comma-separated, so the bytes are the same; but
// canonicalising the whole document at once builds a generic tree of every
// case (hundreds of MB at 100,000 cases) where this holds one case's.
func canonicalAnalysis(a Analysis, rows []eval.CaseRow) ([]byte, error) {
	a.Cases = []AnalysisCase{}
	head, err := registry.CanonicalJSON(a)
	if err != nil {
		return nil, err
	}
	const empty = `"cases":[]`
	at := bytes.Index(head, []byte(empty))
	if at < 0 || bytes.Count(head, []byte(empty)) != 1 {
		// The place of the cases is not unique (a summary metric named
		// "cases" with no value...): canonicalise the whole document.
		a.Cases = make([]AnalysisCase, 0, len(rows))
		for _, r := range rows {
			a.Cases = append(a.Cases, analysisCase(r))
		}
		return registry.CanonicalJSON(a)
	}
	at += len(empty) - 1 // before the closing bracket
	out := make([]byte, 0, len(head)+200*len(rows))
	out = append(out, head[:at]...)
	for i, r := range rows {
		c, err := registry.CanonicalJSON(analysisCase(r))
		if err != nil {
			return nil, err
		}
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, c...)
	}
	return append(out, head[at:]...), nil
}
