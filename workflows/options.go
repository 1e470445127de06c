package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"svc/internal/domain/flows"
)

// The activity options of the workflows, named once (as Temporal's batcher
// names batchActivityOptions) so that two workflows calling the same kind
// of activity cannot drift apart.

// Timeouts of the run activities. The case's own deadline is enforced by
// the driver inside the activity; the heartbeat timeout is what notices a
// worker that died mid-case, so the next attempt starts soon after a
// restart.
const (
	dispatchStartToClose = 7*24*time.Hour + 10*time.Minute // above the longest case timeout a case may declare
	dispatchHeartbeat    = 5 * time.Second
	shortActivity        = time.Minute
	webhookTimeout       = 30 * time.Second
)

// caseRetry retries an activity that runs or judges cases: backing off
// to 30 s, five attempts.
var caseRetry = &temporal.RetryPolicy{
	InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second, MaximumAttempts: 5,
}

// dispatchOptions run a case (DispatchRun, RunCase, RunCases): as long as
// the longest case, a heartbeat to notice a dead worker, and a cancel
// that waits for the activity to kill the job and record it.
var dispatchOptions = workflow.ActivityOptions{
	StartToCloseTimeout: dispatchStartToClose,
	HeartbeatTimeout:    dispatchHeartbeat,
	WaitForCancellation: true,
	RetryPolicy:         caseRetry,
}

// judgeOptions run the judges of a case in a detached scoring pass.
var judgeOptions = workflow.ActivityOptions{
	StartToCloseTimeout: time.Hour,
	HeartbeatTimeout:    dispatchHeartbeat,
	WaitForCancellation: true,
	RetryPolicy:         caseRetry,
}

// batchRecordOptions read or mark a batch's record (StartScorecard,
// CasePage, ChildRunPage): short, a bounded number of attempts.
var batchRecordOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 2 * time.Minute,
	RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 30 * time.Second, MaximumAttempts: 10},
}

// runRecordOptions record a single run's end (FailRun, FinalizeRun):
// short, retried until they land.
var runRecordOptions = workflow.ActivityOptions{
	StartToCloseTimeout: shortActivity,
	RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 30 * time.Second},
}

// finishOptions aggregate a batch or a scoring pass (FinishScorecard,
// FinishScore), reading every child run, retried until they land.
var finishOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 10 * time.Minute,
	HeartbeatTimeout:    time.Minute,
	RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: time.Minute},
}

// webhookOptions deliver a run's webhook at most attempts times; a
// destination refused for good is not retried.
func webhookOptions(attempts int) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: webhookTimeout,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        5 * time.Minute,
			MaximumAttempts:        int32(attempts),
			NonRetryableErrorTypes: []string{string(flows.WebhookRefused)},
		},
	}
}

// traceSweepOptions run one trace sweep: bounded, retried a few times;
// the next cron run retries anyway.
var traceSweepOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 10 * time.Minute,
	RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 30 * time.Second, MaximumAttempts: 3},
}
