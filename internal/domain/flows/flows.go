// Package flows is the contract of the workflows: their registered names,
// their inputs and results, and what a description of one reads; and the
// names, inputs and results of the activities they call (activities.go).
// Every side imports it: package workflows (the workflow code, which the
// worker runs), package activities (whose input types are aliases of
// these) and package orchestration (which starts, describes and cancels
// workflows for the services), so a service never links the workflow code
// or the activities behind it, and the workflow code never links the
// activities, nor the store and drivers behind them.
//
// It imports no other package of svc. The names are the strings Temporal
// records in every history: they never change (workflows/testdata holds
// histories that replay against them). Moving a type here does not change
// its JSON, so a workflow started before the move decodes the same.
package flows

import "time"

// The registered names of the workflows: the names of their functions
// when they were first registered.
const (
	RunWorkflow       = "RunWorkflow"
	ScorecardWorkflow = "ScorecardWorkflow"
	ScoreWorkflow     = "ScoreWorkflow"
)

// RunInput starts RunWorkflow. Everything the workflow decides on is in
// it, fixed at start, so that a replay decides the same.
type RunInput struct {
	Workspace string `json:"workspace"`
	RunID     string `json:"runId"`
	// WebhookAttempts bounds delivery attempts (SVC_WEBHOOK_ATTEMPTS).
	WebhookAttempts int `json:"webhookAttempts"`
}

// RunOutput is the final status of the run.
type RunOutput struct {
	Status string `json:"status"`
}

// ScorecardInput starts (or continues) ScorecardWorkflow. A batch is a list
// of Total items, item i being case i/Trials of the batch's selection and
// trial i%Trials; Next is the first item not yet started by this chain.
type ScorecardInput struct {
	Workspace   string `json:"workspace"`
	ScorecardID string `json:"scorecardId"`
	Total       int    `json:"total"`
	Trials      int    `json:"trials"`
	Concurrency int    `json:"concurrency"`
	// Judged is set when the batch has judges: each case is judged right
	// after it runs.
	Judged bool `json:"judged"`
	// Next is where a continued run picks up; Started is set once the
	// record is marked running.
	Next    int  `json:"next"`
	Started bool `json:"started"`
	// ItemsPerRun bounds the items one run of the chain starts before it
	// continues as new, so history stays bounded; 0 means the default.
	ItemsPerRun int `json:"itemsPerRun,omitempty"`
}

// ScoreInput starts ScoreWorkflow: a detached scoring pass over a batch's
// finished cases with the given judges.
type ScoreInput struct {
	Workspace   string     `json:"workspace"`
	ScorecardID string     `json:"scorecardId"`
	Pass        string     `json:"pass"` // the pass id (also the workflow id)
	Judges      []JudgeUse `json:"judges"`
	CreatedBy   string     `json:"createdBy,omitempty"`
	// CausedBy is the requesting agent's key (agent:<id>:<conversation>)
	// that scorecard.scored carries; empty when no agent asked.
	CausedBy    string `json:"causedBy,omitempty"`
	Concurrency int    `json:"concurrency"`
	// After is the child run id the next page starts after (continue-as-new).
	After string `json:"after,omitempty"`
	// ItemsPerRun bounds the cases one run of the chain judges.
	ItemsPerRun int `json:"itemsPerRun,omitempty"`
}

// JudgeUse is one judge of a pass, at its exact version.
type JudgeUse struct {
	ID      string `json:"id"`
	Version string `json:"version"`
}

// DriverView is what /ops/driver reads of a workflow.
type DriverView struct {
	WorkflowID       string            `json:"workflowId"`
	RunID            string            `json:"runId"`
	Type             string            `json:"type"`
	Status           string            `json:"status"`
	StartTime        *time.Time        `json:"startTime,omitempty"`
	CloseTime        *time.Time        `json:"closeTime,omitempty"`
	HistoryLength    int64             `json:"historyLength"`
	HistorySizeBytes int64             `json:"historySizeBytes"`
	TaskQueue        string            `json:"taskQueue"`
	Pending          []PendingActivity `json:"pendingActivities"`
	// RunnerJobs are a batch's self-hosted jobs still queued or leased
	// (runtime kind runner), read from the lease queue, not Temporal.
	RunnerJobs []RunnerJob `json:"runnerJobs,omitempty"`
	// Slots are the batch's jobs holding or waiting for a slot of a
	// remote runtime (admission), when it has any.
	Slots []Slot `json:"slots,omitempty"`
}

// RunnerJob is one self-hosted job as /ops/driver shows it: who holds its
// lease and until when, and whether it was told to stop.
type RunnerJob struct {
	ID           string     `json:"id"`
	RunID        string     `json:"runId"`
	Runtime      string     `json:"runtime"`
	State        string     `json:"state"`
	Cancelled    bool       `json:"cancelled,omitempty"`
	Runner       string     `json:"runner,omitempty"`
	LeaseExpires *time.Time `json:"leaseExpires,omitempty"`
	Leases       int        `json:"leases"`
}

// Slot is a job of a batch holding (state held) or waiting for (state
// waiting) one of its runtime's admission slots.
type Slot struct {
	Runtime   string    `json:"runtime"`
	RunID     string    `json:"runId"`
	State     string    `json:"state"`
	MemoryMb  int       `json:"memoryMb,omitempty"`
	Since     time.Time `json:"since"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// PendingActivity is one activity a workflow waits on.
type PendingActivity struct {
	ActivityID    string     `json:"activityId"`
	Type          string     `json:"type"`
	State         string     `json:"state"`
	Attempt       int32      `json:"attempt"`
	MaxAttempts   int32      `json:"maximumAttempts"`
	LastFailure   string     `json:"lastFailure,omitempty"`
	LastHeartbeat *time.Time `json:"lastHeartbeat,omitempty"`
	LastWorker    string     `json:"lastWorker,omitempty"`
}
