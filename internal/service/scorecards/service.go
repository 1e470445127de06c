// Package scorecards is the service behind the batch routes (spec §4.5 to
// §4.7): submitting scorecards and experiments (selection, manifest seal,
// stamped policy, the durable workflow), reading them (summaries, the
// per-case table rebuilt from the child runs), cancel, detached re-scoring,
// manifest verification and the driver-ops view of their workflows.
package scorecards

import (
	"context"
	"log/slog"
	"time"

	"svc/internal/domain/flows"
	"svc/internal/domain/scorecardwire"
	"svc/internal/platform/reqid"
	"svc/internal/service/models"
	"svc/internal/service/registries"
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

// Store is what the scorecards service uses of the store: batches and
// their analyses, the runs of their cases, trajectories, the scheduler's
// slots, runner jobs (a cancel releases them), the trace door's spans and
// sources (ingest), team membership (audiences), written in transactions (Transact, and TransactKeyed
// for writes of one keyed row).
type Store interface {
	store.Scorecards
	store.Analyses
	store.Runs
	store.Trajectories
	store.Slots
	store.RunnerJobs
	store.TraceIngest
	store.TraceSources
	store.Identity
	Transact(ctx context.Context, fn func(tx store.Tx) error) error
}

// Options are the dependencies of a Service.
type Options struct {
	Store      Store
	Registries *registries.Service
	// Models resolves the model bindings a harness or judge calls (the
	// model-key rule, the manifest's model closures).
	Models *models.Service
	// Orchestrator is nil when no Temporal is configured: submits answer
	// 503 and the driver-ops routes 404.
	Orchestrator Orchestrator
	// TenantRuns caps a workspace's runs per rolling quota.BudgetWindow,
	// a batch's case-trials counted at its submit; 0 or less is unlimited.
	TenantRuns int
	// QueueMax bounds a workspace's waiting runs and case-trials
	// (SVC_SCHEDULER_QUEUE_MAX); 0 or less is unbounded.
	QueueMax int
	Now      func() time.Time
	// Logger records the writes that fail after the client's answer is
	// decided (a step, a release), with the request id; slog.Default()
	// when nil.
	Logger *slog.Logger
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
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Service{o: o, details: newDetailCache()}
}

// Limits of a submit (the maxima are scorecardwire's).
const (
	DefaultConcurrency = 4
	MaxConcurrency     = scorecardwire.MaxConcurrency
	MaxTrials          = scorecardwire.MaxTrials
	MaxJudges          = scorecardwire.MaxJudges
)

// appendSteps appends steps, best effort: a step is the batch's side
// record, written after the write that matters succeeded, so a failure is
// logged with the request id rather than returned.
func (s *Service) appendSteps(ctx context.Context, steps []store.ScorecardStep) {
	if len(steps) == 0 {
		return
	}
	if err := s.o.Store.AppendScorecardSteps(ctx, steps); err != nil {
		s.o.Logger.LogAttrs(ctx, slog.LevelWarn, "appending scorecard steps",
			reqid.Attr(ctx), slog.String("workspace", steps[0].Workspace), slog.String("scorecard", steps[0].ScorecardID),
			slog.String("step", steps[0].Key), slog.Int("steps", len(steps)), slog.String("error", err.Error()))
	}
}

// models is the model-binding service the submit and the re-score consult.
func (s *Service) models() *models.Service { return s.o.Models }
