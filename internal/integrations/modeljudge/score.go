// Package modeljudge turns what a judge says into Scores (spec §2.5) and calls
// a model judge's model: the skip score of a judge that could not judge,
// the namespacing of a judge's metrics, the completion of a verdict with
// its criteria and the case's milestones, and one chat completion of a
// model judge (ModelVerdict). It runs no process and reaches no driver, so
// the API can run a model judge inline (POST /judges/try); package judges
// runs code judges as jobs and uses it for the rest.
package modeljudge

import (
	"strings"
	"unicode/utf8"

	"svc/internal/domain/eval"
)

// MaxDetail bounds a score's detail, in runes; a longer one is cut and
// ends with an ellipsis.
const MaxDetail = 2000

// MetricPrefix begins every judge metric.
const MetricPrefix = "judge:"

// metricPrefix is MetricPrefix, for this package's code.
const metricPrefix = MetricPrefix

// HarnessReason is the skip reason of a legacy harness judge: running a
// registered harness as the judge has no dispatcher yet.
const HarnessReason = "harness judges run their harness as a run of the worker's judge dispatcher, which this judge runner is not"

// SkipPrefix begins the detail of every skip score.
const SkipPrefix = "skipped: "

// Skip returns the one visible score of a judge that could not judge:
// metric judge:<id>, value 0, pass false, detail "skipped: <reason>".
func Skip(judgeID, reason string) []eval.Score {
	return []eval.Score{{
		GraderID: judgeID,
		Metric:   metricPrefix + judgeID,
		Value:    0,
		Pass:     verdict(false),
		Detail:   Detail(SkipPrefix + reason),
	}}
}

// IsSkip reports whether a score is a judge skip score: a judge's overall
// metric judge:<id> with value 0, pass false and a detail beginning
// "skipped: ". A judge may also print such a score itself to say it could
// not judge this case.
func IsSkip(s eval.Score) bool {
	rest, ok := strings.CutPrefix(s.Metric, metricPrefix)
	return ok && rest != "" && !strings.Contains(rest, ":") &&
		s.Value == 0 && s.Pass != nil && !*s.Pass && strings.HasPrefix(s.Detail, SkipPrefix)
}

// RewriteMetrics namespaces a judge's metrics: "judge" becomes
// judge:<id>, an already-prefixed judge:<id> or judge:<id>:<sub> is kept,
// and any other metric <sub> becomes judge:<id>:<sub> (so a judge that
// prints another judge's metric only ever writes under its own). An empty
// GraderID is set to the judge's id. The input is not modified.
func RewriteMetrics(judgeID string, scores []eval.Score) []eval.Score {
	own := metricPrefix + judgeID
	out := make([]eval.Score, len(scores))
	for i, s := range scores {
		switch {
		case s.Metric == "judge":
			s.Metric = own
		case s.Metric == own || strings.HasPrefix(s.Metric, own+":"):
		default:
			s.Metric = own + ":" + s.Metric
		}
		if s.GraderID == "" {
			s.GraderID = judgeID
		}
		out[i] = s
	}
	return out
}

// Detail keeps a detail storable (valid UTF-8 without NUL bytes, which
// the store refuses) and cuts it to MaxDetail runes.
func Detail(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.ReplaceAll(s, "\x00", `\x00`)
	if utf8.RuneCountInString(s) <= MaxDetail {
		return s
	}
	r := []rune(s)
	return string(r[:MaxDetail-1]) + "…"
}

// cleanDetail is Detail, for this package's code.
func cleanDetail(s string) string { return Detail(s) }
