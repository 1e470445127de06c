package scorecards

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"svc/auth"
	"svc/internal/domain/eval"
	"svc/internal/domain/flows"
	"svc/internal/domain/manifest"
	"svc/internal/domain/registry"
	"svc/internal/domain/scoring"
	"svc/internal/platform/derrors"
	"svc/internal/platform/reqid"
	"svc/store/records"
)

// scoreConcurrency is how many cases a detached pass judges at once.
const scoreConcurrency = 8

// Score starts a detached scoring pass (spec §3): only on a succeeded batch
// with results (409 otherwise, 400 without results), one pass at a time
// (409). The pass replaces the selected judges' verdicts and keeps the
// others; its success appends a scoring revision.
func (s *Service) Score(ctx context.Context, p auth.Principal, id string, req ScoreRequest) (eval.Scorecard, error) {
	if err := req.Validate(); err != nil {
		return eval.Scorecard{}, err
	}
	sc, _, err := s.load(ctx, p, id)
	if err != nil {
		return eval.Scorecard{}, err
	}
	if sc.Status != eval.ScorecardSucceeded {
		return eval.Scorecard{}, derrors.Conflictf("scorecard %s is %s; only a succeeded batch can be scored", id, sc.Status)
	}
	has, err := s.anyResult(ctx, sc.Tenant, sc.ID)
	if err != nil {
		return eval.Scorecard{}, err
	}
	if !has {
		return eval.Scorecard{}, derrors.Invalidf("scorecard %s has no case results to score", id)
	}
	var uses []flows.JudgeUse
	for _, j := range req.Judges {
		v := j.Version
		if v == "" {
			v = "latest"
		}
		r, err := s.o.Registries.Resolve(ctx, p, registry.Judge, j.ID, v)
		if err != nil {
			return eval.Scorecard{}, err
		}
		uses = append(uses, flows.JudgeUse{ID: j.ID, Version: r.Version})
	}
	// Checked last, so that a request that could never start a pass (wrong
	// state, no results, unknown judge) says why, as it would with one.
	if s.o.Orchestrator == nil {
		return eval.Scorecard{}, derrors.Unavailablef("no workflow orchestrator is configured, so scoring passes cannot be started")
	}
	pass := eval.NewID("score")
	sc, err = records.UpdateScorecard(ctx, s.o.Store, p.Workspace, id, func(x *eval.Scorecard) error {
		if x.ScoringInFlight != "" {
			return derrors.Conflictf("scorecard %s has a scoring pass in flight (%s); wait for it to finish", id, x.ScoringInFlight)
		}
		if x.Status != eval.ScorecardSucceeded {
			return derrors.Conflictf("scorecard %s is %s; only a succeeded batch can be scored", id, x.Status)
		}
		x.ScoringInFlight = pass
		x.UpdatedAt = s.o.Now().UTC()
		return nil
	})
	if err != nil {
		return eval.Scorecard{}, err
	}
	err = s.o.Orchestrator.StartScore(ctx, flows.ScoreInput{
		Workspace: sc.Tenant, ScorecardID: sc.ID, Pass: pass, Judges: uses, CreatedBy: p.Subject, CausedBy: p.Agent.CausedBy(), Concurrency: scoreConcurrency,
	})
	if err != nil {
		// Released, so that the next pass is not refused as one in flight.
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), failMarkTimeout)
		defer cancel()
		_, rerr := records.UpdateScorecard(wctx, s.o.Store, p.Workspace, id, func(x *eval.Scorecard) error {
			if x.ScoringInFlight == pass {
				x.ScoringInFlight = ""
			}
			return nil
		})
		if rerr != nil {
			s.o.Logger.LogAttrs(ctx, slog.LevelError, "a scoring pass that could not be started still holds its batch: releasing it did not work",
				reqid.Attr(ctx), slog.String("workspace", p.Workspace), slog.String("scorecard", id), slog.String("pass", pass),
				slog.String("start_error", err.Error()), slog.String("error", rerr.Error()))
			return eval.Scorecard{}, errors.Join(derrors.Unavailablef("the scoring pass %s could not be started, and scorecard %s could not be released from it, so a new pass is refused as one in flight; quote the requestId to an operator", pass, id),
				err, fmt.Errorf("releasing scorecard %s from pass %s: %w", id, pass, rerr))
		}
		return eval.Scorecard{}, errors.Join(derrors.Unavailablef("the scoring pass could not be started; try again"), err)
	}
	return summaryView(sc), nil
}

// VerifyManifest recomputes, from the batch's exact references, what its
// manifest sealed, and answers per facet: match, drifted, missing or
// unverifiable.
func (s *Service) VerifyManifest(ctx context.Context, p auth.Principal, id string) (manifest.Verification, error) {
	sc, _, err := s.loadFull(ctx, p, id)
	if err != nil {
		return manifest.Verification{}, err
	}
	if sc.Manifest == nil {
		return manifest.Verification{Verified: false, Facets: []manifest.FacetResult{{Facet: "manifest", Status: "unverifiable", Detail: "the batch has no manifest"}}}, nil
	}
	var cur manifest.Input
	if sc.Dataset.ID != eval.DatasetAdhoc && sc.Dataset.ID != eval.IDTraces {
		if d, err := s.o.Registries.Resolve(ctx, p, registry.Dataset, sc.Dataset.ID, sc.Dataset.Version); err == nil {
			cur.Dataset = d.Spec
			want := map[string]bool{}
			for cid := range sc.Manifest.Cases {
				want[cid] = true
			}
			for _, c := range d.Spec.Dataset().Cases {
				if want[c.ID] {
					cur.Cases = append(cur.Cases, c)
				}
			}
		} else if !errors.Is(err, derrors.ErrNotFound) {
			return manifest.Verification{}, err
		}
	} else if sc.Orchestration != nil && sc.Orchestration.AdhocCase != nil {
		cur.Cases = []registry.EvalCase{*sc.Orchestration.AdhocCase}
	}
	if h, err := s.o.Registries.Resolve(ctx, p, registry.Harness, sc.Harness.ID, sc.Harness.Version); err == nil {
		cur.Harness = h.Spec
	} else if !errors.Is(err, derrors.ErrNotFound) {
		return manifest.Verification{}, err
	}
	if sc.Orchestration != nil {
		cur.Graders = sc.Orchestration.Graders
		for _, j := range sc.Orchestration.Judges {
			r, err := s.o.Registries.Resolve(ctx, p, registry.Judge, j.ID, j.Resolved)
			if errors.Is(err, derrors.ErrNotFound) {
				continue
			}
			if err != nil {
				return manifest.Verification{}, err
			}
			cur.Judges = append(cur.Judges, manifest.Judge{Spec: r.Spec, Closure: s.judgeClosure(ctx, p, r.Spec.Judge())})
		}
	}
	policy, _ := scoring.ResolvePolicy(sc.VerdictPolicy, sc.Manifest)
	cur.Policy = policy
	cur.Runtime = sc.Runtime
	cur.HarnessModel = harnessModelClosure(ctx, s.models(), p, cur.Harness)
	return manifest.Verify(*sc.Manifest, cur), nil
}

// anyResult reports whether a canonical child run of the batch has a
// result, reading the children by keyset pages and stopping at the first
// (a batch of 100,000 children costs one page, not the whole batch).
func (s *Service) anyResult(ctx context.Context, ws, scorecardID string) (bool, error) {
	found := false
	err := records.EachChild(ctx, s.o.Store, ws, scorecardID, "", 500, nil, func(r eval.Run) (bool, error) {
		found = r.Result != nil
		return !found, nil
	})
	return found, err
}
