// Package workflows holds Temporal workflow code only: deterministic, no I/O,
// no clocks, no maps iterated for order. Every side effect is an activity in
// package activities, called through a nil *activities.Activities.
// client.go is the exception that proves it: the client-side helpers that
// start these workflows, for the API.
package workflows

import "go.temporal.io/sdk/worker"

// Register adds every workflow of svc to r.
func Register(r worker.WorkflowRegistry) {
	r.RegisterWorkflow(RunWorkflow)
	r.RegisterWorkflow(ScorecardWorkflow)
	r.RegisterWorkflow(ScoreWorkflow)
}
