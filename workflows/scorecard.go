package workflows

import (
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"svc/internal/domain/eval"
	"svc/internal/domain/flows"
)

// DefaultItemsPerRun keeps one run's history to a few thousand events: each
// item costs about 6 to 12 events (one or two activities).
const DefaultItemsPerRun = 250

// casePage is how many case ids one CasePage activity returns.
const casePage = 500

// ScorecardWorkflow runs a batch (spec §2.3, ARCHITECTURE's data flow): at
// most Concurrency case activities in flight, each running its case through
// the driver and writing its child run itself; judges right after; then the
// aggregate. A case failure fails the case, never the batch; only an
// infrastructure error (an activity that exhausted its retries) fails the
// batch, tagged with its phase, and what was done is kept. Cancelling the
// workflow stops it: no further case starts, running jobs are killed
// through the driver, and the record ends cancelled.
func ScorecardWorkflow(ctx workflow.Context, in flows.ScorecardInput) error {
	ref := flows.ScorecardRef{Workspace: in.Workspace, ScorecardID: in.ScorecardID}
	short := workflow.WithActivityOptions(ctx, batchRecordOptions)
	if !in.Started {
		if err := workflow.ExecuteActivity(short, flows.ActivityStartScorecard, ref).Get(ctx, nil); err != nil {
			return finishScorecard(ctx, ref, flows.FinishInput{Phase: eval.PhaseDispatch, Message: failureMessage(err)})
		}
		in.Started = true
	}
	chunking := workflow.GetVersion(ctx, caseChunksChange, workflow.DefaultVersion, guidedChunks)
	chunked := chunking >= fixedChunks
	per := in.ItemsPerRun
	if per <= 0 {
		per = DefaultItemsPerRun
		if chunked {
			per = chunkedItemsPerRun(in.Concurrency, chunking)
		}
	}
	end := min(in.Total, in.Next+per)

	caseCtx := workflow.WithActivityOptions(ctx, dispatchOptions)

	var failure *flows.FinishInput
	window := in.Concurrency
	if window < 1 {
		window = 1
	}
	if chunked {
		next, failure := runChunks(ctx, caseCtx, short, in, ref, end, chunking)
		return closeRun(ctx, ref, in, next, failure)
	}
	inFlight := 0
	sel := workflow.NewSelector(ctx)
	pages := &casePager{ref: ref}

	next := in.Next
	for next < end || inFlight > 0 {
		// Start items while the window has room and nothing has failed
		// or been cancelled.
		for next < end && inFlight < window && failure == nil && ctx.Err() == nil {
			caseIdx, trial := next/in.Trials, next%in.Trials
			id, pf := pages.id(ctx, short, caseIdx)
			if pf != nil {
				failure = pf
				break
			}
			item := flows.CaseItem{ScorecardRef: ref, CaseID: id, Trial: trial}
			f := startItem(caseCtx, item, in.Judged)
			inFlight++
			next++
			sel.AddFuture(f, func(f workflow.Future) {
				inFlight--
				if err := f.Get(ctx, nil); err != nil && failure == nil && !isCancel(err) {
					failure = &flows.FinishInput{Phase: failedPhase(err), Message: "case " + item.CaseID + ": " + failureMessage(err)}
					if pf := persistFailure(err); pf != nil {
						failure = pf
					}
				}
			})
		}
		if inFlight == 0 {
			break
		}
		sel.Select(ctx)
	}

	return closeRun(ctx, ref, in, next, failure)
}

// closeRun ends one run of the chain: the aggregate when the batch is
// over (cancelled, failed or done), else a continue-as-new from next.
func closeRun(ctx workflow.Context, ref flows.ScorecardRef, in flows.ScorecardInput, next int, failure *flows.FinishInput) error {
	switch {
	case ctx.Err() != nil:
		return finishScorecard(ctx, ref, flows.FinishInput{Cancelled: true})
	case failure != nil:
		return finishScorecard(ctx, ref, *failure)
	case next < in.Total:
		// History stays bounded: the chain continues with what is left.
		in.Next = next
		return workflow.NewContinueAsNewError(ctx, ScorecardWorkflow, in)
	}
	return finishScorecard(ctx, ref, flows.FinishInput{})
}

// caseChunksChange marks the histories whose cases run in chunks (one
// RunCases activity for several items) rather than one RunCase activity
// per item; histories recorded before it replay the old way. Its versions:
// fixedChunks, chunks of fixedChunkRounds rounds; guidedChunks, chunks
// sized by guided self-scheduling (guidedChunk).
const (
	caseChunksChange = "case-chunks"
	fixedChunks      = workflow.Version(1)
	guidedChunks     = workflow.Version(2)
)

// Chunking: the window of Concurrency items is split into lanes of at
// most maxLaneWidth items each; a lane runs one chunk at a time, of up to
// chunkRounds times its width, so that an activity carries several rounds
// of cases and a lane idles only at the end of its chunk, while its slots
// wait for the chunk's slowest case.
const (
	maxLaneWidth     = 16
	fixedChunkRounds = 4
	chunkRounds      = 16
	chunksPerChain   = 300 // chunks one run of the chain starts before continuing as new
)

// laneWidths splits a window of concurrency items into lanes: at least
// two when the window allows (one lane's tail overlaps another's work),
// each at most maxLaneWidth wide, together exactly the window.
func laneWidths(window int) []int {
	window = max(1, window)
	n := max((window+maxLaneWidth-1)/maxLaneWidth, min(2, window))
	out := make([]int, n)
	for i := range out {
		out[i] = window / n
		if i < window%n {
			out[i]++
		}
	}
	return out
}

// chunkedItemsPerRun is how many items one run of a chunked chain starts:
// chunksPerChain chunks of the window's largest mean chunk size.
func chunkedItemsPerRun(window int, v workflow.Version) int {
	lanes := laneWidths(window)
	rounds := chunkRounds
	if v < guidedChunks {
		rounds = fixedChunkRounds
	}
	return chunksPerChain * rounds * max(1, window) / len(lanes)
}

// guidedChunk is the size of the next chunk of a lane of width w when
// left items are not yet started by any of lanes lanes: guided
// self-scheduling (Polychronopoulos and Kuck, 1987), an even share of
// what is left, rounded up to whole rounds of the lane, at most
// chunkRounds rounds and at least one. Long chunks early make few chunk
// ends, where a lane's slots wait for its slowest case; shorter ones
// towards the end of the batch have the lanes finish together.
func guidedChunk(left, lanes, w int) int {
	share := (left + lanes - 1) / lanes
	rounds := min(chunkRounds, max(1, (share+w-1)/w))
	return min(left, rounds*w)
}

// runChunks starts the items from in.Next to end in chunks, one lane at a
// time per free lane, until all are done, one failed for good, or the
// workflow is cancelled. It returns the first item not started and the
// failure, if any.
func runChunks(ctx, caseCtx, short workflow.Context, in flows.ScorecardInput, ref flows.ScorecardRef, end int, v workflow.Version) (int, *flows.FinishInput) {
	lanes := laneWidths(in.Concurrency)
	free := make([]int, 0, len(lanes))
	for i := len(lanes) - 1; i >= 0; i-- {
		free = append(free, i)
	}
	var failure *flows.FinishInput
	sel := workflow.NewSelector(ctx)
	pages := &casePager{ref: ref}
	caseID := func(caseIdx int) (string, bool) {
		id, f := pages.id(ctx, short, caseIdx)
		if f != nil {
			failure = f
			return "", false
		}
		return id, true
	}
	next, inFlight := in.Next, 0
	// Chunks whose worker died under them, to run again; lost counts them
	// since a chunk last succeeded.
	var again [][]flows.ChunkItem
	lost := 0
	for next < end || len(again) > 0 || inFlight > 0 {
		for (next < end || len(again) > 0) && len(free) > 0 && failure == nil && ctx.Err() == nil {
			lane := free[len(free)-1]
			chunk := flows.CaseChunk{ScorecardRef: ref, Concurrency: lanes[lane], Judged: in.Judged}
			n := min(end-next, fixedChunkRounds*lanes[lane])
			if v >= guidedChunks {
				n = guidedChunk(end-next, len(lanes), lanes[lane])
			}
			fresh := true
			if len(again) > 0 {
				chunk.Items, again, n, fresh = again[0], again[1:], 0, false
			}
			for len(chunk.Items) < n {
				i := next + len(chunk.Items)
				id, ok := caseID(i / in.Trials)
				if !ok {
					break
				}
				chunk.Items = append(chunk.Items, flows.ChunkItem{CaseID: id, Trial: i % in.Trials})
			}
			if failure != nil {
				break
			}
			free = free[:len(free)-1]
			first := chunk.Items[0].CaseID
			f := workflow.ExecuteActivity(caseCtx, flows.ActivityRunCases, chunk)
			inFlight++
			if fresh {
				next += len(chunk.Items)
			}
			sel.AddFuture(f, func(f workflow.Future) {
				inFlight--
				free = append(free, lane)
				err := f.Get(ctx, nil)
				if err == nil {
					lost = 0
				}
				if err != nil && v >= guidedChunks && workerGone(err) && lost < maxChunksLost && ctx.Err() == nil {
					// Its attempts ran out to worker deaths (a restart a
					// minute for a long chunk), not to its cases: again.
					lost++
					again = append(again, chunk.Items)
					return
				}
				if err != nil && failure == nil && !isCancel(err) {
					failure = &flows.FinishInput{Phase: failedPhase(err), Message: fmt.Sprintf("cases from %s (%d items): %s", first, len(chunk.Items), failureMessage(err))}
					if pf := persistFailure(err); pf != nil {
						failure = pf
					}
				}
			})
		}
		if inFlight == 0 {
			break
		}
		sel.Select(ctx)
	}
	return next, failure
}

// maxChunksLost is how many chunks in a row, with none succeeding in
// between, may exhaust their attempts to worker deaths and be run again
// before the batch fails: a harness that kills its worker every time
// fails the batch rather than loop.
const maxChunksLost = 8

// workerGone reports whether a chunk's last attempt ended because its
// worker stopped, died (reclaimed at restart) or stopped heartbeating.
func workerGone(err error) bool {
	if errorType(err) == flows.WorkerGone {
		return true
	}
	var te *temporal.TimeoutError
	return errors.As(err, &te) && te.TimeoutType() == enumspb.TIMEOUT_TYPE_HEARTBEAT
}

// persistFailure is the batch's failure when a case activity's last
// attempt ran its case but could not record the result (phase persist,
// spec §2.3), saying so in the activity's words; nil for any other error.
func persistFailure(err error) *flows.FinishInput {
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) || flows.ErrorType(ae.Type()) != flows.PersistPhase {
		return nil
	}
	return &flows.FinishInput{Phase: eval.PhasePersist, Message: ae.Message()}
}

// failedPhase is the phase a case activity's failure fails the batch in:
// judges when judging the case failed (an error of type
// flows.JudgesPhase, which startItem and RunCases give it), else dispatch.
func failedPhase(err error) string {
	if errorType(err) == flows.JudgesPhase {
		return eval.PhaseJudges
	}
	return eval.PhaseDispatch
}

// startItem runs one (case, trial): the case activity, then, when the batch
// has judges, the judge activity. Its future settles when both are done.
func startItem(ctx workflow.Context, item flows.CaseItem, judged bool) workflow.Future {
	f, set := workflow.NewFuture(ctx)
	workflow.Go(ctx, func(gctx workflow.Context) {
		var st flows.RunStatus
		if err := workflow.ExecuteActivity(gctx, flows.ActivityRunCase, item).Get(gctx, &st); err != nil {
			set.Set(nil, err)
			return
		}
		if judged && st.Status == string(eval.StatusSucceeded) {
			if err := workflow.ExecuteActivity(gctx, flows.ActivityJudgeCase, flows.JudgeInput{CaseItem: item}).Get(gctx, nil); err != nil {
				if isCancel(err) {
					set.Set(nil, err)
					return
				}
				set.Set(nil, temporal.NewApplicationErrorWithCause("judging failed", string(flows.JudgesPhase), err))
				return
			}
		}
		set.Set(nil, nil)
	})
	return f
}

// casePager reads a batch's case ids a page at a time, as items need them.
type casePager struct {
	ref     flows.ScorecardRef
	ids     []string // case ids of the current page
	idsFrom int      // case index of ids[0]; meaningless while ids is nil
}

// id is the case id at caseIdx, reading its page when it is not the
// current one; a page that cannot be read is the batch's failure.
func (p *casePager) id(ctx, short workflow.Context, caseIdx int) (string, *flows.FinishInput) {
	if p.ids == nil || caseIdx < p.idsFrom || caseIdx >= p.idsFrom+len(p.ids) {
		var page []string
		err := workflow.ExecuteActivity(short, flows.ActivityCasePage, flows.CasePageInput{ScorecardRef: p.ref, From: caseIdx, Limit: casePage}).Get(ctx, &page)
		if err != nil || len(page) == 0 {
			msg := "the batch's case selection could not be read"
			if err != nil {
				msg += ": " + failureMessage(err)
			}
			return "", &flows.FinishInput{Phase: eval.PhaseDispatch, Message: msg}
		}
		p.ids, p.idsFrom = page, caseIdx
	}
	return p.ids[caseIdx-p.idsFrom], nil
}

func isCancel(err error) bool {
	var c *temporal.CanceledError
	return errors.As(err, &c)
}

// finishScorecard runs the aggregate, through a context the cancel does
// not reach, so that a cancelled batch is still recorded and notified.
func finishScorecard(ctx workflow.Context, ref flows.ScorecardRef, in flows.FinishInput) error {
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	dctx = workflow.WithActivityOptions(dctx, finishOptions)
	in.ScorecardRef = ref
	return workflow.ExecuteActivity(dctx, flows.ActivityFinishScorecard, in).Get(dctx, nil)
}
