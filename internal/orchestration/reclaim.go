package orchestration

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"svc/internal/domain/flows"
)

// reclaimTimeout bounds a whole sweep of ReclaimDeadAttempts, and
// reclaimCallTimeout each of its calls to Temporal: a frontend that does
// not answer must not hold the worker's start. What a sweep cut short
// leaves is reclaimed by its heartbeat timeout, as always.
const (
	reclaimTimeout     = 2 * time.Minute
	reclaimCallTimeout = 10 * time.Second
)

// ReclaimDeadAttempts fails, right away, the activity attempts that a
// worker of this host left behind when its process died (a SIGKILLed or
// crashed svc), so that Temporal retries them now instead of when their
// heartbeat times out. An attempt is reclaimed only when its last worker's
// identity (the SDK's "pid@host@") names this host and a pid that is
// neither this process nor alive; any other attempt is left to its
// heartbeat timeout. It returns how many attempts it failed. Errors are
// logged, never fatal: the heartbeat timeout remains the backstop. The
// sweep ends within reclaimTimeout, each call within reclaimCallTimeout.
func ReclaimDeadAttempts(ctx context.Context, c client.Client, namespace, taskQueue string, log *slog.Logger) int {
	ctx, cancel := context.WithTimeout(ctx, reclaimTimeout)
	defer cancel()
	call := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, reclaimCallTimeout) }
	host, err := os.Hostname()
	if err != nil {
		return 0
	}
	self := os.Getpid()
	reclaimed := 0
	var token []byte
	for {
		cctx, ccancel := call()
		resp, err := c.WorkflowService().ListOpenWorkflowExecutions(cctx, &workflowservice.ListOpenWorkflowExecutionsRequest{
			Namespace: namespace, MaximumPageSize: 1000, NextPageToken: token,
		})
		ccancel()
		if err != nil {
			log.Warn("reclaiming the attempts of a dead worker: listing open workflows", "err", err)
			return reclaimed
		}
		for _, e := range resp.Executions {
			if e.GetTaskQueue() != "" && e.GetTaskQueue() != taskQueue {
				continue
			}
			wf, run := e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId()
			cctx, ccancel := call()
			d, err := c.DescribeWorkflowExecution(cctx, wf, run)
			ccancel()
			if ctx.Err() != nil {
				log.Warn("reclaiming the attempts of a dead worker: the sweep ran out of time; heartbeat timeouts reclaim the rest", "reclaimed", reclaimed, "timeout", reclaimTimeout)
				return reclaimed
			}
			if err != nil {
				continue
			}
			for _, pa := range d.GetPendingActivities() {
				if pa.GetState() != enumspb.PENDING_ACTIVITY_STATE_STARTED {
					continue
				}
				pid, ok := deadWorker(pa.GetLastWorkerIdentity(), host, self)
				if !ok {
					continue
				}
				// Retried at once, whatever backoff the attempt count has
				// reached: a long chunk may see several restarts.
				why := temporal.NewApplicationErrorWithOptions(
					fmt.Sprintf("the worker running this attempt (pid %d on %s) is gone; retried at once", pid, host),
					string(flows.WorkerGone), temporal.ApplicationErrorOptions{NextRetryDelay: 10 * time.Millisecond})
				cctx, ccancel := call()
				err := c.CompleteActivityByID(cctx, namespace, wf, run, pa.GetActivityId(), nil, why)
				ccancel()
				if err != nil {
					continue // completed or timed out meanwhile
				}
				reclaimed++
			}
		}
		token = resp.NextPageToken
		if len(token) == 0 {
			break
		}
	}
	if reclaimed > 0 {
		log.Info("reclaimed the activity attempts of a dead worker", "attempts", reclaimed)
	}
	return reclaimed
}

// deadWorker reports the pid of identity when it is a worker of host
// ("pid@host@...") other than self whose process is gone.
func deadWorker(identity, host string, self int) (int, bool) {
	p, rest, ok := strings.Cut(identity, "@")
	if !ok {
		return 0, false
	}
	h, _, ok := strings.Cut(rest, "@")
	if !ok || h != host {
		return 0, false
	}
	pid, err := strconv.Atoi(p)
	if err != nil || pid <= 0 || pid == self {
		return 0, false
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		return 0, false // alive, or not ours to signal: leave it to its timeout
	}
	return pid, true
}
