package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"svc/internal/domain/eval"
	"svc/internal/domain/flows"
	"svc/internal/domain/trace"
	"svc/internal/integrations/pull"
	"svc/internal/platform/derrors"
	"svc/store"
	"svc/store/records"
)

// Pull ingest (POST /scorecards/ingest/pull, spec §4.5): a pulled batch's
// child run is created queued with its pull.Plan beside it. Its case
// activity (this file) fetches the trace from the platform, or copies it
// from the owned ledger, seals it under the child run's id with source
// the platform's kind (svc for a ledger copy), then grades the sealed copy
// exactly as a pushed trace is graded (gradeImported).

// Retries of a fetch. A platform that fails transiently (no answer, 429,
// 5xx) is asked again pullTries times in the attempt, pullBackoff apart,
// doubling; past that the attempt returns the error for Temporal to retry
// the chunk, and the pullAttempts-th attempt fails the case instead, so a
// platform that is down fails its cases, never the batch.
const (
	pullTries    = 3
	pullBackoff  = 500 * time.Millisecond
	pullAttempts = 3
)

// pulled reports whether run is a pulled batch's child.
func pulled(run eval.Run) bool {
	return run.Origin != nil && run.Origin.Source == pull.OriginSource
}

// traceSources is Activities' TraceSources, or an error saying this
// worker was wired without them.
func (a *Activities) traceSources() (TraceSourceClients, error) {
	if a.TraceSources == nil {
		return nil, errors.New("this worker opens no trace sources: Activities.TraceSources is not wired (internal/app wires the trace service's)")
	}
	return a.TraceSources, nil
}

// gradePulled fetches, seals and grades a pulled batch's child run; see
// the file's comment. A run whose trace is sealed already (an earlier
// attempt sealed it, then failed) is graded from that copy.
func (a *Activities) gradePulled(ctx context.Context, run eval.Run, g grading) (RunStatus, error) {
	if _, err := a.Store.GetTrajectory(ctx, run.Tenant, run.ID); err == nil {
		return a.gradeImported(ctx, run, g)
	} else if !errors.Is(err, derrors.ErrNotFound) {
		return RunStatus{}, err
	}
	fail := func(format string, args ...any) (RunStatus, error) {
		res, runErr := trace.BuildResult(run, trace.Dispatch{Harness: run.Harness}, trace.JobOutput{}, caseErr(format, args...), a.Host)
		res.Provenance.MarkIngested()
		return a.finish(ctx, run, res, runErr)
	}
	row, err := a.Store.GetTracePull(ctx, run.Tenant, run.ID)
	if errors.Is(err, derrors.ErrNotFound) {
		return fail("run %s was made by a pull, but what it pulls is not recorded; pull it again", run.ID)
	}
	if err != nil {
		return RunStatus{}, err
	}
	var plan pull.Plan
	if err := json.Unmarshal(row.Doc, &plan); err != nil {
		return RunStatus{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("the pull of run %s does not decode: %v", run.ID, err), string(flows.PullCorrupt), nil)
	}
	var events []eval.TraceEvent
	if plan.Ledger() {
		var problem string
		events, problem, err = a.ledgerEvents(ctx, run, plan)
		switch {
		case err != nil:
			return RunStatus{}, err
		case problem != "":
			return fail("%s", problem)
		}
	} else {
		tr, err := a.fetchPulled(ctx, run.Tenant, plan)
		// A platform that fails, or a name that does not resolve now, may
		// answer the next attempt.
		transient := pull.Retryable(err) || errors.Is(err, derrors.ErrUnavailable)
		switch {
		case err == nil:
		case transient && attempt(ctx) < pullAttempts:
			return RunStatus{}, err
		case transient, errors.Is(err, derrors.ErrInvalid), errors.Is(err, derrors.ErrNotFound):
			return fail("pulling trace %q: %v", plan.RunID, err)
		default:
			return RunStatus{}, err
		}
		events = tr.Events(plan.Source.Mapping)
		if len(events) == 0 {
			return fail("trace %q of the %s source has no spans", plan.RunID, plan.Source.Kind)
		}
	}
	sealed, digest, err := trace.SealEvents(events)
	if err != nil {
		return fail("trace %q cannot be sealed: %v", plan.RunID, err)
	}
	if _, _, err := a.Store.SealTrajectory(ctx, store.Trajectory{Workspace: run.Tenant, RunID: run.ID, Source: plan.SealSource(),
		EventCount: len(events), Digest: digest, SealedAt: a.now(), Audience: run.Audience(), Events: sealed}); err != nil {
		return RunStatus{}, err
	}
	return a.gradeImported(ctx, run, g)
}

// fetchPulled reads the plan's trace, asking again while the platform
// fails transiently, at most pullTries times.
func (a *Activities) fetchPulled(ctx context.Context, workspace string, plan pull.Plan) (pull.Trace, error) {
	sources, err := a.traceSources()
	if err != nil {
		return pull.Trace{}, err
	}
	c, err := sources.Client(ctx, workspace, plan.Source)
	if err != nil {
		return pull.Trace{}, err
	}
	wait := pullBackoff
	for try := 1; ; try++ {
		tr, err := c.Fetch(ctx, plan.RunID)
		if err == nil || !pull.Retryable(err) || try >= pullTries {
			return tr, err
		}
		select {
		case <-ctx.Done():
			return pull.Trace{}, ctx.Err()
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// attempt is the activity's attempt, from 1; 1 outside an activity.
func attempt(ctx context.Context) int32 {
	if !activity.IsActivity(ctx) {
		return 1
	}
	return activity.GetInfo(ctx).Attempt
}

// ledgerMaxWait bounds how long a pull from the ledger waits for a
// trajectory whose spans keep arriving.
const ledgerMaxWait = time.Hour

// ledgerPoll bounds one wait of a pull for pending spans: it looks again
// at least this often (a sweep may seal them first).
const ledgerPoll = 10 * time.Second

// ledgerEvents reads the trajectory a pull from the ledger copies, with
// the trace's final answer as its last assistant message
// (pull.LedgerEvents): the answer the run recorded when the trajectory is
// a run's, else the one its spans carry. While the trajectory's spans are
// pending (received on the OTLP door, not sealed yet), it waits for them
// and seals them itself once their idle window is over, without waiting
// for the sweep; the batch's timeline says what it waits for and until
// when. problem, when not empty, is why the case fails.
func (a *Activities) ledgerEvents(ctx context.Context, run eval.Run, plan pull.Plan) (events []eval.TraceEvent, problem string, err error) {
	ingest, err := a.traceIngest()
	if err != nil {
		return nil, "", err
	}
	deadline := a.now().Add(ledgerMaxWait)
	noted := false
	for {
		t, err := a.Store.GetTrajectory(ctx, run.Tenant, plan.RunID)
		if err == nil && !eval.VisibleTo(t.Audience, plan.Viewer, plan.ViewerTeams) {
			err = derrors.ErrNotFound
		}
		switch {
		case err == nil:
			if err := json.Unmarshal(t.Events, &events); err != nil {
				return nil, fmt.Sprintf("trajectory %q of the ledger does not decode: %v", plan.RunID, err), nil
			}
			answer, err := a.recordedAnswer(ctx, run.Tenant, plan)
			if err != nil {
				return nil, "", err
			}
			return pull.LedgerEvents(events, answer), "", nil
		case !errors.Is(err, derrors.ErrNotFound):
			return nil, "", err
		}
		pending, err := ingest.Pending(ctx, run.Tenant, plan.Viewer, plan.ViewerTeams, plan.RunID)
		switch {
		case err != nil:
			return nil, "", err
		case pending == nil:
			return nil, fmt.Sprintf("the trace ledger of the workspace has no trajectory %q (GET /trajectories lists them)", plan.RunID), nil
		case !pending.External:
			return nil, fmt.Sprintf("run %s is %s: its trajectory is sealed when it ends; pull it once it has ended", plan.RunID, pending.RunStatus), nil
		}
		sealed, err := ingest.SealIdle(ctx, run.Tenant, plan.RunID)
		if err != nil {
			return nil, "", err
		}
		if sealed {
			continue
		}
		if a.now().After(deadline) {
			return nil, fmt.Sprintf("trajectory %q was still receiving spans %s after this pull started (%d so far, the last at %s); pull it again once its agent has finished",
				plan.RunID, ledgerMaxWait, pending.Spans, pending.LastReceived.Format(time.RFC3339)), nil
		}
		if !noted && run.ParentScorecardID != "" {
			noted = true
			ref := ScorecardRef{Workspace: run.Tenant, ScorecardID: run.ParentScorecardID}
			msg := fmt.Sprintf("case %s waits for trajectory %s: %d span(s) received, not sealed yet; it is sealed at %s, once no span arrived for %s (SVC_INGEST_IDLE_WINDOW), and then pulled",
				run.CaseID, plan.RunID, pending.Spans, pending.SealsAt.Format(time.RFC3339), pending.IdleWindow)
			if err := a.step(ctx, ref, "pull:pending:"+run.ID, "case", "info", msg, run.CaseID); err != nil {
				a.logStepError(ctx, ref, run.ID, err)
			}
		}
		wait := min(max(pending.SealsAt.Sub(a.now()), 50*time.Millisecond), ledgerPoll)
		select {
		case <-ctx.Done():
			return nil, "", ctx.Err()
		case <-time.After(wait):
		}
	}
}

// recordedAnswer is the final answer the run plan.RunID recorded, when the
// ledger's trajectory is a run's that plan's viewer may see: a process
// harness prints it on stdout, which its trajectory does not hold.
func (a *Activities) recordedAnswer(ctx context.Context, workspace string, plan pull.Plan) (string, error) {
	row, err := a.Store.GetRun(ctx, workspace, plan.RunID)
	switch {
	case errors.Is(err, derrors.ErrNotFound):
		return "", nil
	case err != nil:
		return "", err
	case !eval.VisibleTo(row.Audience, plan.Viewer, plan.ViewerTeams):
		return "", nil
	}
	src, err := records.FromRow(row)
	if err != nil {
		return "", err
	}
	if src.Result == nil || src.Result.Evidence == nil {
		return "", nil
	}
	return src.Result.Evidence.FinalAnswer, nil
}

// traceIngest is Activities' TraceIngest, or an error saying this worker
// was wired without it.
func (a *Activities) traceIngest() (TraceSealer, error) {
	if a.TraceIngest == nil {
		return nil, errors.New("this worker seals no trajectories: Activities.TraceIngest is not wired (internal/app wires the trace service)")
	}
	return a.TraceIngest, nil
}
