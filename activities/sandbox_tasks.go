package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"svc/auth"
	"svc/drivers"
	"svc/drivers/local/sandbox"
	"svc/internal/domain/eval"
	"svc/internal/domain/flows"
	"svc/internal/domain/registry"
	"svc/internal/domain/trace"
	"svc/internal/platform/derrors"
	"svc/store"
	"svc/store/records"
)

// Playground tasks (flows.SignalSandboxTask): the booted harness's command
// run inside the session's container under the harness contract (the case
// as JSON in SVC_CASE_FILE, TraceEvent lines in SVC_TRACE_FILE, the final
// answer on stdout), through the session's runtime as an exec is. The
// trace file is read while the harness runs, every taskTraceEvery: each
// complete line becomes event i of the task's live trace (the run-log
// chunk of sequence i+1, stream eval.SessionEventStream), which GET
// /sandboxes/:id/tasks/:taskId/trace serves. The task's end is a single
// run's: trace.BuildResult over what the job left, the trajectory sealed,
// the run settled; and the session freed (busy false) in the same
// transaction.

// taskTraceEvery is how often a running task's trace file is read.
const taskTraceEvery = 500 * time.Millisecond

// taskDir is where a task's contract files are inside the container.
func taskDir(taskID string) string { return "/tmp/svc-task-" + taskID }

// taskOutputSeq is the first run-log sequence of a task's stdout and
// stderr, written at its end above every event's.
const taskOutputSeq = 1 << 40

// envName is a variable name the task's shell can export.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// shellQuote quotes s for /bin/sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// RunSandboxTask runs one playground task in its session's container
// (flows.ActivityRunSandboxTask, on the session's host queue) and settles
// it. A task already settled is left as it is. A close of the session
// cancels it: the harness's process tree is killed, the trace it wrote so
// far is sealed, and the task settles failed with code CANCELLED.
func (a *Activities) RunSandboxTask(ctx context.Context, in flows.SandboxTaskInput) (RunStatus, error) {
	ctx, stop := keepLease(ctx, nil)
	defer stop()
	rt, err := a.sandboxRuntime()
	if err != nil {
		return RunStatus{}, err
	}
	task, err := a.loadRun(ctx, RunRef{Workspace: in.Workspace, RunID: in.TaskID})
	if err != nil {
		return RunStatus{}, err
	}
	if task.Status.Terminal() {
		return RunStatus{Status: string(task.Status)}, nil
	}
	session, err := a.session(ctx, SandboxRef{Workspace: in.Workspace, RunID: in.SessionID})
	if err != nil {
		return RunStatus{}, err
	}
	if task, err = a.startTask(ctx, task); err != nil {
		return RunStatus{}, err
	}
	plan := trace.Dispatch{Harness: task.Harness, Runtime: task.Runtime}
	if task.Case != nil {
		if d, err := registry.CaseDigest(*task.Case); err == nil {
			plan.CaseDigest = d
		}
	}
	out, perr := a.runTask(ctx, rt, session, task, &plan)
	if perr != nil && !isCaseProblem(perr) {
		return RunStatus{}, perr
	}
	if ctx.Err() != nil && !cancelRequested(ctx) {
		return RunStatus{}, fmt.Errorf("task %s stopped with its activity (%v)", task.ID, context.Cause(ctx))
	}
	result, runErr := trace.BuildResult(task, plan, out, perr, a.Host)
	return a.finishTask(ctx, task, result, runErr, out)
}

// startTask marks a task running, and its summary on the session.
func (a *Activities) startTask(ctx context.Context, task eval.Run) (eval.Run, error) {
	now := a.now()
	err := a.Store.Transact(ctx, func(tx store.Tx) error {
		row, err := tx.GetRun(ctx, task.Tenant, task.ID)
		if err != nil {
			return err
		}
		cur, err := records.FromRow(row)
		if err != nil {
			return err
		}
		cur.Status, cur.UpdatedAt = eval.StatusRunning, now
		cur.Attempts++
		if cur.StartedAt == nil {
			cur.StartedAt = &now
		}
		next, err := records.Row(cur)
		if err != nil {
			return err
		}
		if _, err := tx.PutRun(ctx, next); err != nil {
			return err
		}
		task = cur
		return a.taskSummary(ctx, tx, cur, now)
	})
	return task, err
}

// taskSummary writes task's state into its session's summaries, and frees
// the session when the task has settled.
func (a *Activities) taskSummary(ctx context.Context, tx store.Tx, task eval.Run, now time.Time) error {
	row, err := tx.GetRun(ctx, task.Tenant, task.Group)
	if errors.Is(err, derrors.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	s, err := records.FromRow(row)
	if err != nil || !s.IsSession() {
		return err
	}
	for i := range s.Session.Tasks {
		if s.Session.Tasks[i].ID == task.ID {
			s.Session.Tasks[i].Status, s.Session.Tasks[i].FinishedAt = task.Status, task.FinishedAt
			if task.Result != nil && task.Status.Terminal() {
				pass := task.Result.Pass
				s.Session.Tasks[i].Pass = &pass
			}
		}
	}
	if task.Status.Terminal() && s.Session.Task == task.ID {
		s.Session.Busy, s.Session.Task = false, ""
	}
	s.UpdatedAt = now
	next, err := records.Row(s)
	if err != nil {
		return err
	}
	next.UpdatedAt = now
	_, err = tx.PutRun(ctx, next)
	return err
}

// runTask runs the harness in the session's container and answers what
// it left; plan gets the harness version that ran. A problem of the case
// (the harness gone, not a process harness) is a caseErr.
func (a *Activities) runTask(ctx context.Context, rt SandboxRuntime, session, task eval.Run, plan *trace.Dispatch) (trace.JobOutput, error) {
	out := trace.JobOutput{ExitCode: -1, OS: "linux", Driver: "sandbox", Image: session.Session.Image}
	who := auth.Principal{Subject: task.CreatedBy, Workspace: task.Tenant, Roles: []auth.Role{auth.RoleMember}}
	h, err := a.Registries.Resolve(ctx, who, registry.Harness, task.Harness.ID, task.Harness.Version)
	if errors.Is(err, derrors.ErrNotFound) {
		return out, caseErr("harness %s is no longer registered or visible to the task's creator: %v", task.Harness, err)
	}
	if err != nil {
		return out, err
	}
	plan.Harness, plan.HarnessDigest = h.Ref(), h.Digest
	hs := h.Spec.Harness()
	if hs == nil || hs.Kind == registry.HarnessService || len(hs.Command) == 0 {
		return out, caseErr("harness %s is not a process harness with a command", plan.Harness)
	}
	timeout := DefaultCaseTimeout
	switch {
	case task.Case != nil && task.Case.TimeoutSec > 0:
		timeout = time.Duration(task.Case.TimeoutSec) * time.Second
	case hs.TimeoutSec > 0:
		timeout = time.Duration(hs.TimeoutSec) * time.Second
	}
	caseJSON, err := json.Marshal(task.Case)
	if err != nil {
		return out, err
	}
	dir := taskDir(task.ID)
	work := dir + "/work"
	if wd := strings.Trim(hs.WorkDir, "/"); wd != "" && !strings.Contains("/"+wd+"/", "/../") {
		work += "/" + wd
	}
	env := map[string]string{}
	for k, v := range hs.Env {
		env[k] = v
	}
	drivers.SetContract(env, drivers.Job{RunID: task.ID, Env: hs.Env},
		drivers.Paths{CaseFile: dir + "/case.json", TraceFile: dir + "/trace.jsonl", WorkDir: work}, "")
	delete(env, drivers.EnvSecretsFile)
	names := make([]string, 0, len(env))
	for k := range env {
		if !envName.MatchString(k) {
			return out, caseErr("the harness's environment variable %q is not a name a shell can export", k)
		}
		names = append(names, k)
	}
	sort.Strings(names)

	// The contract's files, written by execs whose command stays well
	// under the kernel's bound on one argument (128 KiB).
	setup := []string{fmt.Sprintf("mkdir -p %s && : > %s && : > %s", shellQuote(work), shellQuote(dir+"/case.json"), shellQuote(dir+"/trace.jsonl"))}
	for rest := string(caseJSON); rest != ""; {
		n := min(len(rest), 24<<10)
		setup = append(setup, fmt.Sprintf("printf '%%s' %s >> %s", shellQuote(rest[:n]), shellQuote(dir+"/case.json")))
		rest = rest[n:]
	}
	for _, cmd := range setup {
		res, err := rt.Exec(ctx, session.ID, cmd, time.Minute)
		if err != nil {
			return out, a.taskExecErr(session.ID, err)
		}
		if res.ExitCode != 0 {
			return out, caseErr("the task's files could not be written in the session (exit %d): %s", res.ExitCode, clip(strings.TrimSpace(text(res.Stderr)), 300))
		}
	}
	var script strings.Builder
	fmt.Fprintf(&script, "cd %s || exit 126\n", shellQuote(work))
	for _, k := range names {
		fmt.Fprintf(&script, "export %s=%s\n", k, shellQuote(env[k]))
	}
	script.WriteString("exec")
	for _, arg := range hs.Command {
		script.WriteString(" " + shellQuote(arg))
	}

	type done struct {
		res execResultOf
		err error
	}
	fin := make(chan done, 1)
	go func() {
		res, err := rt.Exec(ctx, session.ID, script.String(), timeout)
		fin <- done{execResultOf{res.ExitCode, res.Stdout, res.Stderr, res.TimedOut, res.Duration}, err}
	}()
	tr := &taskTrace{a: a, rt: rt, session: session.ID, task: task, file: dir + "/trace.jsonl"}
	tick := time.NewTicker(taskTraceEvery)
	defer tick.Stop()
	var d done
wait:
	for {
		select {
		case d = <-fin:
			break wait
		case <-tick.C:
			tr.read(ctx, false)
		}
	}
	// The rest of the trace, also after a cancel (the container stays
	// until the session's teardown, which waits for this task).
	rctx, cancel := detached(ctx, recordWriteTimeout)
	tr.read(rctx, true)
	_, _ = rt.Exec(rctx, session.ID, "rm -rf "+shellQuote(dir), 10*time.Second)
	cancel()
	out.Trace = tr.data
	out.Stdout = text(d.res.stdout)
	out.StdoutTail, out.StderrTail = tailOf(text(d.res.stdout)), tailOf(text(d.res.stderr))
	out.Duration, out.TimedOut = d.res.duration, d.res.timedOut
	out.ExitCode = d.res.exitCode
	switch {
	case d.err != nil && ctx.Err() != nil:
		out.Cancelled = cancelRequested(ctx)
		out.ExitCode = -1
	case d.err != nil:
		return out, a.taskExecErr(session.ID, d.err)
	}
	return out, nil
}

// execResultOf is what the task's exec left.
type execResultOf struct {
	exitCode       int
	stdout, stderr []byte
	timedOut       bool
	duration       time.Duration
}

// taskExecErr is an exec's failure: a session whose container is gone is
// a problem of the case (the session is settled orphaned by its own path).
func (a *Activities) taskExecErr(sessionID string, err error) error {
	if errors.Is(err, sandbox.ErrNotFound) || errors.Is(err, sandbox.ErrNotRunning) {
		return caseErr("the session's container is gone: %v", err)
	}
	return err
}

// tailOf is the last drivers.TailBytes of s.
func tailOf(s string) string {
	if len(s) <= drivers.TailBytes {
		return s
	}
	return strings.ToValidUTF8(s[len(s)-drivers.TailBytes:], "")
}

// taskTrace reads a running task's trace file in the container and lands
// each complete line on the task's live trace.
type taskTrace struct {
	a       *Activities
	rt      SandboxRuntime
	session string
	task    eval.Run
	file    string
	data    []byte // the lines read so far
	partial []byte // a last line not ended yet
	events  int64
	full    bool
}

// read reads what the file gained; final takes a last unterminated line
// too. A failure is logged: the next read tries again, the seal has the
// whole file.
func (t *taskTrace) read(ctx context.Context, final bool) {
	if !t.full {
		off := len(t.data) + len(t.partial)
		res, err := t.rt.Exec(ctx, t.session, fmt.Sprintf("tail -c +%d %s 2>/dev/null", off+1, shellQuote(t.file)), 10*time.Second)
		if err != nil {
			if ctx.Err() == nil {
				t.a.logger().Warn("reading a task's trace file", "task", t.task.ID, "err", err)
			}
			return
		}
		t.partial = append(t.partial, res.Stdout...)
	}
	var lines []byte
	if i := bytes.LastIndexByte(t.partial, '\n'); i >= 0 {
		lines, t.partial = t.partial[:i+1], append([]byte(nil), t.partial[i+1:]...)
	}
	if final && len(t.partial) > 0 {
		lines, t.partial = append(lines, t.partial...), nil
	}
	if len(t.data)+len(lines) > drivers.MaxOutput {
		lines = lines[:max(0, drivers.MaxOutput-len(t.data))]
		t.full, t.partial = true, nil
	}
	if len(lines) == 0 {
		return
	}
	t.data = append(t.data, lines...)
	var chunks []store.RunLog
	now := t.a.now()
	for _, ev := range trace.ParseTrace(lines) {
		b, err := json.Marshal(ev)
		if err != nil {
			continue
		}
		t.events++
		chunks = append(chunks, store.RunLog{Workspace: t.task.Tenant, RunID: t.task.ID, Seq: t.events, Stream: eval.SessionEventStream, Data: string(b), At: now})
	}
	if len(chunks) == 0 {
		return
	}
	wctx, cancel := detached(ctx, recordWriteTimeout)
	defer cancel()
	if err := t.a.Store.AppendRunLogs(wctx, chunks); err != nil {
		t.a.logger().Warn("landing a task's trace events", "task", t.task.ID, "err", err)
	}
}

// finishTask settles a task as a single run settles (planFinish: the
// trajectory sealed, the record terminal) and frees its session, in one
// transaction; its stdout and stderr land on its log.
func (a *Activities) finishTask(ctx context.Context, task eval.Run, result *eval.CaseResult, runErr *eval.Error, out trace.JobOutput) (RunStatus, error) {
	ctx, cancel := detached(ctx, recordWriteTimeout)
	defer cancel()
	now := a.now()
	var logs []store.RunLog
	for i, s := range []struct{ stream, data string }{{"stdout", out.Stdout}, {"stderr", out.StderrTail}} {
		if s.data != "" {
			logs = append(logs, store.RunLog{Workspace: task.Tenant, RunID: task.ID, Seq: taskOutputSeq + int64(i), Stream: s.stream, Data: s.data, At: now})
		}
	}
	var status RunStatus
	err := a.Store.Transact(ctx, func(tx store.Tx) error {
		if len(logs) > 0 {
			if err := tx.AppendRunLogs(ctx, logs); err != nil {
				return err
			}
		}
		cur, err := tx.GetRun(ctx, task.Tenant, task.ID)
		if err != nil {
			return err
		}
		p, err := planFinish(now, task, cur, result, runErr)
		if err != nil {
			return err
		}
		status = p.status
		if p.trajectory != nil {
			if _, _, err := tx.SealTrajectory(ctx, *p.trajectory); err != nil {
				return err
			}
		}
		if p.row == nil {
			return nil
		}
		if _, err := tx.PutRun(ctx, *p.row); err != nil {
			return err
		}
		settled, err := records.FromRow(*p.row)
		if err != nil {
			return err
		}
		return a.taskSummary(ctx, tx, settled, now)
	})
	return status, err
}

// SettleSandboxTask ends a task its run did not settle
// (flows.ActivitySettleSandboxTask): failed with in.Code (CANCELLED: the
// session closed under it; else its dispatch failed, with in.Message),
// the events it had landed sealed as its partial trace; then its session
// is freed. A settled task is left as it is, and its session freed.
func (a *Activities) SettleSandboxTask(ctx context.Context, in flows.SandboxTaskSettle) error {
	task, err := a.loadRun(ctx, RunRef{Workspace: in.Workspace, RunID: in.TaskID})
	if errors.Is(err, derrors.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if task.Status.Terminal() {
		return a.Store.Transact(ctx, func(tx store.Tx) error { return a.taskSummary(ctx, tx, task, a.now()) })
	}
	// The events it landed, as the lines of its trace file.
	var data []byte
	for after := int64(0); ; {
		chunks, err := a.Store.ListRunLogs(ctx, task.Tenant, task.ID, after, 1000)
		if err != nil {
			return err
		}
		for _, c := range chunks {
			after = c.Seq
			if c.Stream == eval.SessionEventStream {
				data = append(append(data, c.Data...), '\n')
			}
		}
		if len(chunks) < 1000 {
			break
		}
	}
	plan := trace.Dispatch{Harness: task.Harness, Runtime: task.Runtime}
	out := trace.JobOutput{ExitCode: -1, Trace: data, Cancelled: in.Code == eval.CodeCancelled, Driver: "sandbox", OS: "linux"}
	var problem error
	if !out.Cancelled {
		msg := in.Message
		if msg == "" {
			msg = "the task could not be run in its session"
		}
		problem = caseErr("%s", msg)
	}
	result, runErr := trace.BuildResult(task, plan, out, problem, a.Host)
	if problem != nil && len(data) > 0 {
		// Keep what it landed before the error event.
		result.Trace = append(trace.ParseTrace(data), result.Trace...)
	}
	_, err = a.finishTask(ctx, task, result, runErr, trace.JobOutput{})
	return err
}
