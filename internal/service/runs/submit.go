package runs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"svc/auth"
	"svc/internal/domain/eval"
	"svc/internal/domain/graders"
	"svc/internal/domain/registry"
	"svc/internal/platform/derrors"
	"svc/internal/platform/reqid"
	"svc/internal/service/quota"
	"svc/store"
	"svc/store/records"
)

// SubmitRequest is the body of POST /runs.
type SubmitRequest struct {
	Harness registry.Ref      `json:"harness"`
	Case    registry.EvalCase `json:"case"`
	// Runtime names a registered runtime; it sets case.placement.target.
	Runtime    string `json:"runtime,omitempty"`
	WebhookURL string `json:"webhookUrl,omitempty"`
	// Kind is the run's kind: eval (the default) or agent-conversation, an
	// agent's conversation run, readable only by its member (spec §2.2).
	Kind string `json:"kind,omitempty"`
}

// Validate checks the body's shape; Submit checks what needs the store.
func (r *SubmitRequest) Validate() error {
	if r.Harness.ID == "" {
		return derrors.Invalidf("harness.id is required: the registered harness to run (GET /harnesses lists them)")
	}
	if err := registry.ValidateID(r.Harness.ID); err != nil {
		return fmt.Errorf("harness.id: %w", err)
	}
	if r.Harness.Version == "" {
		return derrors.Invalidf("harness.version is required: an exact version or \"latest\"")
	}
	if err := registry.ValidateVersionSelector(r.Harness.Version); err != nil {
		return fmt.Errorf("harness.version: %w", err)
	}
	if r.Runtime != "" {
		if err := registry.ValidateID(r.Runtime); err != nil {
			return fmt.Errorf("runtime: %w", err)
		}
	}
	switch r.Kind {
	case "", eval.KindEval, eval.KindConversation:
	default:
		return derrors.Invalidf("kind %q: want %s (the default) or %s", r.Kind, eval.KindEval, eval.KindConversation)
	}
	if err := r.Case.Validate(); err != nil {
		return err
	}
	// Every grader is checked in the position it was sent: an unknown
	// kind is refused like a bad parameter, as for a dataset's cases.
	return graders.Check("case.graders", r.Case.Graders)
}

// Submit admits, records and starts one run (spec §3): budget admission
// first (402 and nothing created past SVC_TENANT_RUNS), then the record
// `queued` and the workflow whose id is the run id. A workflow that cannot
// be started fails the record (phase dispatch) rather than leaving it
// queued forever.
func (s *Service) Submit(ctx context.Context, p auth.Principal, req SubmitRequest, source string) (eval.Run, error) {
	if err := req.Validate(); err != nil {
		return eval.Run{}, err
	}
	// The harness must exist now; `latest` stays unresolved until
	// dispatch (spec §9.2), which records the version it ran.
	h, err := s.o.Registries.Resolve(ctx, p, registry.Harness, req.Harness.ID, req.Harness.Version)
	if err != nil {
		return eval.Run{}, err
	}
	if hs := h.Spec.Harness(); hs != nil && hs.Kind == registry.HarnessService {
		return eval.Run{}, derrors.Invalidf("harness %s is a service harness, which needs a topology-capable nomad or k8s runtime; this deployment runs process harnesses only", h.Ref())
	}
	c := req.Case
	var rtSpec *registry.RuntimeSpec // nil: the deployment's local runtime
	if req.Runtime != "" {
		rt, err := s.o.Registries.Resolve(ctx, p, registry.Runtime, req.Runtime, "latest")
		if errors.Is(err, derrors.ErrNotFound) {
			return eval.Run{}, derrors.NotFoundf("runtime %q is not registered in this workspace or among shared ones; register it (POST /runtimes) or omit runtime", req.Runtime)
		}
		if err != nil {
			return eval.Run{}, err
		}
		spec := rt.Spec.Runtime()
		rtSpec = spec
		var hc *registry.HarnessConfig
		if hs := h.Spec.Harness(); hs != nil {
			hc = &hs.HarnessConfig
		}
		if err := spec.CheckDeclared(hc, []registry.EvalCase{c}); err != nil {
			return eval.Run{}, err
		}
		if c.Placement == nil {
			c.Placement = &registry.Placement{}
		}
		c.Placement.Target = req.Runtime
	}
	if hs := h.Spec.Harness(); hs != nil {
		// The model-key rule (spec §7): a managed target needs the key of
		// the binding the harness calls; a self-hosted one ships without.
		if err := s.o.Models.CheckHarness(ctx, p.Workspace, h.Ref(), &hs.HarnessConfig, req.Runtime, rtSpec); err != nil {
			return eval.Run{}, err
		}
	}
	if req.WebhookURL != "" {
		if err := s.o.Guard.CheckURL(ctx, req.WebhookURL); err != nil {
			return eval.Run{}, err
		}
		if s.o.Sealer == nil {
			return eval.Run{}, derrors.Unavailablef("webhooks are signed with a per-workspace secret, which needs SVC_SECRET_KEY; an operator sets it, or submit without webhookUrl and poll GET /runs/:id")
		}
	}

	if s.o.Starter == nil {
		return eval.Run{}, derrors.Unavailablef("no workflow orchestrator is configured, so runs cannot be started; run `svc dev`, or `svc serve` with TEMPORAL_ADDRESS")
	}
	now := s.o.Now().UTC()
	kind := eval.KindEval
	if req.Kind == eval.KindConversation {
		kind = eval.KindConversation
	}
	run := eval.Run{
		ID:         eval.NewID("run"),
		Tenant:     p.Workspace,
		Harness:    req.Harness,
		CaseID:     c.ID,
		Status:     eval.StatusQueued,
		CreatedAt:  now,
		UpdatedAt:  now,
		Kind:       kind,
		Trigger:    eval.TriggerAPI,
		CreatedBy:  p.Subject,
		Origin:     eval.NewOrigin(source, p.Subject, p.Agent, kind == eval.KindConversation),
		Runtime:    req.Runtime,
		WebhookURL: req.WebhookURL,
		Case:       &c,
		// A private team's harness makes a run that team's to read (its
		// answer and trajectory show the harness at work).
		AudienceTeam: h.PrivateTeam,
	}
	row, err := records.Row(run)
	if err != nil {
		return eval.Run{}, err
	}
	return s.admitAndStart(ctx, p, now, run, row, nil)
}

// admitAndStart admits one run against the workspace's budget and queue,
// creates its row (after also, when given, in the same transaction) and
// starts its workflow.
func (s *Service) admitAndStart(ctx context.Context, p auth.Principal, now time.Time, run eval.Run, row store.Run, also func(tx store.Tx) error) (eval.Run, error) {
	err := s.transact(ctx, func(tx store.Tx) error {
		if err := quota.AdmitRuns(ctx, tx, p.Workspace, now, s.o.TenantRuns, 1); err != nil {
			return err
		}
		if err := quota.AdmitQueue(ctx, tx, p.Workspace, s.o.QueueMax, 1); err != nil {
			return err
		}
		if also != nil {
			if err := also(tx); err != nil {
				return err
			}
		}
		_, err := tx.CreateRun(ctx, row)
		return err
	})
	if err != nil {
		return eval.Run{}, err
	}
	if err := s.o.Starter.StartRun(ctx, p.Workspace, run.ID); err != nil {
		return eval.Run{}, s.failStart(ctx, run, err)
	}
	return run, nil
}

// failMarkTimeout bounds the write that marks a run failed after its
// workflow could not be started: it outlives the request (a client that
// hangs up must not leave the run queued), not a store that does not
// answer.
const failMarkTimeout = 30 * time.Second

// failStart marks run failed (phase dispatch) after its workflow could not
// be started, so that nothing is left queued forever, and returns the 503
// the client reads (the log gets the causes too). When the mark cannot be
// written either, the run stays queued: that is logged with the request
// id and returned with the start error, and the client is told.
func (s *Service) failStart(ctx context.Context, run eval.Run, startErr error) error {
	run.Status = eval.StatusFailed
	run.Error = &eval.Error{Code: eval.CodeDispatch, Phase: eval.PhaseDispatch, Message: "the run's workflow could not be started: " + oneLine(startErr)}
	run.UpdatedAt = s.o.Now().UTC()
	row, err := records.Row(run)
	if err == nil {
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), failMarkTimeout)
		_, err = s.o.Store.PutRun(wctx, row)
		cancel()
	}
	if err != nil {
		s.o.Logger.LogAttrs(ctx, slog.LevelError, "a run whose workflow could not be started is left queued: marking it failed did not work",
			reqid.Attr(ctx), slog.String("workspace", run.Tenant), slog.String("run", run.ID),
			slog.String("start_error", startErr.Error()), slog.String("error", err.Error()))
		return errors.Join(derrors.Unavailablef("the run %s was recorded but its workflow could not be started, and it could not be marked failed; it may show queued: submit it again", run.ID),
			startErr, fmt.Errorf("marking run %s failed: %w", run.ID, err))
	}
	return errors.Join(derrors.Unavailablef("the run %s was recorded but its workflow could not be started; it is marked failed, submit it again", run.ID), startErr)
}

func oneLine(err error) string {
	s := derrors.Message(err)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}
