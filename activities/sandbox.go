package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"go.temporal.io/sdk/temporal"

	"svc/drivers/local/sandbox"
	"svc/internal/domain/eval"
	"svc/internal/domain/flows"
	"svc/internal/domain/trace"
	"svc/internal/platform/derrors"
	"svc/store"
	"svc/store/records"
)

// The sandbox session's activities (flows.SandboxSessionWorkflow): the
// container is created, run and removed on the worker host that took
// CreateSandbox; its later activities run on that host's task queue
// (flows.SandboxHostQueue). Every exec lands on the session's trajectory
// as it happens: one TraceEvent per run-log chunk of stream
// eval.SessionEventStream, sealed as the session's trajectory when it
// settles. So an exec's output is kept once, in the store, and what
// crosses a workflow's history is bounded (flows.MaxExecResultOutput).

// SandboxRuntime is what the session activities need of the host's OCI
// runtime (drivers/local/sandbox.Runtime).
type SandboxRuntime interface {
	Available() error
	Create(ctx context.Context, id string, img v1.Image, o sandbox.CreateOptions) (sandbox.Info, error)
	Exec(ctx context.Context, id, command string, timeout time.Duration) (sandbox.ExecResult, error)
	Lookup(ctx context.Context, id string) (sandbox.Info, error)
	Remove(ctx context.Context, id string) error
}

// Sandboxes is the session activities' host: its runtime and queue.
type Sandboxes struct {
	// Runtime runs the containers; nil when this worker hosts none.
	Runtime SandboxRuntime
	// HostQueue is this host's sandbox task queue.
	HostQueue string

	seqMu   sync.Mutex
	lastSeq int64
}

// The contract's types (flows).
type (
	SandboxRef        = flows.SandboxRef
	SandboxCreated    = flows.SandboxCreated
	SandboxExecInput  = flows.SandboxExecInput
	SandboxExecResult = flows.SandboxExecResult
	SandboxTeardown   = flows.SandboxTeardown
	SandboxSettle     = flows.SandboxSettle
)

// DefaultExecTimeout bounds an exec that asks for none.
const DefaultExecTimeout = 10 * time.Minute

func (a *Activities) sandboxRuntime() (SandboxRuntime, error) {
	if a.Sandbox == nil || a.Sandbox.Runtime == nil {
		return nil, temporal.NewNonRetryableApplicationError("this worker hosts no sandbox runtime", "SandboxUnavailable", nil)
	}
	return a.Sandbox.Runtime, nil
}

// session reads a session's run.
func (a *Activities) session(ctx context.Context, ref SandboxRef) (eval.Run, error) {
	row, err := a.Store.GetRun(ctx, ref.Workspace, ref.RunID)
	if err != nil {
		return eval.Run{}, err
	}
	run, err := records.FromRow(row)
	if err != nil {
		return eval.Run{}, err
	}
	if !run.IsSession() {
		return eval.Run{}, derrors.Invalidf("run %s is not a sandbox session", ref.RunID)
	}
	return run, nil
}

// updateSession changes a session's row in one transaction.
func (a *Activities) updateSession(ctx context.Context, ref SandboxRef, fn func(run *eval.Run) error) (eval.Run, error) {
	var out eval.Run
	err := a.Store.TransactKeyed(ctx, func(tx store.Tx) error {
		var err error
		out, err = records.UpdateRun(ctx, tx, ref.Workspace, ref.RunID, a.now(), fn)
		return err
	})
	return out, err
}

// CreateSandbox creates the session's container on this host from its
// image (flows.ActivityCreateSandbox). A retried attempt finds the
// container it made.
func (a *Activities) CreateSandbox(ctx context.Context, ref SandboxRef) (SandboxCreated, error) {
	rt, err := a.sandboxRuntime()
	if err != nil {
		return SandboxCreated{}, err
	}
	if err := rt.Available(); err != nil {
		return SandboxCreated{}, temporal.NewNonRetryableApplicationError(err.Error(), "SandboxUnavailable", nil)
	}
	run, err := a.session(ctx, ref)
	if err != nil {
		return SandboxCreated{}, err
	}
	if run.Status.Terminal() {
		return SandboxCreated{}, temporal.NewNonRetryableApplicationError("the session ended before its container was created", flows.SandboxClosedError, nil)
	}
	img, err := a.sessionImage(ctx, run)
	if err != nil {
		return SandboxCreated{}, err
	}
	digest, err := img.Digest()
	if err != nil {
		return SandboxCreated{}, derrors.Invalidf("image %s: reading its digest: %v", run.Session.Image, err)
	}
	info, err := rt.Create(ctx, run.ID, img, sandbox.CreateOptions{Hostname: "sandbox"})
	if errors.Is(err, sandbox.ErrExists) {
		info, err = rt.Lookup(ctx, run.ID)
	}
	if err != nil {
		return SandboxCreated{}, fmt.Errorf("creating the container of session %s: %w", run.ID, err)
	}
	c := SandboxCreated{ComputeID: info.ID, Host: a.Host, HostQueue: a.Sandbox.HostQueue, ImageDigest: digest.String()}
	if _, err := a.updateSession(ctx, ref, func(r *eval.Run) error {
		r.Session.ComputeID, r.Session.Host, r.Session.HostQueue, r.Session.ImageDigest = c.ComputeID, c.Host, c.HostQueue, c.ImageDigest
		return nil
	}); err != nil {
		return SandboxCreated{}, err
	}
	return c, nil
}

// sessionImage opens a session's image: an OCI layout directory (an
// absolute path the service admitted), or a reference into the
// workspace's image store.
func (a *Activities) sessionImage(ctx context.Context, run eval.Run) (v1.Image, error) {
	ref := run.Session.Image
	if filepath.IsAbs(ref) {
		return LayoutImage(ref)
	}
	if a.Worlds.Store == nil {
		return nil, derrors.Invalidf("image %q is a reference into the image store, and this deployment has none", ref)
	}
	return a.Worlds.Store.Image(ctx, run.Tenant, ref)
}

// LayoutImage is the image of an OCI layout directory: its index's only
// image, or the one annotated with the tag "latest" when it has several.
func LayoutImage(dir string) (v1.Image, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, derrors.Invalidf("%s is not an OCI image layout (no index.json): %v", dir, err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		return nil, derrors.Invalidf("%s: reading its index: %v", dir, err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, derrors.Invalidf("%s: reading its index: %v", dir, err)
	}
	var pick *v1.Descriptor
	for i, d := range m.Manifests {
		if !d.MediaType.IsImage() {
			continue
		}
		if pick == nil || d.Annotations["org.opencontainers.image.ref.name"] == "latest" {
			pick = &m.Manifests[i]
		}
	}
	if pick == nil {
		return nil, derrors.Invalidf("%s holds no image manifest", dir)
	}
	return idx.Image(pick.Digest)
}

// ExecSandbox runs one command in the session's container and records it
// on the session's trajectory (flows.ActivityExecSandbox; the API calls
// the same code in process when it shares the session's host).
func (a *Activities) ExecSandbox(ctx context.Context, in SandboxExecInput) (SandboxExecResult, error) {
	rt, err := a.sandboxRuntime()
	if err != nil {
		return SandboxExecResult{}, err
	}
	timeout := time.Duration(in.TimeoutMs) * time.Millisecond
	if timeout <= 0 {
		timeout = DefaultExecTimeout
	}
	started := a.now()
	res, err := rt.Exec(ctx, in.RunID, in.Command, timeout)
	if errors.Is(err, sandbox.ErrNotFound) || errors.Is(err, sandbox.ErrNotRunning) {
		return SandboxExecResult{}, temporal.NewNonRetryableApplicationError(derrors.Message(fmt.Errorf("%w: %w", derrors.ErrConflict, eval.ErrSessionLost)), string(flows.SandboxLost), err)
	}
	if err != nil {
		return SandboxExecResult{}, err
	}
	out := SandboxExecResult{
		ExitCode: res.ExitCode, StdoutTruncated: res.StdoutTruncated, StderrTruncated: res.StderrTruncated,
		TimedOut: res.TimedOut, DurationMs: float64(res.Duration.Microseconds()) / 1000,
	}
	full := SandboxExecResult{ExitCode: out.ExitCode, Stdout: text(res.Stdout), Stderr: text(res.Stderr),
		StdoutTruncated: out.StdoutTruncated, StderrTruncated: out.StderrTruncated, TimedOut: out.TimedOut, DurationMs: out.DurationMs}
	input, _ := json.Marshal(map[string]any{"command": in.Command, "by": in.By})
	output, _ := json.Marshal(full)
	ev := eval.TraceEvent{Kind: "tool_call", TS: &started, Name: eval.EventSessionExec, Input: input, Output: output, DurationMs: out.DurationMs}
	seq, err := a.AppendSessionEvent(ctx, in.Workspace, in.RunID, ev)
	if err != nil {
		return SandboxExecResult{}, fmt.Errorf("recording the exec on session %s's trajectory: %w", in.RunID, err)
	}
	out.EventSeq = seq
	out.Stdout, out.StdoutTruncated = bounded(full.Stdout, out.StdoutTruncated)
	out.Stderr, out.StderrTruncated = bounded(full.Stderr, out.StderrTruncated)
	return out, nil
}

// text is process output as valid UTF-8 without NUL (what the store keeps).
func text(b []byte) string {
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
}

// bounded cuts s to flows.MaxExecResultOutput bytes on a rune boundary.
func bounded(s string, truncated bool) (string, bool) {
	if len(s) <= flows.MaxExecResultOutput {
		return s, truncated
	}
	n := flows.MaxExecResultOutput
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], true
}

// AppendSessionEvent appends ev to session runID's live trajectory (a
// run-log chunk of stream eval.SessionEventStream) and returns its
// sequence number; the session's settle seals them in order. The world
// snapshot records session.snapshot_failed with it.
func (a *Activities) AppendSessionEvent(ctx context.Context, workspace, runID string, ev eval.TraceEvent) (int64, error) {
	if ev.TS == nil {
		now := a.now()
		ev.TS = &now
	}
	data, err := json.Marshal(ev)
	if err != nil {
		return 0, err
	}
	seq := a.nextEventSeq()
	err = a.Store.AppendRunLogs(ctx, []store.RunLog{{Workspace: workspace, RunID: runID, Seq: seq, Stream: eval.SessionEventStream, Data: string(data), At: *ev.TS}})
	return seq, err
}

// nextEventSeq is a sequence number above every earlier one of this
// process, from the clock (so a restarted process continues above its
// predecessor's).
func (a *Activities) nextEventSeq() int64 {
	s := a.Sandbox
	if s == nil {
		return time.Now().UnixNano()
	}
	s.seqMu.Lock()
	defer s.seqMu.Unlock()
	seq := time.Now().UnixNano()
	if seq <= s.lastSeq {
		seq = s.lastSeq + 1
	}
	s.lastSeq = seq
	return seq
}

// TeardownSandbox removes the session's container (its file system
// included) on its host (flows.ActivityTeardownSandbox); a container
// already gone is not an error. A hibernation that could not record its
// own failure is recorded here.
func (a *Activities) TeardownSandbox(ctx context.Context, in SandboxTeardown) error {
	if in.SnapshotFailed != "" {
		if _, err := a.AppendSessionEvent(ctx, in.Workspace, in.RunID, eval.TraceEvent{Kind: eval.EventSnapshotFailed, Message: in.SnapshotFailed}); err != nil {
			return err
		}
	}
	rt, err := a.sandboxRuntime()
	if err != nil {
		return err
	}
	if err := rt.Remove(ctx, in.RunID); err != nil && !errors.Is(err, sandbox.ErrNotFound) {
		return fmt.Errorf("removing the container of session %s: %w", in.RunID, err)
	}
	return nil
}

// SettleSandbox writes a session's end (flows.ActivitySettleSandbox):
// succeeded with its closedReason, or failed when its container could not
// be created; then seals its trajectory from the events it recorded. A
// settled session is left as it is (the seal is retried).
func (a *Activities) SettleSandbox(ctx context.Context, in SandboxSettle) error {
	now := a.now()
	run, err := a.updateSession(ctx, in.SandboxRef, func(r *eval.Run) error {
		if r.Status.Terminal() {
			return nil
		}
		r.FinishedAt = &now
		r.Session.ClosedAt = &now
		if in.FailCode != "" {
			r.Status = eval.StatusFailed
			r.Error = &eval.Error{Code: in.FailCode, Message: in.FailMessage, Phase: eval.PhaseDispatch}
			return nil
		}
		r.Status = eval.StatusSucceeded
		r.Session.ClosedReason = in.Reason
		return nil
	})
	if err != nil {
		return err
	}
	return a.sealSession(ctx, run)
}

// sealSession seals a settled session's trajectory: its recorded events
// in order, then session.closed.
func (a *Activities) sealSession(ctx context.Context, run eval.Run) error {
	var events []eval.TraceEvent
	after := int64(0)
	for {
		chunks, err := a.Store.ListRunLogs(ctx, run.Tenant, run.ID, after, 1000)
		if err != nil {
			return err
		}
		for _, c := range chunks {
			after = c.Seq
			if c.Stream != eval.SessionEventStream {
				continue
			}
			var ev eval.TraceEvent
			if err := json.Unmarshal([]byte(c.Data), &ev); err != nil {
				a.logger().Warn("a session event does not decode; left out of its trajectory", "run", run.ID, "seq", c.Seq, "err", err)
				continue
			}
			events = append(events, ev)
		}
		if len(chunks) < 1000 {
			break
		}
	}
	end := eval.TraceEvent{Kind: eval.EventSessionClosed, TS: run.FinishedAt, Message: run.Session.ClosedReason}
	if run.Status == eval.StatusFailed && run.Error != nil {
		end.Code, end.Message = run.Error.Code, run.Error.Message
	}
	events = append(events, end)
	sealed, digest, err := trace.SealEvents(events)
	if err != nil {
		return fmt.Errorf("sealing session %s's trajectory: %w", run.ID, err)
	}
	_, _, err = a.Store.SealTrajectory(ctx, store.Trajectory{Workspace: run.Tenant, RunID: run.ID, Source: "svc",
		EventCount: len(events), Digest: digest, SealedAt: a.now(), Audience: run.Audience(), Events: sealed})
	if errors.Is(err, derrors.ErrConflict) {
		return nil // an earlier attempt sealed it (with its own seal time)
	}
	return err
}

// LostSandboxes are the live sessions this host holds whose container is
// not running (a restart or a reboot lost it): the worker settles them
// orphaned at start.
func (a *Activities) LostSandboxes(ctx context.Context) ([]SandboxRef, error) {
	rt, err := a.sandboxRuntime()
	if err != nil {
		return nil, nil
	}
	rows, err := a.Store.ListLiveSessions(ctx, "")
	if err != nil {
		return nil, err
	}
	var lost []SandboxRef
	for _, row := range rows {
		run, err := records.FromRow(row)
		if err != nil || !run.IsSession() || run.Session.Host != a.Host || run.Session.ComputeID == "" {
			continue
		}
		info, err := rt.Lookup(ctx, run.Session.ComputeID)
		if errors.Is(err, sandbox.ErrNotFound) || (err == nil && info.State != sandbox.StateRunning) {
			lost = append(lost, SandboxRef{Workspace: run.Tenant, RunID: run.ID})
		}
	}
	return lost, nil
}
