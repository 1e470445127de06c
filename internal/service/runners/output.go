package runners

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"svc/auth"
	"svc/internal/platform/derrors"
	"svc/store"
)

// AppendLogs stores chunks of job id's output that its runner read while
// the job runs, for the worker's driver to hand to the run's log. The
// lease must still hold the job: a runner that lost it gets a conflict
// (and kills the job), so two leases' output never mix.
func (s *Service) AppendLogs(ctx context.Context, p auth.Principal, id string, b LogBatch) error {
	if err := s.findThenRequireRunner(ctx, p, id); err != nil {
		return err
	}
	if b.LeaseID == "" {
		return derrors.Invalidf("leaseId is required: the id the lease answered with")
	}
	if len(b.Chunks) > MaxLogBatchChunks {
		return derrors.Invalidf("%d chunks in one post: send at most %d", len(b.Chunks), MaxLogBatchChunks)
	}
	size, now := 0, s.o.Now()
	chunks := make([]store.RunnerLogChunk, len(b.Chunks))
	for i, c := range b.Chunks {
		if c.Seq < 1 {
			return derrors.Invalidf("chunks[%d].seq %d: number a lease's chunks from 1", i, c.Seq)
		}
		if i > 0 && c.Seq <= b.Chunks[i-1].Seq {
			return derrors.Invalidf("chunks[%d].seq %d does not follow %d: send chunks in seq order", i, c.Seq, b.Chunks[i-1].Seq)
		}
		if c.Stream != "stdout" && c.Stream != "stderr" && c.Stream != "system" {
			return derrors.Invalidf("chunks[%d].stream %q: give stdout, stderr or system", i, c.Stream)
		}
		size += len(c.Data)
		chunks[i] = store.RunnerLogChunk{Seq: c.Seq, Stream: c.Stream, Data: c.Data, At: now}
	}
	if size > MaxLogBatchBytes {
		return fmt.Errorf("%w: %d bytes of output in one post: send at most %d", derrors.ErrTooLarge, size, MaxLogBatchBytes)
	}
	return s.o.Store.AppendRunnerJobLogs(ctx, p.Workspace, id, b.LeaseID, chunks, maxJobLogStored)
}

// otlpTokenSlack is how long past the job's timeout its token lives, at
// most: the lease check ends it sooner when the job ends or is lost.
const otlpTokenSlack = 5 * time.Minute

// noTimeoutTokenLife bounds the token of a job without a timeout.
const noTimeoutTokenLife = 24 * time.Hour

// mintOTLPToken makes job j's run-scoped OTLP token for lease leaseID and
// stores its hash.
func (s *Service) mintOTLPToken(ctx context.Context, j store.RunnerJob, leaseID string, timeoutMs int64, now time.Time) (string, error) {
	life := noTimeoutTokenLife
	if timeoutMs > 0 {
		life = time.Duration(timeoutMs)*time.Millisecond + otlpTokenSlack
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	token := OTLPTokenPrefix + base64.RawURLEncoding.EncodeToString(b)
	sum := sha256.Sum256([]byte(token))
	err := s.o.Store.PutRunnerJobToken(ctx, store.RunnerJobToken{Hash: sum[:], Workspace: j.Workspace, JobID: j.ID,
		LeaseID: leaseID, RunID: j.RunID, IssuedAt: now, ExpiresAt: now.Add(life)})
	if err != nil {
		return "", err
	}
	return token, nil
}

// OTLPGrant is what a run-scoped OTLP token allows: spans of run RunID in
// Workspace.
type OTLPGrant struct {
	Workspace, RunID, JobID string
}

// IsOTLPToken reports whether bearer is a run-scoped OTLP token (by its
// prefix; VerifyOTLPToken says whether it is good).
func IsOTLPToken(bearer string) bool { return strings.HasPrefix(bearer, OTLPTokenPrefix) }

// errBadOTLPToken is the one answer for every token that does not verify,
// so a guess learns nothing of why.
var errBadOTLPToken = fmt.Errorf("%w: the run token is unknown, expired, or its job has ended or moved to another runner", derrors.ErrUnauthenticated)

// VerifyOTLPToken checks a run-scoped OTLP token: known, not expired, and
// its lease still holding its job (so it dies when the job ends, is
// cancelled and reported, or is lost to another runner).
func (s *Service) VerifyOTLPToken(ctx context.Context, token string) (OTLPGrant, error) {
	body, ok := strings.CutPrefix(token, OTLPTokenPrefix)
	if !ok || len(body) != base64.RawURLEncoding.EncodedLen(32) {
		return OTLPGrant{}, errBadOTLPToken
	}
	sum := sha256.Sum256([]byte(token))
	t, err := s.o.Store.RunnerJobTokenByHash(ctx, sum[:])
	if errors.Is(err, derrors.ErrNotFound) {
		return OTLPGrant{}, errBadOTLPToken
	}
	if err != nil {
		return OTLPGrant{}, err
	}
	now := s.o.Now()
	if subtle.ConstantTimeCompare(t.Hash, sum[:]) != 1 || !now.Before(t.ExpiresAt) {
		return OTLPGrant{}, errBadOTLPToken
	}
	j, err := s.o.Store.GetRunnerJob(ctx, t.Workspace, t.JobID)
	if errors.Is(err, derrors.ErrNotFound) {
		return OTLPGrant{}, errBadOTLPToken
	}
	if err != nil {
		return OTLPGrant{}, err
	}
	if j.State != store.RunnerJobLeased || subtle.ConstantTimeCompare([]byte(j.LeaseID), []byte(t.LeaseID)) != 1 ||
		j.LeaseExpires == nil || !now.Before(*j.LeaseExpires) || j.RunID != t.RunID {
		return OTLPGrant{}, errBadOTLPToken
	}
	return OTLPGrant{Workspace: t.Workspace, RunID: t.RunID, JobID: t.JobID}, nil
}
