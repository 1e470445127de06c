// Package workflows holds Temporal workflow code only: deterministic, no I/O,
// no clocks, no maps iterated for order. Every side effect is an activity in
// package activities, called by its name in package flows
// (flows.ActivityDispatchRun) with the contract's inputs and results
// (flows.RunRef), so the workflows link neither the activities nor the store
// and drivers behind them. The workflows' own names, inputs and results are
// the contract in package flows too; package orchestration starts them by
// those names.
package workflows

import (
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"svc/internal/domain/flows"
)

// Register adds every workflow of svc to r, under its name in package
// flows (the name every recorded history carries).
func Register(r worker.WorkflowRegistry) {
	r.RegisterWorkflowWithOptions(RunWorkflow, workflow.RegisterOptions{Name: flows.RunWorkflow})
	r.RegisterWorkflowWithOptions(ScorecardWorkflow, workflow.RegisterOptions{Name: flows.ScorecardWorkflow})
	r.RegisterWorkflowWithOptions(ScoreWorkflow, workflow.RegisterOptions{Name: flows.ScoreWorkflow})
	r.RegisterWorkflowWithOptions(TraceSweepWorkflow, workflow.RegisterOptions{Name: flows.TraceSweepWorkflow})
	r.RegisterWorkflowWithOptions(SandboxSnapshotWorkflow, workflow.RegisterOptions{Name: flows.SandboxSnapshotWorkflow})
	r.RegisterWorkflowWithOptions(SandboxSessionWorkflow, workflow.RegisterOptions{Name: flows.SandboxSessionWorkflow})
	r.RegisterWorkflowWithOptions(ApprovalWorkflow, workflow.RegisterOptions{Name: flows.ApprovalWorkflow})
}
