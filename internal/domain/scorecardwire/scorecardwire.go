// Package scorecardwire holds the request bodies of the scorecard routes
// that the API client sends (POST /scorecards, /scorecards/:id/score,
// /groups/:id/score, /scorecards/gate) with the checks that need no store,
// so the client and the CLI build them without linking the scorecards
// service (internal/service/scorecards, which aliases them).
package scorecardwire

import (
	"fmt"

	"svc/internal/domain/eval"
	"svc/internal/domain/gate"
	"svc/internal/domain/graders"
	"svc/internal/domain/registry"
	"svc/internal/platform/derrors"
)

// Limits of a submit.
const (
	MaxConcurrency = 64
	MaxTrials      = 100
	MaxJudges      = 20
)

// Selection is the `cases` of a submit: ids, then tags (any match), then
// limit.
type Selection struct {
	IDs   []string `json:"ids,omitempty"`
	Tags  []string `json:"tags,omitempty"`
	Limit int      `json:"limit,omitempty"`
}

// JudgeSel names a judge of a submit; version defaults to latest.
type JudgeSel struct {
	ID      string `json:"id"`
	Version string `json:"version,omitempty"`
}

// SubmitRequest is the body of POST /scorecards.
type SubmitRequest struct {
	Dataset       registry.Ref       `json:"dataset"`
	Harness       registry.Ref       `json:"harness"`
	Judges        []JudgeSel         `json:"judges,omitempty"`
	Runtime       string             `json:"runtime,omitempty"`
	Concurrency   *int               `json:"concurrency,omitempty"`
	Cases         *Selection         `json:"cases,omitempty"`
	Graders       []registry.Grader  `json:"graders,omitempty"`
	CriticalCases []eval.CaseMatcher `json:"criticalCases,omitempty"`
	Trials        *int               `json:"trials,omitempty"`
}

// Validate checks what needs no store.
func (r *SubmitRequest) Validate() error {
	if err := CheckRef("dataset", r.Dataset); err != nil {
		return err
	}
	if err := CheckRef("harness", r.Harness); err != nil {
		return err
	}
	if err := CheckCommon(r.Concurrency, r.Trials, r.Runtime, r.Judges); err != nil {
		return err
	}
	if r.Cases != nil {
		if r.Cases.Limit < 0 {
			return derrors.Invalidf("cases.limit must be 1 or more, not %d", r.Cases.Limit)
		}
		for i, id := range r.Cases.IDs {
			if id == "" {
				return derrors.Invalidf("cases.ids[%d] is empty", i)
			}
		}
	}
	// The override replaces every case's graders, so it is checked as a
	// dataset's are: every grader, in the position it was sent.
	return graders.Check("graders", r.Graders)
}

// CheckRef checks a reference field of a request: an id and a version
// (exact or "latest").
func CheckRef(field string, r registry.Ref) error {
	if r.ID == "" {
		return derrors.Invalidf("%s.id is required", field)
	}
	if err := registry.ValidateID(r.ID); err != nil {
		return fmt.Errorf("%s.id: %w", field, err)
	}
	if r.Version == "" {
		return derrors.Invalidf("%s.version is required: an exact version or \"latest\"", field)
	}
	if err := registry.ValidateVersionSelector(r.Version); err != nil {
		return fmt.Errorf("%s.version: %w", field, err)
	}
	return nil
}

// CheckCommon checks the fields every submit shares: concurrency, trials,
// runtime and judges.
func CheckCommon(concurrency, trials *int, runtime string, judges []JudgeSel) error {
	if concurrency != nil && (*concurrency < 1 || *concurrency > MaxConcurrency) {
		return derrors.Invalidf("concurrency must be an integer from 1 to %d, not %d", MaxConcurrency, *concurrency)
	}
	if trials != nil && (*trials < 1 || *trials > MaxTrials) {
		return derrors.Invalidf("trials must be an integer from 1 to %d, not %d", MaxTrials, *trials)
	}
	if runtime != "" {
		if err := registry.ValidateID(runtime); err != nil {
			return fmt.Errorf("runtime: %w", err)
		}
	}
	if len(judges) > MaxJudges {
		return derrors.Invalidf("at most %d judges per batch, not %d", MaxJudges, len(judges))
	}
	seen := map[string]bool{}
	for i, j := range judges {
		if j.ID == "" {
			return derrors.Invalidf("judges[%d].id is required", i)
		}
		if seen[j.ID] {
			return derrors.Invalidf("judge %q is named twice; name each judge once", j.ID)
		}
		seen[j.ID] = true
		if err := registry.ValidateID(j.ID); err != nil {
			return fmt.Errorf("judges[%d].id: %w", i, err)
		}
		if j.Version != "" {
			if err := registry.ValidateVersionSelector(j.Version); err != nil {
				return fmt.Errorf("judges[%d].version: %w", i, err)
			}
		}
	}
	return nil
}

// ScoreRequest is the body of POST /scorecards/:id/score and
// /groups/:id/score.
type ScoreRequest struct {
	Judges []JudgeSel `json:"judges"`
}

// Validate requires at least one judge.
func (r *ScoreRequest) Validate() error {
	if len(r.Judges) == 0 {
		return derrors.Invalidf("judges is required: the judges ([{id, version?}]) whose verdicts this pass replaces")
	}
	return CheckCommon(nil, nil, "", r.Judges)
}

// GateRequest is the body of POST /scorecards/gate.
type GateRequest struct {
	Baseline  string          `json:"baseline"`
	Candidate string          `json:"candidate"`
	Policy    gate.GatePolicy `json:"policy"`
}

// Validate checks the ids and the policy.
func (r *GateRequest) Validate() error {
	if r.Baseline == "" || r.Candidate == "" {
		return derrors.Invalidf("baseline and candidate are required: the ids of the two scorecards to compare")
	}
	return r.Policy.Validate()
}
