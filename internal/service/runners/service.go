package runners

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"svc/auth"
	"svc/internal/platform/derrors"
	"svc/store"
)

// Opener opens what the worker sealed (secrets.Sealer).
type Opener interface {
	Open(workspace, name string, sealed []byte) ([]byte, error)
}

// Store is what the Service needs of the store.
type Store interface {
	store.RunnerJobs
	store.RunnerJobOutput
}

// Options are a Service's dependencies.
type Options struct {
	Store Store
	// Sealer opens the jobs' sealed secrets; nil when SVC_SECRET_KEY is
	// unset, and then a job with secrets fails with a message saying so.
	Sealer Opener
	Now    func() time.Time
	Logger *slog.Logger
	// Poll is how often a long poll asks the store; 0 means 250ms.
	Poll time.Duration
}

// Service is the runner routes' use cases.
type Service struct{ o Options }

// New returns a Service.
func New(o Options) *Service {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Poll <= 0 {
		o.Poll = 250 * time.Millisecond
	}
	return &Service{o: o}
}

// requireRunner refuses a principal that is not a runner key: the runner
// routes hand out jobs and their secrets, which no person's credential or
// API key takes (and a runner key does nothing else, having no role).
func requireRunner(p auth.Principal) error {
	if p.Subject == "" {
		return derrors.ErrUnauthenticated
	}
	if p.Via != auth.ViaRunner || p.Workspace == "" {
		return derrors.Forbiddenf("the runner routes take a runner key (%s...); mint one with POST /runner-keys", auth.RunnerKeyPrefix)
	}
	return nil
}

// findThenRequireRunner looks job id up in p's workspace first, so that
// another workspace's job is 404 whoever asks (spec §1), and then refuses
// a caller that is not a runner.
func (s *Service) findThenRequireRunner(ctx context.Context, p auth.Principal, id string) error {
	if p.Subject == "" {
		return derrors.ErrUnauthenticated
	}
	if _, err := s.o.Store.GetRunnerJob(ctx, p.Workspace, id); err != nil {
		if errors.Is(err, derrors.ErrNotFound) {
			return derrors.NotFoundf("runner job %q not found in this workspace", id)
		}
		return err
	}
	return requireRunner(p)
}

// checkName checks a free-text name a runner sends.
func checkName(field, v string, maxLen int) error {
	if len(v) > maxLen || !utf8.ValidString(v) || strings.IndexFunc(v, unicode.IsControl) >= 0 {
		return derrors.Invalidf("%s must be at most %d bytes of UTF-8 without control characters", field, maxLen)
	}
	return nil
}

// heartbeatInterval is the interval a runner says it heartbeats at.
func heartbeatInterval(ms int64) (time.Duration, error) {
	if ms == 0 {
		return DefaultHeartbeat, nil
	}
	hb := time.Duration(ms) * time.Millisecond
	if hb < MinHeartbeat || hb > MaxHeartbeat {
		return 0, derrors.Invalidf("heartbeatMs %d is out of range: give %d to %d", ms, MinHeartbeat.Milliseconds(), MaxHeartbeat.Milliseconds())
	}
	return hb, nil
}

// Lease waits up to req.WaitMs (at most MaxWait) for a job of p's
// workspace and leases it to p's runner; nil when none came. ctx ending
// ends the wait (the runner hung up).
func (s *Service) Lease(ctx context.Context, p auth.Principal, req LeaseRequest) (*Lease, error) {
	if err := requireRunner(p); err != nil {
		return nil, err
	}
	if err := checkName("runner", req.Runner, 200); err != nil {
		return nil, err
	}
	if err := checkName("runtime", req.Runtime, 200); err != nil {
		return nil, err
	}
	hb, err := heartbeatInterval(req.HeartbeatMs)
	if err != nil {
		return nil, err
	}
	wait := MaxWait
	if req.WaitMs != 0 {
		if req.WaitMs < 0 || time.Duration(req.WaitMs)*time.Millisecond > MaxWait {
			return nil, derrors.Invalidf("waitMs %d is out of range: give 0 to %d", req.WaitMs, MaxWait.Milliseconds())
		}
		wait = time.Duration(req.WaitMs) * time.Millisecond
	}
	runner := p.KeyID
	if req.Runner != "" {
		runner += "/" + req.Runner
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	tick := time.NewTicker(s.o.Poll)
	defer tick.Stop()
	for {
		l, err := s.leaseOnce(ctx, p.Workspace, req.Runtime, runner, hb)
		if err != nil || l != nil {
			return l, err
		}
		select {
		case <-ctx.Done():
			return nil, nil
		case <-deadline.C:
			return nil, nil
		case <-tick.C:
		}
	}
}

// leaseOnce leases one job if there is one: nil, nil when there is none.
// A job whose secrets cannot be opened here is failed with the reason and
// the next one is tried.
func (s *Service) leaseOnce(ctx context.Context, workspace, runtime, runner string, hb time.Duration) (*Lease, error) {
	for {
		now := s.o.Now()
		leaseID := newLeaseID()
		j, err := s.o.Store.LeaseRunnerJob(ctx, store.RunnerLease{Workspace: workspace, Runtime: runtime, Runner: runner,
			LeaseID: leaseID, Now: now, Until: now.Add(LeaseDuration(hb))})
		if errors.Is(err, derrors.ErrNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if lost := j.Leases - 1; lost >= MaxLostLeases {
			s.fail(ctx, j, leaseID, fmt.Sprintf("%d runners in a row lost this job (they stopped heartbeating while running it): the harness may be killing its runner, so the case fails rather than being run again", lost))
			continue
		}
		var job Job
		if err := json.Unmarshal(j.Payload, &job); err != nil {
			s.fail(ctx, j, leaseID, "the job's payload cannot be read; the worker that queued it is of another version")
			continue
		}
		if len(j.Secrets) > 0 {
			if s.o.Sealer == nil {
				s.fail(ctx, j, leaseID, "the job needs workspace secrets, but SVC_SECRET_KEY is not set on the API, so they cannot be handed to a runner; set it to the worker's key")
				continue
			}
			plain, err := s.o.Sealer.Open(workspace, SecretsName(j.ID), j.Secrets)
			if err == nil {
				err = json.Unmarshal(plain, &job.Secrets)
			}
			if err != nil {
				s.fail(ctx, j, leaseID, "the job's secrets cannot be opened with the API's SVC_SECRET_KEY; give the API and the worker the same key")
				continue
			}
		}
		l := &Lease{JobID: j.ID, LeaseID: leaseID, LeaseExpires: *j.LeaseExpires, Runtime: j.Runtime, Job: job}
		if l.OTLPToken, err = s.mintOTLPToken(ctx, j, leaseID, job.TimeoutMs, now); err != nil {
			// The job runs all the same; its spans cannot reach the door.
			s.o.Logger.Warn("runners: minting the job's OTLP token failed; its harness gets no OTLP endpoint", "workspace", j.Workspace, "job", j.ID, "err", err)
		}
		return l, nil
	}
}

// fail completes a leased job that cannot be handed out, so its case
// fails with why rather than being leased again and again.
func (s *Service) fail(ctx context.Context, j store.RunnerJob, leaseID, why string) {
	raw, _ := json.Marshal(Result{ExitCode: -1, Error: why, Invalid: true})
	if _, err := s.o.Store.CompleteRunnerJob(ctx, j.Workspace, j.ID, leaseID, raw, s.o.Now()); err != nil {
		s.o.Logger.Warn("runners: failing a job that cannot be handed out", "workspace", j.Workspace, "job", j.ID, "err", err)
	}
}

// Heartbeat renews the lease of job id and says whether it was cancelled.
// A lease that no longer holds the job is a conflict: the runner drops it.
func (s *Service) Heartbeat(ctx context.Context, p auth.Principal, id string, hb Heartbeat) (HeartbeatReply, error) {
	if err := s.findThenRequireRunner(ctx, p, id); err != nil {
		return HeartbeatReply{}, err
	}
	if hb.LeaseID == "" {
		return HeartbeatReply{}, derrors.Invalidf("leaseId is required: the id the lease answered with")
	}
	interval, err := heartbeatInterval(hb.HeartbeatMs)
	if err != nil {
		return HeartbeatReply{}, err
	}
	now := s.o.Now()
	j, err := s.o.Store.RenewRunnerLease(ctx, p.Workspace, id, hb.LeaseID, now, now.Add(LeaseDuration(interval)))
	if err != nil {
		return HeartbeatReply{}, err
	}
	return HeartbeatReply{Cancelled: j.Cancelled, LeaseExpires: *j.LeaseExpires}, nil
}

// Complete records the result of job id, run under c.LeaseID.
func (s *Service) Complete(ctx context.Context, p auth.Principal, id string, c Completion) error {
	if err := s.findThenRequireRunner(ctx, p, id); err != nil {
		return err
	}
	if c.LeaseID == "" {
		return derrors.Invalidf("leaseId is required: the id the lease answered with")
	}
	if err := checkName("result.host", c.Result.Host, 255); err != nil {
		return err
	}
	if err := checkName("result.os", c.Result.OS, 64); err != nil {
		return err
	}
	raw, err := json.Marshal(c.Result)
	if err != nil {
		return fmt.Errorf("encoding the result: %w", err)
	}
	_, err = s.o.Store.CompleteRunnerJob(ctx, p.Workspace, id, c.LeaseID, raw, s.o.Now())
	return err
}

// newLeaseID is a fresh random lease id.
func newLeaseID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "lease_" + hex.EncodeToString(b)
}
