package sandboxes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"svc/auth"
	"svc/internal/domain/eval"
	"svc/internal/domain/flows"
	"svc/internal/domain/registry"
	"svc/internal/platform/derrors"
	"svc/internal/service/quota"
	"svc/store"
	"svc/store/records"
)

// Playground tasks (spec §3 "Playground task", §4.8, §8): a prompt for the
// harness a session booted, run in the session's container as a child run
// of kind eval, class interactive, group = the session. One at a time per
// session (409 while busy), admitted against the workspace's run budget
// (402), answered 202 queued; the session's workflow runs it
// (flows.SignalSandboxTask).

// TaskOrchestrator starts a recorded task in its session's workflow
// (orchestration.Starter).
type TaskOrchestrator interface {
	// StartSandboxTask signals the session's workflow; a workflow that
	// has ended is a conflict.
	StartSandboxTask(ctx context.Context, sessionID string, t flows.SandboxTaskStart) error
}

// booted is a harness a session boots: its resolved reference and image.
type booted struct {
	ref   registry.Ref
	image string
}

// bootHarness resolves the harness a create names (spec §4.8: a session
// from a registered harness): a process harness with a command, whose
// image the sandbox runtime can start (a reference into the image store,
// or an OCI layout path the operator allows). Its secrets and model
// binding are not given to sessions yet: such a harness is refused.
func (s *Service) bootHarness(ctx context.Context, p auth.Principal, ref registry.Ref, image string) (booted, error) {
	if err := registry.ValidateID(ref.ID); err != nil {
		return booted{}, fmt.Errorf("harness.id: %w", err)
	}
	version := ref.Version
	if version == "" {
		version = "latest"
	}
	if err := registry.ValidateVersionSelector(version); err != nil {
		return booted{}, fmt.Errorf("harness.version: %w", err)
	}
	h, err := s.o.Registries.Resolve(ctx, p, registry.Harness, ref.ID, version)
	if err != nil {
		return booted{}, err
	}
	name := h.Ref().String()
	hs := h.Spec.Harness()
	const supported = "a session boots a process harness (a command) whose image is a reference into the image store or an OCI layout path under SVC_SANDBOX_IMAGE_DIRS"
	switch {
	case hs == nil || hs.Kind == registry.HarnessService:
		return booted{}, derrors.Invalidf("harness %s is a service harness, which sessions do not boot: %s", name, supported)
	case len(hs.Command) == 0:
		return booted{}, derrors.Invalidf("harness %s has no command: %s", name, supported)
	case len(hs.SecretEnv) > 0:
		return booted{}, derrors.Invalidf("harness %s needs workspace secrets (secretEnv), which sessions do not hand to a harness yet: %s without secretEnv", name, supported)
	case hs.Model.Binding() != "":
		return booted{}, derrors.Invalidf("harness %s calls the model binding %q through the model proxy, which sessions do not reach yet: %s without a model binding", name, hs.Model.Binding(), supported)
	}
	if image == "" {
		if hs.Image == "" {
			return booted{}, derrors.Invalidf("harness %s declares no image, and the create names none: %s; give image, or register the harness with one", name, supported)
		}
		if err := s.checkImage(hs.Image); err != nil {
			return booted{}, derrors.Invalidf("harness %s: its image cannot start in a session (%s): %s", name, derrors.Message(err), supported)
		}
		image = hs.Image
	}
	return booted{ref: h.Ref(), image: image}, nil
}

// liveTasks fills a view's booted harness and task summaries.
func liveTasks(v *View) {
	if v.Run.Harness.ID != "" {
		v.Live.Harness = v.Run.Harness
	}
	if v.Run.Session == nil {
		return
	}
	for _, t := range v.Run.Session.Tasks {
		v.Live.Tasks = append(v.Live.Tasks, t)
	}
}

// SubmitTask records a playground task in session id and starts it: 202
// with the child run, queued. The session must be open, boot a harness
// and be idle (409 while a task runs); the workspace's run budget admits
// it (402 past SVC_TENANT_RUNS).
func (s *Service) SubmitTask(ctx context.Context, p auth.Principal, id string, req TaskRequest, source string) (eval.Run, error) {
	if strings.TrimSpace(req.Prompt) == "" || len(req.Prompt) > MaxPrompt || !utf8.ValidString(req.Prompt) {
		return eval.Run{}, derrors.Invalidf("prompt is required: the task for the session's harness, 1 to %d bytes of UTF-8", MaxPrompt)
	}
	if req.TimeoutSec < 0 || req.TimeoutSec > 24*3600 {
		return eval.Run{}, derrors.Invalidf("timeoutSec %d: want 1 to 86400 (0: the harness's timeout, else an hour)", req.TimeoutSec)
	}
	session, err := s.get(ctx, p, id)
	if err != nil {
		return eval.Run{}, err
	}
	if session.Status.Terminal() {
		return eval.Run{}, closed(session)
	}
	if session.Harness.ID == "" {
		return eval.Run{}, derrors.Invalidf("sandbox session %s boots no harness, so it has nothing to give a prompt to; create a session with harness {id, version}, or run commands with exec", id)
	}
	orch, err := s.orchestrator()
	if err != nil {
		return eval.Run{}, err
	}
	to, ok := orch.(TaskOrchestrator)
	if !ok {
		return eval.Run{}, derrors.Unavailablef("this deployment's orchestrator cannot run playground tasks")
	}
	now := s.o.Now().UTC()
	taskID := eval.NewID("run")
	c := registry.EvalCase{ID: taskID, Task: req.Prompt, Expected: req.Expected, TimeoutSec: req.TimeoutSec}
	if err := c.Validate(); err != nil {
		return eval.Run{}, err
	}
	task := eval.Run{
		ID: taskID, Tenant: p.Workspace, Harness: session.Harness, CaseID: c.ID, Status: eval.StatusQueued,
		CreatedAt: now, UpdatedAt: now, Kind: eval.KindEval, Class: eval.ClassInteractive, Group: session.ID,
		Trigger: eval.TriggerAPI, CreatedBy: p.Subject, Origin: eval.NewOrigin(source, p.Subject, p.Agent, false),
		Runtime: session.Runtime, Case: &c,
	}
	row, err := records.Row(task)
	if err != nil {
		return eval.Run{}, err
	}
	err = s.transact(ctx, func(tx store.Tx) error {
		_, err := records.UpdateRun(ctx, tx, p.Workspace, session.ID, now, func(cur *eval.Run) error {
			if cur.Status.Terminal() {
				return closed(*cur)
			}
			if cur.Session.Busy {
				return derrors.Refusef(derrors.ErrConflict, map[string]any{"task": cur.Session.Task},
					"sandbox session %s is busy: its task %s is still running (one playground task at a time); poll its trace until done, then send the next", session.ID, cur.Session.Task)
			}
			if err := quota.AdmitRuns(ctx, tx, p.Workspace, now, s.o.TenantRuns, 1); err != nil {
				return err
			}
			if _, err := tx.CreateRun(ctx, row); err != nil {
				return err
			}
			cur.Session.Busy, cur.Session.Task = true, taskID
			cur.Session.Tasks = append(cur.Session.Tasks, eval.SessionTask{ID: taskID, Status: eval.StatusQueued, CreatedAt: now})
			if n := len(cur.Session.Tasks); n > eval.MaxSessionTasks {
				cur.Session.Tasks = cur.Session.Tasks[n-eval.MaxSessionTasks:]
			}
			return nil
		})
		return err
	})
	if err != nil {
		return eval.Run{}, err
	}
	if err := to.StartSandboxTask(ctx, session.ID, flows.SandboxTaskStart{TaskID: taskID}); err != nil {
		return eval.Run{}, s.failTaskStart(ctx, task, err)
	}
	return task, nil
}

// failTaskStart fails a task whose session's workflow did not take it,
// and frees the session.
func (s *Service) failTaskStart(ctx context.Context, task eval.Run, startErr error) error {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), failStartTimeout)
	defer cancel()
	now := s.o.Now().UTC()
	msg := "the session's workflow did not take the task: " + derrors.Message(startErr)
	err := s.transact(wctx, func(tx store.Tx) error {
		task.Status, task.FinishedAt, task.UpdatedAt = eval.StatusFailed, &now, now
		task.Error = &eval.Error{Code: eval.CodeDispatch, Phase: eval.PhaseDispatch, Message: msg}
		trow, err := records.Row(task)
		if err != nil {
			return err
		}
		if _, err := tx.PutRun(wctx, trow); err != nil {
			return err
		}
		srow, err := tx.GetRun(wctx, task.Tenant, task.Group)
		if err != nil {
			return err
		}
		cur, err := records.FromRow(srow)
		if err != nil || cur.Session == nil || cur.Session.Task != task.ID {
			return err
		}
		cur.Session.Busy, cur.Session.Task = false, ""
		for i := range cur.Session.Tasks {
			if cur.Session.Tasks[i].ID == task.ID {
				cur.Session.Tasks[i].Status, cur.Session.Tasks[i].FinishedAt = eval.StatusFailed, &now
			}
		}
		nrow, err := records.Row(cur)
		if err != nil {
			return err
		}
		_, err = tx.PutRun(wctx, nrow)
		return err
	})
	if errors.Is(startErr, derrors.ErrConflict) {
		return errors.Join(startErr, err)
	}
	return errors.Join(derrors.Unavailablef("the task %s was recorded but its session's workflow did not take it; it is marked failed, send it again", task.ID), startErr, err)
}

// maxTraceEvents bounds one answer of the trace route.
const maxTraceEvents = 1000

// TaskTraceSince answers a task's trace from index since (0: a full
// replay). The session is its member's (404 otherwise); the task must be
// one of its tasks (404 otherwise).
func (s *Service) TaskTraceSince(ctx context.Context, p auth.Principal, id, taskID string, since int64) (TaskTrace, error) {
	if since < 0 {
		return TaskTrace{}, derrors.Invalidf("since %d: want an event index, 0 or more", since)
	}
	session, err := s.get(ctx, p, id)
	if err != nil {
		return TaskTrace{}, err
	}
	row, err := s.o.Store.GetRun(ctx, p.Workspace, taskID)
	if err != nil && !errors.Is(err, derrors.ErrNotFound) {
		return TaskTrace{}, err
	}
	var task eval.Run
	if err == nil {
		task, err = records.FromRow(row)
		if err != nil {
			return TaskTrace{}, err
		}
	}
	if task.Group != session.ID || task.Class != eval.ClassInteractive {
		return TaskTrace{}, derrors.NotFoundf("sandbox session %s has no task %q", id, taskID)
	}
	out := TaskTrace{TaskID: taskID, Status: task.Status, Since: since, Next: since, Events: []json.RawMessage{}}
	if task.Status.Terminal() {
		t, err := s.o.Store.GetTrajectory(ctx, p.Workspace, taskID)
		if err == nil {
			var events []json.RawMessage
			if err := json.Unmarshal(t.Events, &events); err != nil {
				return TaskTrace{}, fmt.Errorf("reading task %s's sealed trace: %w", taskID, err)
			}
			if since < int64(len(events)) {
				events = events[since:]
				if len(events) > maxTraceEvents {
					events = events[:maxTraceEvents]
				}
				out.Events = events
			}
			out.Next = since + int64(len(out.Events))
			out.Done = out.Next >= int64(t.EventCount)
			return out, nil
		}
		if !errors.Is(err, derrors.ErrNotFound) {
			return TaskTrace{}, err
		}
		// Settled without a seal (its dispatch failed): what it recorded.
		out.Done = true
	}
	// Live: event i is the run-log chunk of sequence i+1 (stream event).
	chunks, err := s.o.Store.ListRunLogs(ctx, p.Workspace, taskID, since, maxTraceEvents)
	if err != nil {
		return TaskTrace{}, err
	}
	for _, c := range chunks {
		if c.Stream != eval.SessionEventStream {
			continue
		}
		if c.Seq != out.Next+1 {
			break // a gap: the next poll reads from it
		}
		out.Events = append(out.Events, json.RawMessage(c.Data))
		out.Next = c.Seq
	}
	return out, nil
}
