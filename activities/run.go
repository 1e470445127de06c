package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"go.temporal.io/sdk/temporal"
	"golang.org/x/sync/singleflight"

	"svc/auth"
	"svc/drivers"
	"svc/internal/domain/eval"
	"svc/internal/domain/flows"
	"svc/internal/domain/redact"
	"svc/internal/domain/registry"
	"svc/internal/domain/trace"
	"svc/internal/platform/derrors"
	"svc/store"
	"svc/store/records"
)

// RunRef is flows.RunRef: the workflows' contract (package flows).
type RunRef = flows.RunRef

// RunStatus is flows.RunStatus: the workflows' contract (package flows).
type RunStatus = flows.RunStatus

// FailInput is flows.FailInput: the workflows' contract (package flows).
type FailInput = flows.FailInput

// DefaultCaseTimeout bounds a case that declares no timeout, nor its harness.
const DefaultCaseTimeout = time.Hour

// heartbeatEvery is how often DispatchRun heartbeats and flushes logs.
const heartbeatEvery = time.Second

// maxLogBytes caps the log kept per run; past it one system chunk says so.
const maxLogBytes = 8 << 20

// DispatchRun runs a queued run's case through the driver and records the
// outcome: running, then the result (trace sealed in the ledger, scores,
// evidence) and the terminal status, in one transaction. A run already
// terminal is not run again, so a retried activity finishes a run exactly
// once. A per-case problem (harness gone, secret missing, harness failed)
// is a failed run, not an activity error; only infrastructure errors are
// returned, for Temporal to retry.
func (a *Activities) DispatchRun(ctx context.Context, ref RunRef) (RunStatus, error) {
	ctx, stop := keepLease(ctx, nil)
	defer stop()
	run, err := a.loadRun(ctx, ref)
	if err != nil {
		return RunStatus{}, err
	}
	return a.dispatch(ctx, run, grading{})
}

// grading is how a dispatch grades: a batch may override the case's
// graders, or strip grading (experiments).
type grading struct {
	graders  []registry.Grader
	ungraded bool
	// harnesses, when set, keeps the harness versions resolved for the
	// cases of chunks, so that a worker resolves a batch's harness once
	// every harnessTTL rather than once a case.
	harnesses *harnessMemo
}

// harnessTTL is how long a worker's chunks reuse a harness resolution:
// a version deleted, or a creator's access revoked, applies to the cases
// started from at most this long after.
const harnessTTL = 10 * time.Second

// harnessMemo keeps harness resolutions by creator and reference for
// harnessTTL; its zero value is ready to use. The cases that find a
// resolution missing or expired at once (a batch's first round of 64, and
// every harnessTTL after) share one read of it rather than each making
// its own.
type harnessMemo struct {
	mu     sync.Mutex
	m      map[string]memoHarness
	flight singleflight.Group
}

type memoHarness struct {
	h  registry.Resolved
	at time.Time
}

// resolveHarness resolves the harness ref as who sees it, at most once
// per harnessTTL with a memo.
func (a *Activities) resolveHarness(ctx context.Context, memo *harnessMemo, who auth.Principal, ref registry.Ref) (registry.Resolved, error) {
	if memo == nil {
		return a.Registries.Resolve(ctx, who, registry.Harness, ref.ID, ref.Version)
	}
	key := who.Workspace + "\x00" + who.Subject + "\x00" + ref.ID + "\x00" + ref.Version
	now := a.now()
	memo.mu.Lock()
	e, ok := memo.m[key]
	memo.mu.Unlock()
	if ok && now.Sub(e.at) < harnessTTL {
		return e.h, nil
	}
	// The shared read outlives a caller that gives up (its context
	// ended): the others still wait for it, up to sharedReadTimeout.
	v, err, _ := memo.flight.Do(key, func() (any, error) {
		shared, cancel := detached(ctx, sharedReadTimeout)
		defer cancel()
		h, err := a.Registries.Resolve(shared, who, registry.Harness, ref.ID, ref.Version)
		if err != nil {
			return h, err
		}
		memo.mu.Lock()
		if memo.m == nil {
			memo.m = map[string]memoHarness{}
		}
		if len(memo.m) >= 1024 {
			for k, e := range memo.m {
				if now.Sub(e.at) >= harnessTTL {
					delete(memo.m, k)
				}
			}
		}
		memo.m[key] = memoHarness{h: h, at: now}
		memo.mu.Unlock()
		return h, nil
	})
	h, _ := v.(registry.Resolved)
	return h, err
}

// dispatch runs run's case unless it is already terminal; see DispatchRun.
func (a *Activities) dispatch(ctx context.Context, run eval.Run, g grading) (RunStatus, error) {
	return a.dispatchFrom(ctx, run, g, false)
}

// dispatchFrom is dispatch; fresh says that run was just created running
// its first attempt, so there is no status to write and no earlier
// attempt's log to clear.
func (a *Activities) dispatchFrom(ctx context.Context, run eval.Run, g grading, fresh bool) (RunStatus, error) {
	ref := RunRef{Workspace: run.Tenant, RunID: run.ID}
	if run.Status.Terminal() {
		return RunStatus{Status: string(run.Status), WebhookURL: run.WebhookURL}, nil
	}
	if trace.Imported(run) {
		// An ingested trace: graded from its sealed copy, nothing runs (ingest.go).
		return a.gradeImported(ctx, run, g)
	}
	if pulled(run) {
		// A pulled trace: fetched, sealed, then graded as an ingested one (pull.go).
		return a.gradePulled(ctx, run, g)
	}
	if !fresh {
		// Marked running against the stored record, in one transaction: an
		// earlier attempt may have finished the run since it was read (then
		// nothing runs again), and the attempt count is the stored one's
		// plus one.
		var terminal *RunStatus
		err := a.Store.TransactKeyed(ctx, func(tx store.Tx) error {
			row, err := tx.GetRun(ctx, run.Tenant, run.ID)
			if err != nil {
				return err
			}
			cur, err := records.FromRow(row)
			if err != nil {
				return err
			}
			if cur.Status.Terminal() {
				terminal = &RunStatus{Status: string(cur.Status), WebhookURL: cur.WebhookURL}
				return nil
			}
			now := a.now()
			cur.Status = eval.StatusRunning
			cur.Attempts++
			if cur.StartedAt == nil {
				cur.StartedAt = &now
			}
			cur.UpdatedAt = now
			next, err := records.Row(cur)
			if err != nil {
				return err
			}
			if _, err := tx.PutRun(ctx, next); err != nil {
				return err
			}
			run = cur
			return nil
		})
		if err != nil {
			return RunStatus{}, err
		}
		if terminal != nil {
			return *terminal, nil
		}
		if err := a.Store.DeleteRunLogs(ctx, ref.Workspace, ref.RunID); err != nil {
			return RunStatus{}, err
		}
	}

	if run.Trigger == eval.TriggerJudgePreview {
		// A code-judge try runs its judge, not a harness (judge_try.go).
		return a.runJudgeTry(ctx, run)
	}
	job, plan, perr := a.plan(ctx, run, g.harnesses)
	plan.Graders, plan.Ungraded = g.graders, g.ungraded
	var res drivers.Result
	if perr == nil && len(job.Secrets) > 0 {
		if err := a.recordSecretUse(ctx, run, plan); err != nil {
			return RunStatus{}, err
		}
	}
	var tail []store.RunLog
	var access harnessModel // the harness's model token, for this attempt only (harness_model.go)
	if perr == nil {
		job, access, perr = a.harnessModelAccess(ctx, run, plan, job)
	}
	if perr == nil {
		res, tail, perr = a.runJob(ctx, ref, plan.placement, job)
	}
	modelUsage := access.end(ctx, a)
	if perr != nil && !isCaseProblem(perr) {
		a.storeLogs(ctx, ref, tail)
		return RunStatus{}, perr
	}
	if ctx.Err() != nil && !cancelRequested(ctx) {
		// The job was killed because this attempt lost its lease (its
		// heartbeat timed out, the worker is stopping), not because anyone
		// cancelled the run: nothing is recorded, and the next attempt
		// runs the case again.
		a.storeLogs(ctx, ref, tail)
		return RunStatus{}, fmt.Errorf("run %s stopped with its activity (%v); the next attempt runs it again", run.ID, context.Cause(ctx))
	}
	out, spans := res, false
	if perr == nil {
		// The spans the harness exported to the OTLP door are sealed with
		// its SVC_TRACE_FILE events (traces.go).
		rctx, cancel := detached(ctx, recordWriteTimeout)
		withSpans, found, err := a.withRunSpans(rctx, run, out.Trace, job.Secrets)
		cancel()
		if err != nil {
			return RunStatus{}, err
		}
		out.Trace, spans = withSpans, found
	}
	// The proxy's metered cost is in the usage before the graders run,
	// so a usd grader sees it beside the trace's own.
	plan.ModelCostUSD = modelUsage.CostUSD
	result, runErr := trace.BuildResult(run, plan.Dispatch, trace.JobOutput(out), perr, a.Host)
	if plan.placement.selfReported && result.Provenance != nil {
		// A self-hosted runner ran it: the service did not see the compute.
		result.Provenance.Attestation = eval.AttestationSelfReported
	}
	status, err := a.finish(ctx, run, result, runErr, tail...)
	if err != nil {
		return status, a.persistFailed(ctx, run, err)
	}
	a.afterSeal(ctx, run, result, spans)
	return status, nil
}

// cancelRequested reports whether ctx ended because the workflow asked
// for its activity to be cancelled (the run or its batch was cancelled),
// as opposed to the activity losing its lease.
func cancelRequested(ctx context.Context) bool {
	var ce *temporal.CanceledError
	return errors.As(context.Cause(ctx), &ce)
}

// caseProblem marks an error that fails the case (and so the run), not the
// activity.
type caseProblem struct{ msg string }

func (e *caseProblem) Error() string { return e.msg }

// caseErr is a caseProblem whose message is the run's error message: an
// error among args reads as its derrors.Message, so no internal call chain
// ("Store.GetVersion(ctx, ...)") reaches the record.
func caseErr(format string, args ...any) error {
	for i, a := range args {
		if err, ok := a.(error); ok {
			args[i] = derrors.Message(err)
		}
	}
	return &caseProblem{fmt.Sprintf(format, args...)}
}

func isCaseProblem(err error) bool {
	var cp *caseProblem
	return errors.As(err, &cp)
}

// Plan is what dispatch resolved: what the result records (the harness
// version that ran, the digests provenance records, the grading) and the
// secrets the job is given.
type Plan struct {
	trace.Dispatch
	// Secrets are the names of the workspace secrets the job is given
	// (sorted); Unmasked those among them too short to be masked in its
	// output (see redact.MinLen).
	Secrets  []string
	Unmasked []string

	// placement is the driver the job runs on (see place).
	placement placement
	// model is the model binding the harness calls (model.ref); "" for none.
	model string
}

// plan resolves the harness (`latest` now, spec §9.2), the runtime (see
// place) and the harness's secrets as the run's creator sees them, and
// builds the job.
func (a *Activities) plan(ctx context.Context, run eval.Run, memo *harnessMemo) (drivers.Job, Plan, error) {
	p := Plan{Dispatch: trace.Dispatch{Harness: run.Harness, Runtime: run.Runtime}}
	if run.Case == nil {
		return drivers.Job{}, p, caseErr("the run has no case to dispatch")
	}
	c := *run.Case
	if d, err := registry.CaseDigest(c); err == nil {
		p.CaseDigest = d
	}
	who := auth.Principal{Subject: run.CreatedBy, Workspace: run.Tenant, Roles: []auth.Role{auth.RoleMember}}
	h, err := a.resolveHarness(ctx, memo, who, run.Harness)
	if errors.Is(err, derrors.ErrNotFound) {
		return drivers.Job{}, p, caseErr("harness %s is no longer registered or visible to the run's creator: %v", run.Harness, err)
	}
	if err != nil {
		return drivers.Job{}, p, err
	}
	p.Harness, p.HarnessDigest = h.Ref(), h.Digest
	hs := h.Spec.Harness()
	if hs == nil || hs.Kind == registry.HarnessService || len(hs.Command) == 0 {
		return drivers.Job{}, p, caseErr("harness %s is not a process harness with a command; this worker runs process harnesses only", p.Harness)
	}
	p.model = hs.Model.Binding()
	if p.placement, err = a.place(ctx, run, who, hs, c); err != nil {
		return drivers.Job{}, p, err
	}
	secretsFor, err := a.openSecrets(ctx, run.Tenant, hs.SecretEnv)
	if err != nil {
		return drivers.Job{}, p, err
	}
	p.Secrets, p.Unmasked = secretNames(hs.SecretEnv, secretsFor)
	for _, name := range p.Unmasked {
		a.logger().Warn("a workspace secret is too short to be masked in job output; store a longer value",
			"run", run.ID, "workspace", run.Tenant, "secret", name, "minBytes", redact.MinLen)
	}
	caseJSON, err := json.Marshal(c)
	if err != nil {
		return drivers.Job{}, p, fmt.Errorf("encoding case %s: %w", c.ID, err)
	}
	files, err := caseFiles(c)
	if err != nil {
		return drivers.Job{}, p, err
	}
	timeout := DefaultCaseTimeout
	switch {
	case c.TimeoutSec > 0:
		timeout = time.Duration(c.TimeoutSec) * time.Second
	case hs.TimeoutSec > 0:
		timeout = time.Duration(hs.TimeoutSec) * time.Second
	}
	image := c.Image
	if image == "" {
		image = hs.Image
	}
	return drivers.Job{
		RunID:        run.ID,
		Attempt:      jobAttempt,
		Command:      hs.Command,
		Env:          hs.Env,
		Secrets:      secretsFor,
		Case:         caseJSON,
		Files:        files,
		WorkDir:      hs.WorkDir,
		Image:        image,
		Timeout:      timeout,
		OTLPEndpoint: a.OTLPEndpoint,
	}, p, nil
}

// openSecrets reads the harness's secretEnv from the workspace secret
// store: variable -> value. They reach the job in a file, never its
// environment (see drivers.Job.Secrets).
func (a *Activities) openSecrets(ctx context.Context, workspace string, names map[string]string) (map[string]string, error) {
	if len(names) == 0 {
		return nil, nil
	}
	if a.Sealer == nil {
		return nil, caseErr("the harness needs workspace secrets, but SVC_SECRET_KEY is not set on the worker, so they cannot be opened")
	}
	out := make(map[string]string, len(names))
	for env, name := range names {
		s, err := a.Store.GetSecret(ctx, workspace, name)
		if errors.Is(err, derrors.ErrNotFound) {
			return nil, caseErr("the harness needs the workspace secret %q (for %s), which is not stored; PUT /secrets/%s first", name, env, name)
		}
		if err != nil {
			return nil, err
		}
		v, err := a.Sealer.Open(workspace, name, s.Ciphertext)
		if err != nil {
			return nil, caseErr("the workspace secret %q cannot be opened with this worker's SVC_SECRET_KEY; store it again", name)
		}
		out[env] = string(v)
	}
	return out, nil
}

// secretNames lists the distinct secret names of secretEnv (variable ->
// name), sorted, and those whose value (in values, variable -> value) is
// too short to be masked.
func secretNames(secretEnv, values map[string]string) (names, unmasked []string) {
	short := map[string]bool{}
	for env, name := range secretEnv {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
		if redact.IsShort(values[env]) {
			short[name] = true
		}
	}
	slices.Sort(names)
	for _, name := range names {
		if short[name] {
			unmasked = append(unmasked, name)
		}
	}
	return names, unmasked
}

// recordSecretUse appends `secret.used` to the workspace's event log before
// the job is given its secrets: the run, the attempt, the harness version
// and the secret names (never values), plus those too short to be masked
// in the output. Its id is per attempt, so a retried activity records an
// attempt once.
func (a *Activities) recordSecretUse(ctx context.Context, run eval.Run, p Plan) error {
	data, err := json.Marshal(map[string]any{
		"runId": run.ID, "attempt": run.Attempts, "harness": p.Harness.String(),
		"secrets": p.Secrets, "unmasked": orEmpty(p.Unmasked),
	})
	if err != nil {
		return err
	}
	_, err = a.Store.AppendEvent(ctx, store.Event{
		ID: fmt.Sprintf("%s:%s:%d", EventSecretUsed, run.ID, run.Attempts), Workspace: run.Tenant,
		Type: EventSecretUsed, Subject: "run:" + run.ID, Actor: run.CreatedBy, Data: data, CreatedAt: a.now(),
	})
	return err
}

// EventSecretUsed is the event type recordSecretUse appends.
const EventSecretUsed = "secret.used"

// orEmpty is names, or an empty list in place of nil, so the event reads
// "unmasked": [] rather than null.
func orEmpty(names []string) []string {
	if names == nil {
		return []string{}
	}
	return names
}

// caseFiles are the files of a repo environment: env.source.files.
func caseFiles(c registry.EvalCase) (map[string]string, error) {
	if c.Env == nil || c.Env.Kind != registry.EnvRepo {
		return nil, nil
	}
	raw, ok := c.Env.Source["files"].(map[string]any)
	if !ok {
		return nil, nil
	}
	out := make(map[string]string, len(raw))
	for path, v := range raw {
		s, ok := v.(string)
		if !ok {
			return nil, caseErr("env.source.files[%q] must be the file's content as a string", path)
		}
		out[path] = s
	}
	return out, nil
}

// runJob runs the job, heartbeating and flushing its logs to the store
// while it runs. A job that can never start is a case problem; any other
// driver error is returned for Temporal to retry.
//
// Everything the job leaves passes through a mask of its secret values
// before it is stored (see package redact): the streamed logs, stdout, the
// stdout and stderr tails and the trace file. Every driver's output comes
// through here, so this covers them all.
//
// A remote job (pl.remote) outlives a lost lease: see jobContext.
//
// The logs still pending when the job ends are returned rather than
// stored, for finish to write in its transaction (one round trip fewer
// per case); a caller that does not finish stores them with storeLogs.
func (a *Activities) runJob(ctx context.Context, ref RunRef, pl placement, job drivers.Job) (drivers.Result, []store.RunLog, error) {
	logs := &logBuffer{ws: ref.Workspace, run: ref.RunID, now: a.now}
	mask := redact.New(secretValues(job.Secrets))
	masked := &maskedLog{mask: mask, log: logs.add}
	job.Log = masked.add
	type outcome struct {
		res drivers.Result
		err error
	}
	done := make(chan outcome, 1)
	jctx, release := ctx, func() {}
	if pl.remote {
		jctx, release = jobContext(ctx)
	}
	defer release()
	go func() {
		res, err := pl.driver.Run(jctx, job)
		done <- outcome{res, err}
	}()
	tick := time.NewTicker(heartbeatEvery)
	defer tick.Stop()
	for {
		select {
		case o := <-done:
			masked.flush()
			tail := logs.take()
			o.res = maskResult(mask, o.res)
			switch {
			case errors.Is(o.err, derrors.ErrInvalid):
				// A job that can never run (command not found, a file
				// escaping the work dir) fails the case, not the activity.
				return o.res, tail, caseErr("the harness could not be started: %s", mask.String(derrors.Message(o.err)))
			case o.err != nil:
				return o.res, tail, fmt.Errorf("running the job of run %s: %w", ref.RunID, o.err)
			}
			return o.res, tail, nil
		case <-tick.C:
			heartbeat(ctx)
			a.storeLogs(ctx, ref, logs.take())
		}
	}
}

// secretValues are the values of a job's secrets.
func secretValues(secrets map[string]string) []string {
	out := make([]string, 0, len(secrets))
	for _, v := range secrets {
		out = append(out, v)
	}
	return out
}

// maskResult masks the secrets in what a finished job left: stdout (the
// final answer), the tails and the trace file, before the result and the
// trajectory are built from them. A tail is a window whose start may cut a
// secret in two, and stdout and the trace are heads whose end may, when
// they reach their cap: the cut half is masked too (redact.Clipped).
func maskResult(mask *redact.Masker, res drivers.Result) drivers.Result {
	if mask.Empty() {
		return res
	}
	full := func(n, limit int) bool { return n >= limit-(utf8.UTFMax-1) }
	res.Stdout = mask.Clipped(res.Stdout, false, full(len(res.Stdout), drivers.MaxOutput))
	res.StdoutTail = mask.Clipped(res.StdoutTail, full(len(res.StdoutTail), drivers.TailBytes), false)
	res.StderrTail = mask.Clipped(res.StderrTail, full(len(res.StderrTail), drivers.TailBytes), false)
	if len(res.Trace) > 0 {
		res.Trace = []byte(mask.Clipped(string(res.Trace), false, full(len(res.Trace), drivers.MaxOutput)))
	}
	return res
}

// maskedLog passes a job's streamed output through a masking stream per
// output stream (stdout, stderr) on its way to log. A stream holds back
// the bytes that may begin a secret until the next chunk shows whether
// they do, so each stream's order is kept, but a held-back end of one
// stream may be stored after a later chunk of the other; flush emits what
// is held when the job has ended.
type maskedLog struct {
	mu      sync.Mutex
	mask    *redact.Masker
	log     func(stream string, data []byte)
	streams map[string]*redact.Stream
	order   []string // stream names, in order of first output
}

func (l *maskedLog) add(stream string, data []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.streams[stream]
	if !ok {
		if l.streams == nil {
			l.streams = map[string]*redact.Stream{}
		}
		s = l.mask.Stream(func(p []byte) { l.log(stream, p) })
		l.streams[stream] = s
		l.order = append(l.order, stream)
	}
	s.Write(data)
}

func (l *maskedLog) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, name := range l.order {
		l.streams[name].Flush()
	}
}

// logBuffer collects a job's output between flushes, merging chunks of the
// same stream.
type logBuffer struct {
	mu      sync.Mutex
	ws, run string
	now     func() time.Time
	pending []store.RunLog
	seq     int64
	bytes   int
	capped  bool
}

func (b *logBuffer) add(stream string, data []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.capped {
		return
	}
	if b.bytes+len(data) > maxLogBytes {
		b.capped = true
		b.seq++
		b.pending = append(b.pending, store.RunLog{Workspace: b.ws, RunID: b.run, Seq: b.seq, Stream: "system", At: b.now(),
			Data: fmt.Sprintf("log truncated: the run wrote more than %d bytes; the rest is not kept\n", maxLogBytes)})
		return
	}
	b.bytes += len(data)
	text := strings.ToValidUTF8(string(data), "\uFFFD")
	text = strings.ReplaceAll(text, "\x00", "")
	if n := len(b.pending); n > 0 && b.pending[n-1].Stream == stream && len(b.pending[n-1].Data) < 64<<10 {
		b.pending[n-1].Data += text
		return
	}
	b.seq++
	b.pending = append(b.pending, store.RunLog{Workspace: b.ws, RunID: b.run, Seq: b.seq, Stream: stream, Data: text, At: b.now()})
}

// take returns the pending chunks and forgets them.
func (b *logBuffer) take() []store.RunLog {
	b.mu.Lock()
	defer b.mu.Unlock()
	chunks := b.pending
	b.pending = nil
	return chunks
}

// storeLogs stores log chunks: those a running job wrote since the last
// tick, or those it left pending when no finish will write them. A
// failure is logged, not returned: the logs are the run's side output.
func (a *Activities) storeLogs(ctx context.Context, ref RunRef, chunks []store.RunLog) {
	if len(chunks) == 0 {
		return
	}
	ctx, cancel := detached(ctx, recordWriteTimeout)
	defer cancel()
	if err := a.Store.AppendRunLogs(ctx, chunks); err != nil {
		a.logger().Warn("storing run logs", append(activityAttrs(ctx),
			"workspace", ref.Workspace, "run", ref.RunID, "chunks", len(chunks), "error", err)...)
	}
}

// finish writes the terminal record and seals the trajectory in one
// transaction, unless a previous attempt already did.
// The job's last log chunks, when given, are appended in the same
// transaction, which is shared with the other writes of the worker's
// cases arriving at the same time (see groupCommit).
// It outlives ctx's cancellation (the job ran: its result is recorded),
// within recordWriteTimeout.
func (a *Activities) finish(ctx context.Context, run eval.Run, result *eval.CaseResult, runErr *eval.Error, logs ...store.RunLog) (RunStatus, error) {
	ctx, cancel := detached(ctx, recordWriteTimeout)
	defer cancel()
	return a.finishGrouped(ctx, run, result, runErr, logs)
}

// finishOne is finish in a transaction of its own, at now.
func (a *Activities) finishOne(ctx context.Context, now time.Time, run eval.Run, result *eval.CaseResult, runErr *eval.Error, logs ...store.RunLog) (RunStatus, error) {
	var out RunStatus
	// Keyed: it reads and writes this run, its trajectory and its log
	// chunks only (the canonical rule is the unique index's).
	err := a.Store.TransactKeyed(ctx, func(tx store.Tx) error {
		if len(logs) > 0 {
			if err := tx.AppendRunLogs(ctx, logs); err != nil {
				return err
			}
		}
		cur, err := tx.GetRun(ctx, run.Tenant, run.ID)
		if err != nil {
			return err
		}
		p, err := planFinish(now, run, cur, result, runErr)
		if err != nil {
			return err
		}
		if p.trajectory != nil {
			if _, _, err := tx.SealTrajectory(ctx, *p.trajectory); err != nil {
				return err
			}
		}
		if p.row != nil {
			if _, err := tx.PutRun(ctx, *p.row); err != nil {
				return err
			}
		}
		out = p.status
		return nil
	})
	return out, err
}

// FailRun records a run whose dispatch gave up (or was cancelled) as
// failed, with the error envelope and a trace saying why. A run already
// terminal is left as it is.
func (a *Activities) FailRun(ctx context.Context, in FailInput) (_ RunStatus, err error) {
	defer untilLanded(&err)
	run, err := a.loadRun(ctx, in.RunRef)
	if err != nil {
		return RunStatus{}, err
	}
	if run.Status.Terminal() {
		return RunStatus{Status: string(run.Status), WebhookURL: run.WebhookURL}, nil
	}
	// A job a remote cluster may still be running for it is stopped.
	a.stopRemoteJob(ctx, run)
	plan := trace.Dispatch{Harness: run.Harness, Runtime: run.Runtime}
	result, runErr := trace.BuildResult(run, plan, trace.JobOutput{}, caseErr("%s", in.Message), a.Host)
	runErr.Code = in.Code
	return a.finish(ctx, run, result, runErr)
}

// FinalizeRun sends the outward effects of a terminal run: the creator's
// notification (none for a scorecard's child, none when the creator is
// unknown) and the run.completed or run.failed event.
func (a *Activities) FinalizeRun(ctx context.Context, ref RunRef) (err error) {
	defer untilLanded(&err)
	run, err := a.loadRun(ctx, ref)
	if err != nil {
		return err
	}
	if !run.Status.Terminal() {
		return fmt.Errorf("run %s is %s, not terminal; FinalizeRun runs after dispatch", ref.RunID, run.Status)
	}
	verb := "completed"
	if run.Status == eval.StatusFailed {
		verb = "failed"
	}
	return a.Store.Transact(ctx, func(tx store.Tx) error {
		data, _ := json.Marshal(map[string]any{"runId": run.ID, "status": run.Status, "harness": run.Harness.String(), "caseId": run.CaseID})
		if _, err := tx.AppendEvent(ctx, store.Event{
			ID: "run." + verb + ":" + run.ID, Workspace: run.Tenant, Type: "run." + verb,
			Subject: "run:" + run.ID, Actor: run.CreatedBy, Data: data,
		}); err != nil {
			return err
		}
		if n, ok := eval.RunNotice(run); ok {
			return addNotice(ctx, tx, run.Tenant, n)
		}
		return nil
	})
}

func (a *Activities) loadRun(ctx context.Context, ref RunRef) (eval.Run, error) {
	row, err := a.Store.GetRun(ctx, ref.Workspace, ref.RunID)
	if err != nil {
		return eval.Run{}, err
	}
	return records.FromRow(row)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
