package judge

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
)

// Verdict is the model's answer, as VerdictInstruction asks for it.
type Verdict struct {
	Score    *float64                    `json:"score"`
	Pass     *bool                       `json:"pass"`
	Reason   string                      `json:"reason"`
	Criteria map[string]CriterionVerdict `json:"criteria"`
}

// CriterionVerdict is the model's answer for one criterion.
type CriterionVerdict struct {
	Score  *float64 `json:"score"`
	Reason string   `json:"reason"`
}

// ParseVerdict reads the JSON object of a model's answer: the answer
// itself, or the outermost {...} in it (models wrap JSON in prose or code
// fences). Scores must be numbers in [0, 1].
func ParseVerdict(text string) (Verdict, error) {
	s := strings.TrimSpace(text)
	i, j := strings.IndexByte(s, '{'), strings.LastIndexByte(s, '}')
	if i < 0 || j < i {
		return Verdict{}, fmt.Errorf("the answer holds no JSON object")
	}
	var v Verdict
	if err := json.Unmarshal([]byte(s[i:j+1]), &v); err != nil {
		return Verdict{}, fmt.Errorf("the answer's JSON object does not parse: %v", err)
	}
	if v.Score != nil && !unit(*v.Score) {
		return Verdict{}, fmt.Errorf("score %v is not between 0 and 1", *v.Score)
	}
	for id, c := range v.Criteria {
		if c.Score != nil && !unit(*c.Score) {
			return Verdict{}, fmt.Errorf("criterion %s: score %v is not between 0 and 1", id, *c.Score)
		}
	}
	if v.Score == nil && len(v.Criteria) == 0 {
		return Verdict{}, fmt.Errorf(`the answer has neither "score" nor "criteria"`)
	}
	return v, nil
}

func unit(x float64) bool { return !math.IsNaN(x) && x >= 0 && x <= 1 }

// Scores turns a verdict into the judge's raw scores, before criteria are
// completed (judges.ApplyCriteria): the overall judge:<id> when the model
// gave a score, and judge:<id>:<c> for every criterion it scored. A pass
// the model gave is kept on the overall score.
func (v Verdict) Scores(judgeID string) []eval.Score {
	var out []eval.Score
	if v.Score != nil {
		s := eval.Score{GraderID: judgeID, Metric: "judge:" + judgeID, Value: *v.Score, Detail: v.Reason}
		if v.Pass != nil {
			p := *v.Pass
			s.Pass = &p
		}
		out = append(out, s)
	}
	ids := make([]string, 0, len(v.Criteria))
	for id := range v.Criteria {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		c := v.Criteria[id]
		if c.Score == nil {
			continue // missing: ApplyCriteria makes it an error score
		}
		out = append(out, eval.Score{GraderID: judgeID, Metric: "judge:" + judgeID + ":" + id, Value: *c.Score, Detail: c.Reason})
	}
	return out
}

// Coverage is how a case's evidence covers a judge's requires.
type Coverage struct {
	Satisfied []registry.EvidenceRequirement `json:"satisfied"`
	Missing   []registry.EvidenceRequirement `json:"missing"`
	Warnings  []string                       `json:"warnings"`
}

// Cover checks each requirement against the evidence.
func Cover(reqs []registry.EvidenceRequirement, ev Evidence) Coverage {
	c := Coverage{Satisfied: []registry.EvidenceRequirement{}, Missing: []registry.EvidenceRequirement{}, Warnings: []string{}}
	for _, r := range reqs {
		ok := false
		switch r.Kind {
		case registry.EvidenceFinalAnswer:
			ok = finalAnswer(ev) != ""
		case registry.EvidenceToolCall:
			ok = hasEvent(ev.Trace, "tool_call", r.Name, "")
		case registry.EvidenceArtifact:
			ok = hasEvent(ev.Trace, "artifact", "", r.Role)
			if !ok && ev.Evidence != nil {
				for _, a := range ev.Evidence.Artifacts {
					if r.Role == "" || a.Role == r.Role {
						ok = true
					}
				}
			}
		case registry.EvidenceSpan:
			ok = hasEvent(ev.Trace, "span", r.Name, "")
		case registry.EvidenceScreenshot:
			ok = ev.Snapshot != nil && (ev.Snapshot.Screenshot != "" || ev.Snapshot.ScreenshotRef != "")
		case registry.EvidenceDOM:
			ok = ev.Snapshot != nil && ev.Snapshot.DOM != ""
		default:
			c.Warnings = append(c.Warnings, fmt.Sprintf("requirement kind %q is not known to this version", r.Kind))
			continue
		}
		if ok {
			c.Satisfied = append(c.Satisfied, r)
		} else {
			c.Missing = append(c.Missing, r)
		}
	}
	if len(ev.Trace) == 0 && len(reqs) > 0 {
		c.Warnings = append(c.Warnings, "the evidence has no trace events")
	}
	return c
}

// hasEvent reports whether the trace has an event of kind with the name
// and role given ("" matches any).
func hasEvent(tr []eval.TraceEvent, kind, name, role string) bool {
	for _, e := range tr {
		if e.Kind == kind && (name == "" || e.Name == name) && (role == "" || e.Role == role) {
			return true
		}
	}
	return false
}
