package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"svc/activities/judges"
	"svc/auth"
	"svc/internal/domain/eval"
	"svc/internal/domain/judge"
	"svc/internal/domain/registry"
	"svc/internal/platform/derrors"
)

// runJudgeTry runs the code judge of a try run (trigger judge-preview,
// POST /judges/try) instead of a harness: the judge and its input come
// from the try record stored beside the run, it runs on the run's
// placement (the judge's runtime, else its source case's) with its output
// streamed to the run's logs, and its scores (a skip score when the judge
// cannot judge) are the run's result. The run fails only when the try
// cannot run at all (its record gone, its runtime unusable); infrastructure
// errors are returned for Temporal to retry.
func (a *Activities) runJudgeTry(ctx context.Context, run eval.Run) (RunStatus, error) {
	ref := RunRef{Workspace: run.Tenant, RunID: run.ID}
	fail := func(msg string) (RunStatus, error) {
		wctx, cancel := detached(ctx, recordWriteTimeout)
		defer cancel()
		return a.finishOne(wctx, a.now(), run, nil, &eval.Error{Code: eval.CodeDispatch, Message: msg})
	}
	v, err := a.Store.GetVersion(ctx, judge.TryStoreKind, run.Tenant, run.ID, judge.TryVersion)
	if errors.Is(err, derrors.ErrNotFound) {
		return fail("the judge try's record is gone; try the judge again")
	}
	if err != nil {
		return RunStatus{}, err
	}
	var rec judge.TryRecord
	if err := json.Unmarshal(v.Spec, &rec); err != nil {
		return fail("the judge try's record cannot be read: " + derrors.Message(err))
	}
	j, err := rec.Spec()
	if err != nil {
		return fail(derrors.Message(err))
	}
	c := rec.Input.Case
	who := auth.Principal{Subject: run.CreatedBy, Workspace: run.Tenant, Roles: []auth.Role{auth.RoleMember}}
	pl, err := a.place(ctx, run, who, &registry.HarnessSpec{ID: j.ID}, c)
	if isCaseProblem(err) {
		return fail(derrors.Message(err))
	}
	if err != nil {
		return RunStatus{}, err
	}
	logs := &logBuffer{ws: run.Tenant, run: run.ID, now: a.now}
	r := *a.Judges
	r.Driver, r.Images = pl.driver, pl.remote
	r.Log = func(_, stream string, data []byte) { logs.add(stream, data) }
	in := judges.Input{Case: c, Trace: rec.Input.Trace, Snapshot: rec.Input.Snapshot, Evidence: rec.Input.Evidence}
	type outcome struct {
		scores []eval.Score
		err    error
	}
	done := make(chan outcome, 1)
	started := time.Now()
	go func() {
		scores, err := a.runCodeJudge(ctx, r, who, j, in, fmt.Sprintf("%s-a%d", run.ID, run.Attempts), run.ID)
		done <- outcome{scores, err}
	}()
	tick := time.NewTicker(heartbeatEvery)
	defer tick.Stop()
	var o outcome
wait:
	for {
		select {
		case o = <-done:
			break wait
		case <-tick.C:
			heartbeat(ctx)
			a.storeLogs(ctx, ref, logs.take())
		}
	}
	tail := logs.take()
	if o.err != nil {
		a.storeLogs(ctx, ref, tail)
		return RunStatus{}, o.err
	}
	judge := j.ID + "@" + j.Version
	if rec.Ref != "" {
		judge = rec.Ref
	}
	trace := rec.Input.Trace
	if trace == nil {
		trace = []eval.TraceEvent{}
	}
	ms := time.Since(started).Milliseconds()
	result := &eval.CaseResult{
		Harness: judge, CaseID: c.ID, Trace: trace, Snapshot: rec.Input.Snapshot, Evidence: rec.Input.Evidence,
		Scores: o.scores, EvidenceVersion: eval.EvidenceVersion, Pass: passes(o.scores),
		Usage: &eval.Usage{DurationMs: ms},
	}
	wctx, cancel := detached(ctx, recordWriteTimeout)
	defer cancel()
	return a.finishOne(wctx, a.now(), run, result, nil, tail...)
}
