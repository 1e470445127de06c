package scorecards

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"svc/auth"
	"svc/internal/domain/eval"
	"svc/internal/domain/gate"
	"svc/internal/domain/query"
	"svc/internal/platform/derrors"
	"svc/store"
)

// MaxQueryBatches bounds how many batches one query reads (newest first).
const MaxQueryBatches = 5000

// Query answers POST /scorecards/query over the workspace's batches
// (docs/query.md): incomplete batches are left out unless asked for, and
// cancelled ones always.
func (s *Service) Query(ctx context.Context, p auth.Principal, req query.Request) (query.Result, error) {
	if err := req.Validate(); err != nil {
		return query.Result{}, err
	}
	var batches []eval.Scorecard
	visible := s.audienceChecker(ctx, p)
	f := store.ScorecardFilter{Workspace: p.Workspace, Limit: 500}
	for len(batches) < MaxQueryBatches {
		rows, err := s.o.Store.ListScorecards(ctx, f)
		if err != nil {
			return query.Result{}, err
		}
		for _, r := range rows {
			var sc eval.Scorecard
			if err := json.Unmarshal(r.Doc, &sc); err != nil {
				return query.Result{}, fmt.Errorf("stored scorecard %s does not decode: %w", r.ID, err)
			}
			sc.CreatedAt, sc.UpdatedAt = r.CreatedAt, r.UpdatedAt
			if err := visible(sc); errors.Is(err, derrors.ErrNotFound) {
				continue // another team's private batch
			} else if err != nil {
				return query.Result{}, err
			}
			batches = append(batches, summaryView(sc))
		}
		if len(rows) < f.Limit {
			break
		}
		last := rows[len(rows)-1]
		f.BeforeTime, f.BeforeID = last.CreatedAt, last.ID
	}
	return query.Run(req, batches)
}

// Analysis returns the analysis bundle that scoring revision `revision` of
// batch id froze (0: the latest), as stored: 404 when the batch has none,
// or none for that revision.
func (s *Service) Analysis(ctx context.Context, p auth.Principal, id string, revision int) (json.RawMessage, error) {
	sc, _, err := s.load(ctx, p, id)
	if err != nil {
		return nil, err
	}
	a, err := s.o.Store.GetAnalysis(ctx, sc.Tenant, sc.ID, revision)
	if errors.Is(err, derrors.ErrNotFound) {
		if revision == 0 {
			return nil, derrors.NotFoundf("scorecard %s has no frozen analysis yet: one is frozen with each scoring revision", id)
		}
		return nil, derrors.NotFoundf("scorecard %s has no frozen analysis for revision %d", id, revision)
	}
	if err != nil {
		return nil, err
	}
	return json.RawMessage(a.Doc), nil
}

// Diff compares two batches of the workspace (spec §2.8): metric deltas,
// case transitions, the experiment's axes and comparability. A cancelled
// batch on either side is refused.
func (s *Service) Diff(ctx context.Context, p auth.Principal, baseline, candidate string) (gate.ScorecardDiff, error) {
	base, cand, err := s.pair(ctx, p, baseline, candidate)
	if err != nil {
		return gate.ScorecardDiff{}, err
	}
	return gate.Diff(base, cand)
}

// Gate decides whether the candidate may ship against the baseline
// (docs/gate.md): pass, block, blocked_missing or not_comparable, with the
// reasons, the per-case tests and the scoring revisions it pinned.
func (s *Service) Gate(ctx context.Context, p auth.Principal, req GateRequest) (gate.Decision, error) {
	if err := req.Validate(); err != nil {
		return gate.Decision{}, err
	}
	base, cand, err := s.pair(ctx, p, req.Baseline, req.Candidate)
	if err != nil {
		return gate.Decision{}, err
	}
	return gate.Gate(base, cand, req.Policy)
}

// pair loads both sides with their per-case tables.
func (s *Service) pair(ctx context.Context, p auth.Principal, baseline, candidate string) (eval.Scorecard, eval.Scorecard, error) {
	if baseline == "" || candidate == "" {
		return eval.Scorecard{}, eval.Scorecard{}, derrors.Invalidf("baseline and candidate are required: ?baseline=<scorecard id>&candidate=<scorecard id>")
	}
	base, err := s.Get(ctx, p, baseline)
	if err != nil {
		return eval.Scorecard{}, eval.Scorecard{}, err
	}
	cand, err := s.Get(ctx, p, candidate)
	if err != nil {
		return eval.Scorecard{}, eval.Scorecard{}, err
	}
	return base, cand, nil
}
