package judges

import (
	"context"
	"fmt"
	"time"

	"svc/auth"
	"svc/internal/domain/eval"
	"svc/internal/domain/registry"
	"svc/internal/platform/derrors"
	"svc/internal/service/runs"
)

// Evidence source C of POST /judges/preview and /judges/try (spec §4.4):
// a live one-case dispatch. The named harness runs the one case as a run
// of the caller's (admitted like POST /runs), the request waits for it,
// and the evidence is built from its result as for source A.

// DefaultLiveWait and MaxLiveWait bound how long a request waits for the
// run of a live dispatch (evidence.waitSec) or of a harness judge's try.
const (
	DefaultLiveWait = 2 * time.Minute
	MaxLiveWait     = 10 * time.Minute
)

// livePoll is how often a waiting request reads the run's status.
const livePoll = 200 * time.Millisecond

// liveWait is the wait a request asked for (seconds; 0 = the default).
func liveWait(sec int) (time.Duration, error) {
	switch {
	case sec < 0:
		return 0, derrors.Invalidf("evidence.waitSec must not be negative")
	case sec == 0:
		return DefaultLiveWait, nil
	case time.Duration(sec)*time.Second > MaxLiveWait:
		return 0, derrors.Invalidf("evidence.waitSec %d is over the %d-second limit; use source A with the run's id once it has ended", sec, int(MaxLiveWait.Seconds()))
	}
	return time.Duration(sec) * time.Second, nil
}

// dispatchAndWait submits one run and waits, up to wait, for it to end.
// done is false when the run is still going at the deadline.
func (s *Service) dispatchAndWait(ctx context.Context, p auth.Principal, req runs.SubmitRequest, source string, wait time.Duration) (run eval.Run, done bool, err error) {
	if err := auth.Authorize(p, auth.RunsSubmit); err != nil {
		return eval.Run{}, false, err
	}
	run, err = s.o.Runs.Submit(ctx, p, req, source)
	if err != nil {
		return eval.Run{}, false, err
	}
	return s.waitRun(ctx, p, run, wait)
}

// waitRun polls run until it is terminal or wait has passed. The run's
// status lives in the store, written by whichever worker runs it, so there
// is no signal here to wait on.
func (s *Service) waitRun(ctx context.Context, p auth.Principal, run eval.Run, wait time.Duration) (eval.Run, bool, error) {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	tick := time.NewTicker(livePoll)
	defer tick.Stop()
	for !run.Status.Terminal() {
		select {
		case <-ctx.Done():
			// The request ended first (the client went away): the run goes
			// on, and the caller answers it as not ended yet.
			return run, false, nil
		case <-deadline.C:
			return run, false, nil
		case <-tick.C:
		}
		cur, err := s.o.Runs.Get(ctx, p, run.ID)
		if ctx.Err() != nil {
			return run, false, nil
		}
		if err != nil {
			return run, false, err
		}
		run = cur
	}
	return run, true, nil
}

// liveEvidence dispatches source C's case and reads its evidence.
func (s *Service) liveEvidence(ctx context.Context, p auth.Principal, e EvidenceRequest, source string) (evidenceOf, error) {
	if e.RunID != "" || e.Trace != nil || e.Prompt != "" || e.Output != "" {
		return evidenceOf{}, derrors.Invalidf("evidence of source C takes harness, case and runtime?; runId is source A, trace and prompt source B")
	}
	if e.Harness == nil || e.Harness.ID == "" {
		return evidenceOf{}, derrors.Invalidf("evidence.harness {id, version} is required with source C: the registered harness to run the case with")
	}
	if e.Case == nil {
		return evidenceOf{}, derrors.Invalidf("evidence.case is required with source C: the one case to dispatch (an EvalCase: id, task, ...)")
	}
	h := *e.Harness
	if h.Version == "" {
		h.Version = registry.LatestVersion
	}
	wait, err := liveWait(e.WaitSec)
	if err != nil {
		return evidenceOf{}, err
	}
	run, done, err := s.dispatchAndWait(ctx, p, runs.SubmitRequest{Harness: h, Case: *e.Case, Runtime: e.Runtime}, source, wait)
	if err != nil {
		return evidenceOf{}, err
	}
	if !done {
		return evidenceOf{}, derrors.Conflictf("the live dispatch, run %s, has not ended within %s; preview it with source A and runId %s once it has (GET /runs/%s)", run.ID, wait, run.ID, run.ID)
	}
	if run.Result == nil {
		msg := string(run.Status)
		if run.Error != nil {
			msg += ": " + run.Error.Message
		}
		return evidenceOf{}, derrors.Conflictf("the live dispatch, run %s, left no result to judge (%s)", run.ID, clipMessage(msg))
	}
	return evidenceFromRun(run, e.Slots), nil
}

// clipMessage bounds a run's error quoted in an answer.
func clipMessage(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return fmt.Sprint(s)
}
