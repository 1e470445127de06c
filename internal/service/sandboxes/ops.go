package sandboxes

import (
	"context"
	"errors"
	"time"
	"unicode/utf8"

	"svc/auth"
	"svc/internal/domain/eval"
	"svc/internal/domain/flows"
	"svc/internal/platform/derrors"
	"svc/store"
	"svc/store/records"
)

func (s *Service) view(run eval.Run) View {
	v := View{Run: run, Live: Live{Tasks: []any{}}}
	liveTasks(&v)
	if run.Session != nil {
		v.Live.ExpiresAt, v.Live.Busy = run.Session.ExpiresAt, run.Session.Busy
		v.Live.Open = !run.Status.Terminal()
		if v.Live.Open {
			if left := run.Session.ExpiresAt.Sub(s.o.Now()); left > 0 {
				v.Live.SecondsLeft = int64(left / time.Second)
			}
		}
	}
	return v
}

// transact runs fn in one transaction and returns fn's own error as it is.
func (s *Service) transact(ctx context.Context, fn func(tx store.Tx) error) error {
	var inner error
	err := s.o.Store.Transact(ctx, func(tx store.Tx) error {
		inner = fn(tx)
		return inner
	})
	if inner != nil {
		return inner
	}
	return err
}

// update changes a session's row in one transaction.
func (s *Service) update(ctx context.Context, ws, id string, fn func(r *eval.Run) error) (eval.Run, error) {
	var out eval.Run
	err := s.transact(ctx, func(tx store.Tx) error {
		var err error
		out, err = records.UpdateRun(ctx, tx, ws, id, s.o.Now().UTC(), fn)
		return err
	})
	return out, err
}

func (s *Service) read(ctx context.Context, ws, id string) (eval.Run, error) {
	row, err := s.o.Store.GetRun(ctx, ws, id)
	if err != nil {
		return eval.Run{}, err
	}
	return records.FromRow(row)
}

func notFound(id string) error {
	return derrors.NotFoundf("no sandbox session %q in this workspace that you can read (sessions are personal: only their member reads them)", id)
}

// get is a session p may read: its member only (no admin bypass); any
// other answer is 404.
func (s *Service) get(ctx context.Context, p auth.Principal, id string) (eval.Run, error) {
	row, err := s.o.Store.GetRun(ctx, p.Workspace, id)
	if errors.Is(err, derrors.ErrNotFound) {
		return eval.Run{}, notFound(id)
	}
	if err != nil {
		return eval.Run{}, err
	}
	if !eval.Visible(row.Audience, p.Subject) || row.Kind != eval.KindSandbox {
		return eval.Run{}, notFound(id)
	}
	run, err := records.FromRow(row)
	if err != nil {
		return eval.Run{}, err
	}
	if !run.IsSession() {
		return eval.Run{}, notFound(id)
	}
	return run, nil
}

// control is a session p may act on (exec, touch, close): readable, and p
// its creator or an admin (spec §4.8).
func (s *Service) control(ctx context.Context, p auth.Principal, id string) (eval.Run, error) {
	run, err := s.get(ctx, p, id)
	if err != nil {
		return eval.Run{}, err
	}
	if run.CreatedBy != p.Subject && !p.IsAdmin() {
		return eval.Run{}, derrors.Forbiddenf("only the session's creator or an admin may act on sandbox session %s", id)
	}
	return run, nil
}

func (s *Service) orchestrator() (Orchestrator, error) {
	if s.o.Orchestrator == nil {
		return nil, derrors.Unavailablef("no workflow orchestrator is configured, so sandbox sessions cannot be driven; run `svc dev`, or `svc serve` with TEMPORAL_ADDRESS")
	}
	return s.o.Orchestrator, nil
}

func closed(run eval.Run) error {
	why := run.Session.ClosedReason
	if why == "" && run.Error != nil {
		why = "failed: " + run.Error.Message
	}
	return derrors.Refusef(derrors.ErrConflict, map[string]any{"closedReason": run.Session.ClosedReason},
		"sandbox session %s has ended (%s); create a new one", run.ID, why)
}

// Get is one session with its live meta.
func (s *Service) Get(ctx context.Context, p auth.Principal, id string) (View, error) {
	run, err := s.get(ctx, p, id)
	if err != nil {
		return View{}, err
	}
	return s.view(run), nil
}

// List is the caller's live sessions, oldest first.
func (s *Service) List(ctx context.Context, p auth.Principal) ([]View, error) {
	rows, err := s.o.Store.ListLiveSessions(ctx, p.Workspace)
	if err != nil {
		return nil, err
	}
	out := []View{}
	for _, row := range rows {
		if !eval.Visible(row.Audience, p.Subject) {
			continue
		}
		run, err := records.FromRow(row)
		if err != nil || !run.IsSession() {
			continue
		}
		out = append(out, s.view(run))
	}
	return out, nil
}

// Exec runs one command in the session and answers what it did; the exec
// lands on the session's trajectory.
func (s *Service) Exec(ctx context.Context, p auth.Principal, id string, req ExecRequest) (flows.SandboxExecResult, error) {
	if req.Command == "" || len(req.Command) > MaxCommand || !utf8.ValidString(req.Command) {
		return flows.SandboxExecResult{}, derrors.Invalidf("command is required: one shell command of at most %d bytes of UTF-8", MaxCommand)
	}
	if req.TimeoutSec < 0 || req.TimeoutSec > 3600 {
		return flows.SandboxExecResult{}, derrors.Invalidf("timeoutSec %d: want 1 to 3600 (0: 600)", req.TimeoutSec)
	}
	run, err := s.control(ctx, p, id)
	if err != nil {
		return flows.SandboxExecResult{}, err
	}
	if run.Status.Terminal() {
		return flows.SandboxExecResult{}, closed(run)
	}
	in := flows.SandboxExecInput{Workspace: run.Tenant, RunID: run.ID, Command: req.Command, TimeoutMs: int64(req.TimeoutSec) * 1000, By: p.Subject}
	orch, err := s.orchestrator()
	if err != nil {
		return flows.SandboxExecResult{}, err
	}
	var res flows.SandboxExecResult
	if s.o.Local != nil && run.Session.Host != "" && run.Session.Host == s.o.Local.Host() {
		res, err = s.o.Local.Exec(ctx, in)
	} else {
		res, err = orch.ExecSandbox(ctx, in)
	}
	if errors.Is(err, eval.ErrSessionLost) {
		if cerr := orch.CloseSandbox(context.WithoutCancel(ctx), run.ID, flows.SandboxClose{Reason: eval.ClosedOrphaned}); cerr != nil {
			s.o.Logger.Warn("settling a lost session orphaned", "run", run.ID, "err", cerr)
		}
		return flows.SandboxExecResult{}, derrors.Refusef(derrors.ErrConflict, nil, "sandbox session %s: %s", run.ID, eval.ErrSessionLost.Error())
	}
	return res, err
}

// Touch extends the deadline to max(current, now + ttl): never shorter.
func (s *Service) Touch(ctx context.Context, p auth.Principal, id string, req TouchRequest) (View, error) {
	run, err := s.control(ctx, p, id)
	if err != nil {
		return View{}, err
	}
	ttl, err := s.ttl(req.TTL, time.Duration(run.Session.TTLSeconds)*time.Second)
	if err != nil {
		return View{}, err
	}
	if run.Status.Terminal() {
		return View{}, closed(run)
	}
	orch, err := s.orchestrator()
	if err != nil {
		return View{}, err
	}
	want := s.o.Now().UTC().Add(ttl)
	run, err = s.update(ctx, p.Workspace, id, func(r *eval.Run) error {
		if r.Status.Terminal() {
			return closed(*r)
		}
		if want.After(r.Session.ExpiresAt) {
			r.Session.ExpiresAt = want
		}
		return nil
	})
	if err != nil {
		return View{}, err
	}
	if err := orch.TouchSandbox(ctx, id, flows.SandboxTouch{ExpiresAt: run.Session.ExpiresAt}); err != nil {
		return View{}, err
	}
	return s.view(run), nil
}

// closeWait bounds how long a close waits for the session to settle.
const closeWait = 2 * time.Minute

// Close ends the session (idempotent: an ended session answers as it is)
// and answers it settled, or as it stands after closeWait.
func (s *Service) Close(ctx context.Context, p auth.Principal, id string, req CloseRequest) (View, error) {
	run, err := s.control(ctx, p, id)
	if err != nil {
		return View{}, err
	}
	if run.Status.Terminal() {
		return s.view(run), nil
	}
	orch, err := s.orchestrator()
	if err != nil {
		return View{}, err
	}
	if err := orch.CloseSandbox(ctx, id, flows.SandboxClose{Reason: eval.ClosedByRequest, Snapshot: req.Snapshot}); err != nil {
		return View{}, err
	}
	wctx, cancel := context.WithTimeout(ctx, closeWait)
	defer cancel()
	if err := orch.WaitSandbox(wctx, id); err != nil && ctx.Err() != nil {
		return View{}, err
	}
	run, err = s.read(ctx, p.Workspace, id)
	if err != nil {
		return View{}, err
	}
	return s.view(run), nil
}
