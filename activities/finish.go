package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"svc/auth"
	"svc/internal/domain/eval"
	"svc/internal/domain/flows"
	"svc/internal/domain/manifest"
	"svc/internal/domain/registry"
	"svc/internal/domain/scoring"
	"svc/internal/domain/trace"
	"svc/internal/platform/derrors"
	"svc/store"
	"svc/store/records"
)

// FinishInput is flows.FinishInput: the workflows' contract (package flows).
type FinishInput = flows.FinishInput

// FinishScoreInput is flows.FinishScoreInput: the workflows' contract (package flows).
type FinishScoreInput = flows.FinishScoreInput

// FinishScorecard ends a batch: it rebuilds the per-case table from the
// child runs, computes the summary, appends scoring revision 1 (for a
// scorecard that finished), stores the revision's analysis, writes the
// terminal status with the final progress and the publication plan, and
// notifies the creator (scorecard_completed or scorecard_failed; a
// cancelled batch notifies no one).
//
// The analysis is stored (offloaded) before the status is written, so a
// batch never reads succeeded with an analysisRef that leads nowhere. An
// offload that still fails after offloadAttempts attempts ends the batch
// failed in phase offload, and a terminal record that cannot be written
// after persistAttempts attempts is written as failed in phase persist
// (spec §2.3): in both the cases' results, summary and progress are kept.
func (a *Activities) FinishScorecard(ctx context.Context, in FinishInput) (err error) {
	defer untilLanded(&err)
	t, err := a.tally(ctx, in.ScorecardRef)
	if err != nil {
		return err
	}
	heartbeat(ctx)
	cur, _, err := records.LoadScorecard(ctx, a.Store, in.Workspace, in.ScorecardID)
	if err != nil {
		return err
	}
	if finishedBefore(cur) {
		// An earlier attempt wrote the status, after it stored the
		// analysis (or ended the batch in phase offload).
		if err := a.freezeAnalysis(ctx, cur, t.rows); err != nil {
			if !lastTry(ctx, offloadAttempts) {
				return err
			}
			a.logger().Error("storing a finished batch's analysis", append(activityAttrs(ctx), "workspace", in.Workspace, "scorecard", in.ScorecardID, "error", err)...)
		}
		return a.announce(ctx, cur)
	}
	now := a.finishTime(ctx, in.ScorecardRef, cur)
	// The revision this finish appends, if any, is stored first.
	var failure *eval.Error
	planned := cur
	planned.Scoring = slices.Clone(cur.Scoring)
	settle(&planned, in, t, now, nil)
	if err := a.freezeAnalysis(ctx, planned, t.rows); err != nil {
		if !lastTry(ctx, offloadAttempts) {
			return fmt.Errorf("offloading the analysis of batch %s: %w", in.ScorecardID, err)
		}
		a.logger().Error("a batch's analysis could not be stored; the batch ends failed in phase offload",
			append(activityAttrs(ctx), "workspace", in.Workspace, "scorecard", in.ScorecardID, "error", err)...)
		failure = &eval.Error{Code: eval.CodeBatchFailed, Phase: eval.PhaseOffload,
			Message: fmt.Sprintf("every case ran, but the batch's analysis (scoring revision 1) could not be stored after %d attempts, "+
				"so no scoring revision was appended; the per-case results and the summary are kept, and the worker's log has the store's error", offloadAttempts)}
	}
	final, err := a.update(ctx, in.ScorecardRef, func(sc *eval.Scorecard) error {
		if finishedBefore(*sc) {
			return errStop
		}
		settle(sc, in, t, now, failure)
		return nil
	})
	switch {
	case errors.Is(err, errStop):
		if final, _, err = records.LoadScorecard(ctx, a.Store, in.Workspace, in.ScorecardID); err != nil {
			return err
		}
	case err != nil:
		if !lastTry(ctx, persistAttempts) {
			return err
		}
		a.logger().Error("a batch's final record could not be written; writing it failed in phase persist",
			append(activityAttrs(ctx), "workspace", in.Workspace, "scorecard", in.ScorecardID, "error", err)...)
		var ferr error
		final, ferr = a.update(ctx, in.ScorecardRef, func(sc *eval.Scorecard) error {
			if finishedBefore(*sc) {
				return errStop
			}
			settle(sc, in, t, now, &eval.Error{Code: eval.CodeBatchFailed, Phase: eval.PhasePersist,
				Message: fmt.Sprintf("every case ran, but the batch's final record could not be written after %d attempts; "+
					"the per-case results are kept in its child runs, and the worker's log has the store's error", persistAttempts)})
			return nil
		})
		switch {
		case errors.Is(ferr, errStop):
			if final, _, err = records.LoadScorecard(ctx, a.Store, in.Workspace, in.ScorecardID); err != nil {
				return err
			}
		case ferr != nil:
			// Not even the failure can be written: retried until it lands.
			return err
		}
	}
	return a.announce(ctx, final)
}

// Attempts of a batch's finish after which an analysis that cannot be
// stored, or a final record that cannot be written, ends the batch failed
// (phase offload, phase persist) rather than being retried for ever. With
// finishOptions' backoff the last one starts about 15 s after the first.
const (
	offloadAttempts = 5
	persistAttempts = 5
)

// untilLanded keeps *errp retryable whatever its kind. The activities that
// write a record's end (FinishScorecard, FinishScore, FailRun, FinalizeRun)
// are retried until they land, and their later attempts have fallbacks
// (phase offload, phase persist): the worker's ActivityErrors interceptor
// would otherwise stop a not-found or an invalid at its first attempt,
// leaving the batch or the run unsettled with nothing said. The message is
// still derrors.Message's, and an application error made on purpose keeps
// its own retry flag.
func untilLanded(errp *error) {
	err := *errp
	var ae *temporal.ApplicationError
	switch {
	case err == nil, errors.As(err, &ae), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return
	}
	*errp = temporal.NewApplicationErrorWithCause(derrors.Message(err), derrors.KindName(err), err)
}

// lastTry reports whether this attempt of the activity is the n-th or a
// later one (always, outside an activity: there is no retry to wait for).
func lastTry(ctx context.Context, n int32) bool {
	return !activity.IsActivity(ctx) || activity.GetInfo(ctx).Attempt >= n
}

// finishedBefore reports whether an earlier finish wrote sc's terminal
// status (a batch stopped through the API is still to be finished).
func finishedBefore(sc eval.Scorecard) bool {
	return eval.ScorecardTerminal(sc.Status) && sc.Status != eval.ScorecardCancelled && sc.Status != eval.ScorecardSuperseded
}

// finishTime is when the batch finishes, to the store's microsecond. A
// retried finish whose earlier attempt stored the analysis but could not
// write the record takes that analysis's time, so the revision it appends
// is the one frozen (its bundle, built again, has the same digest).
func (a *Activities) finishTime(ctx context.Context, ref ScorecardRef, sc eval.Scorecard) time.Time {
	now := a.now().UTC().Truncate(time.Microsecond)
	if len(sc.Scoring) > 0 || !activity.IsActivity(ctx) || activity.GetInfo(ctx).Attempt == 1 {
		return now
	}
	if prior, err := a.Store.GetAnalysis(ctx, ref.Workspace, ref.ScorecardID, 1); err == nil {
		return prior.CreatedAt.UTC()
	}
	return now
}

// settle writes a batch's end into sc: the summary, the children, the
// final progress, the terminal status (with failure, when given, as the
// batch's error and no scoring revision), and the publication plan.
func settle(sc *eval.Scorecard, in FinishInput, t batchTally, now time.Time, failure *eval.Error) {
	sc.Summary = scoring.Summarize(t.rows)
	sc.RunIDs = t.runIDs
	sc.FinishedAt = &now
	// The final counts and pace, so lists show them without counting.
	sc.Progress = records.CountProgress(sc.Progress.Total, t.counts, now)
	switch {
	case sc.Status == eval.ScorecardCancelled || sc.Status == eval.ScorecardSuperseded:
		// Stopped through the API: the status is already written.
	case in.Cancelled:
		sc.Status = eval.ScorecardCancelled
	case in.Phase != "":
		sc.Status = eval.ScorecardFailed
		sc.Error = &eval.Error{Code: eval.CodeBatchFailed, Phase: in.Phase, Message: clip(in.Message, 2000)}
	case t.dispatchFailed != "":
		// Not one case reached its harness (a command that does not
		// exist, a harness that cannot be resolved): the batch
		// measured nothing, and says why.
		sc.Status = eval.ScorecardFailed
		sc.Error = &eval.Error{Code: eval.CodeBatchFailed, Phase: eval.PhaseDispatch,
			Message: clip(fmt.Sprintf("no case could be dispatched (%d of %d case runs): %s", t.counts.Total, sc.Progress.Total, t.dispatchFailed), 2000)}
	case failure != nil:
		sc.Status = eval.ScorecardFailed
		sc.Error = failure
	default:
		sc.Status = eval.ScorecardSucceeded
		if sc.Kind == eval.KindScorecard && len(sc.Scoring) == 0 {
			sc.Scoring = append(sc.Scoring, eval.ScoringRevision{
				Revision: 1, Kind: "initial", Judges: sealedJudges(sc), ScorePlaneDigest: scoring.ScorePlaneDigest(t.rows),
				AnalysisRef: records.AnalysisRef(sc.ID, 1), CreatedAt: now, CreatedBy: sc.CreatedBy,
			})
			sc.AnalysisRef = records.AnalysisRef(sc.ID, 1)
		}
	}
	sc.Publication = &eval.Publication{State: "published", Artifacts: []string{}, Exports: []string{}}
	if sc.AnalysisRef != "" {
		sc.Publication.Artifacts = append(sc.Publication.Artifacts, sc.AnalysisRef)
	}
}

// tally reads the batch's record for its verdict policy (which never
// changes after the submit) and tallies its children under it.
func (a *Activities) tally(ctx context.Context, ref ScorecardRef) (batchTally, error) {
	sc, _, err := records.LoadScorecard(ctx, a.Store, ref.Workspace, ref.ScorecardID)
	if err != nil {
		return batchTally{}, err
	}
	policy, _ := scoring.ResolvePolicy(sc.VerdictPolicy, sc.Manifest)
	return a.tallyChildren(ctx, ref.Workspace, ref.ScorecardID, policy)
}

func sealedJudges(sc *eval.Scorecard) []eval.SealedJudge {
	if sc.Manifest != nil && len(sc.Manifest.Judges) > 0 {
		return sc.Manifest.Judges
	}
	return []eval.SealedJudge{}
}

// FinishScore ends a detached scoring pass: on success it appends a
// scoring revision (initial for a batch that had none, else rescore),
// flips an experiment into a scorecard, refreshes the summary and emits
// scorecard.scored; an aborted pass adds no revision. Either way the batch
// is released for the next pass.
func (a *Activities) FinishScore(ctx context.Context, in FinishScoreInput) (err error) {
	defer untilLanded(&err)
	t, err := a.tally(ctx, in.ScorecardRef)
	if err != nil {
		return err
	}
	// Seal the judges as they resolve now, with the manifest's function
	// (manifest.SealJudge over manifest.JudgeClosure), so a judge that has
	// not changed has the digest its manifest seal has.
	cur, _, err := records.LoadScorecard(ctx, a.Store, in.Workspace, in.ScorecardID)
	if err != nil {
		return err
	}
	who := auth.Principal{Subject: cur.CreatedBy, Workspace: cur.Tenant, Roles: []auth.Role{auth.RoleMember}}
	var modelVersion func(string) (string, error)
	if a.Models != nil {
		modelVersion = func(name string) (string, error) { return a.Models.Version(ctx, who.Workspace, name) }
	}
	resolver := manifest.LiveResolver(modelVersion, func(kind registry.Kind, id, v string) (registry.Resolved, error) {
		return a.Registries.Resolve(ctx, who, kind, id, v)
	})
	var sealed []eval.SealedJudge
	for _, j := range in.Judges {
		sj := eval.SealedJudge{ID: j.ID, Version: j.Version, Digest: manifest.Unresolved}
		if r, err := a.Registries.Resolve(ctx, who, registry.Judge, j.ID, j.Version); err == nil {
			if s, err := manifest.SealJudge(manifest.Judge{Spec: r.Spec, Closure: manifest.JudgeClosure(r.Spec.Judge(), resolver)}); err == nil {
				sj = s
			}
		}
		sealed = append(sealed, sj)
	}
	var revision int
	sc, err := a.update(ctx, in.ScorecardRef, func(sc *eval.Scorecard) error {
		if sc.ScoringInFlight != in.Pass {
			return errStop // settled by an earlier attempt
		}
		sc.ScoringInFlight = ""
		// Judges may have turned verdicts, even in a pass that aborted.
		sc.Progress = records.Recount(sc.Progress, t.counts)
		if in.Aborted {
			revision = 0
			return nil
		}
		sc.Summary = scoring.Summarize(t.rows)
		kind := "rescore"
		if len(sc.Scoring) == 0 {
			kind = "initial"
		}
		revision = len(sc.Scoring) + 1
		sc.Scoring = append(sc.Scoring, eval.ScoringRevision{Revision: revision, Kind: kind, Judges: sealed, JudgeRun: in.Pass,
			ScorePlaneDigest: scoring.ScorePlaneDigest(t.rows), AnalysisRef: records.AnalysisRef(sc.ID, revision), CreatedAt: a.now(), CreatedBy: in.CreatedBy})
		sc.AnalysisRef = records.AnalysisRef(sc.ID, revision)
		sc.Kind = eval.KindScorecard
		return nil
	})
	if errors.Is(err, errStop) {
		// Settled by an earlier attempt. When that attempt's revision is
		// the last and it stopped before its follow-ups (the analysis, the
		// step, scorecard.scored), finish them: each lands once by its key,
		// so the event is emitted exactly once with the revision.
		if !landedLast(sc, in.Pass) {
			return nil
		}
		revision = len(sc.Scoring)
	} else if err != nil {
		return err
	}
	ref := in.ScorecardRef
	if !in.Aborted {
		if err := a.freezeAnalysis(ctx, sc, t.rows); err != nil {
			return err
		}
	}
	if in.Aborted {
		return a.step(ctx, ref, "score:"+in.Pass, "judges", "failed", "scoring pass "+in.Pass+" added no revision: "+in.Message, "")
	}
	if err := a.step(ctx, ref, "score:"+in.Pass, "judges", "succeeded", fmt.Sprintf("scoring revision %d by pass %s", revision, in.Pass), ""); err != nil {
		return err
	}
	data, _ := json.Marshal(map[string]any{"scorecardId": sc.ID, "revision": revision, "pass": in.Pass, "judges": in.Judges})
	_, err = a.Store.AppendEvent(ctx, store.Event{ID: "scorecard.scored:" + in.Pass, Workspace: sc.Tenant, Type: "scorecard.scored",
		Subject: "scorecard:" + sc.ID, Actor: in.CreatedBy, CausedBy: in.CausedBy, Data: data})
	return err
}

// landedLast reports whether sc's last scoring revision is pass's.
func landedLast(sc eval.Scorecard, pass string) bool {
	return len(sc.Scoring) > 0 && sc.Scoring[len(sc.Scoring)-1].JudgeRun == pass
}

// freezeAnalysis stores the bundle of the batch's last revision, once.
func (a *Activities) freezeAnalysis(ctx context.Context, sc eval.Scorecard, rows []eval.CaseRow) error {
	if len(sc.Scoring) == 0 {
		return nil
	}
	rev := sc.Scoring[len(sc.Scoring)-1]
	doc, digest, err := trace.BuildAnalysis(sc, rows, rev)
	if err != nil {
		return err
	}
	_, _, err = a.Store.PutAnalysis(ctx, store.Analysis{Workspace: sc.Tenant, ScorecardID: sc.ID, Revision: rev.Revision,
		Digest: digest, Doc: doc, CreatedAt: rev.CreatedAt})
	return err
}
