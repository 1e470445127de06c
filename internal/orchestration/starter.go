package orchestration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"svc/internal/domain/flows"
	"svc/internal/platform/derrors"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
)

// Starter starts, describes and cancels the workflows of package workflows
// on a task queue, by their registered names (package flows), so that the
// services it serves never link the workflow code. It implements
// runs.Starter and scorecards.Orchestrator.
type Starter struct {
	Client    client.Client
	TaskQueue string
	// WebhookAttempts is passed to every RunWorkflow (SVC_WEBHOOK_ATTEMPTS).
	WebhookAttempts int
}

// StartRun starts RunWorkflow with workflow id = run id. The id is never
// reused, so a start retried after a timeout cannot run the case twice: a
// start that finds the workflow already there is a success.
func (s *Starter) StartRun(ctx context.Context, workspace, runID string) error {
	_, err := s.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                    runID,
		TaskQueue:             s.TaskQueue,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
	}, flows.RunWorkflow, flows.RunInput{Workspace: workspace, RunID: runID, WebhookAttempts: s.WebhookAttempts})
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("starting the workflow of run %s: %w", runID, err)
	}
	return nil
}

// StartScorecard starts ScorecardWorkflow with workflow id = scorecard id.
func (s *Starter) StartScorecard(ctx context.Context, in flows.ScorecardInput) error {
	return s.start(ctx, in.ScorecardID, flows.ScorecardWorkflow, in)
}

// StartScore starts ScoreWorkflow with workflow id = the pass id.
func (s *Starter) StartScore(ctx context.Context, in flows.ScoreInput) error {
	return s.start(ctx, in.Pass, flows.ScoreWorkflow, in)
}

func (s *Starter) start(ctx context.Context, id, workflow string, in any) error {
	_, err := s.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: id, TaskQueue: s.TaskQueue, WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
	}, workflow, in)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("starting workflow %s: %w", id, err)
	}
	return nil
}

// Cancel asks the workflow id to stop (cooperative: its activities see
// their context cancelled and the driver kills their jobs). An unknown or
// finished workflow is not an error.
func (s *Starter) Cancel(ctx context.Context, id string) error {
	err := s.Client.CancelWorkflow(ctx, id, "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return nil
	}
	return err
}

// Describe reads a workflow's state, history pressure and pending
// activities directly from Temporal. An unknown workflow id is
// derrors.ErrNotFound.
func (s *Starter) Describe(ctx context.Context, id string) (flows.DriverView, error) {
	d, err := s.Client.DescribeWorkflowExecution(ctx, id, "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return flows.DriverView{}, derrors.NotFoundf("no workflow %s", id)
	}
	if err != nil {
		return flows.DriverView{}, err
	}
	info := d.GetWorkflowExecutionInfo()
	v := flows.DriverView{
		WorkflowID: info.GetExecution().GetWorkflowId(), RunID: info.GetExecution().GetRunId(),
		Type: info.GetType().GetName(), Status: strings.TrimPrefix(info.GetStatus().String(), "WORKFLOW_EXECUTION_STATUS_"),
		HistoryLength: info.GetHistoryLength(), HistorySizeBytes: info.GetHistorySizeBytes(), TaskQueue: info.GetTaskQueue(),
		Pending: []flows.PendingActivity{},
	}
	if t := info.GetStartTime(); t != nil {
		st := t.AsTime()
		v.StartTime = &st
	}
	if t := info.GetCloseTime(); t != nil {
		ct := t.AsTime()
		v.CloseTime = &ct
	}
	for _, p := range d.GetPendingActivities() {
		pa := flows.PendingActivity{
			ActivityID: p.GetActivityId(), Type: p.GetActivityType().GetName(),
			State:   strings.TrimPrefix(p.GetState().String(), "PENDING_ACTIVITY_STATE_"),
			Attempt: p.GetAttempt(), MaxAttempts: p.GetMaximumAttempts(), LastWorker: p.GetLastWorkerIdentity(),
		}
		if f := p.GetLastFailure(); f != nil {
			pa.LastFailure = f.GetMessage()
		}
		if t := p.GetLastHeartbeatTime(); t != nil {
			ht := t.AsTime()
			pa.LastHeartbeat = &ht
		}
		v.Pending = append(v.Pending, pa)
	}
	return v, nil
}
