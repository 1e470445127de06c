// Package scorecards is the service behind the batch routes (spec §4.5 to
// §4.7): submitting scorecards and experiments (selection, manifest seal,
// stamped policy, the durable workflow), reading them (summaries, the
// per-case table rebuilt from the child runs), cancel, detached re-scoring,
// manifest verification and the driver-ops view of their workflows.
package scorecards

import (
	"context"
	"time"

	"svc/flows"
	"svc/registry/service"
	"svc/store"
)

// Orchestrator starts, cancels and describes the batch workflows;
// *orchestration.Starter implements it. Describe answers derrors.ErrNotFound
// for a workflow the orchestrator does not know.
type Orchestrator interface {
	StartScorecard(ctx context.Context, in flows.ScorecardInput) error
	StartScore(ctx context.Context, in flows.ScoreInput) error
	Cancel(ctx context.Context, workflowID string) error
	Describe(ctx context.Context, workflowID string) (flows.DriverView, error)
}

// Options are the dependencies of a Service.
type Options struct {
	Store      store.Store
	Registries *service.Service
	// Orchestrator is nil when no Temporal is configured: submits answer
	// 503 and the driver-ops routes 404.
	Orchestrator Orchestrator
	Now          func() time.Time
}

// Service implements the batch routes.
type Service struct {
	o Options
	// details keeps the detail read of a polled batch from reading and
	// decoding its record and every child run again on each poll.
	details *detailCache
}

// New returns a Service.
func New(o Options) *Service {
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Service{o: o, details: newDetailCache()}
}

// Limits of a submit.
const (
	DefaultConcurrency = 4
	MaxConcurrency     = 64
	MaxTrials          = 100
	MaxJudges          = 20
)
