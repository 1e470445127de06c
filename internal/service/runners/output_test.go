package runners_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"svc/auth"
	"svc/internal/platform/derrors"
	"svc/internal/service/runners"
	"svc/store"
	"svc/store/sqlite/sqlitetest"
)

var (
	acmeRunner = auth.Principal{Subject: "runner-1", Workspace: "acme", Via: auth.ViaRunner, Roles: []auth.Role{auth.RoleMember}, KeyID: "rk1"}
	betaRunner = auth.Principal{Subject: "runner-2", Workspace: "beta", Via: auth.ViaRunner, Roles: []auth.Role{auth.RoleMember}, KeyID: "rk2"}
	acmePerson = auth.Principal{Subject: "alice", Workspace: "acme", Via: auth.ViaOIDC, Roles: []auth.Role{auth.RoleAdmin}}
)

// fixture is a Service on a fresh store, with clock now, and one job of
// run1 queued in acme.
type fixture struct {
	st  store.Store
	svc *runners.Service
	now time.Time
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{st: sqlitetest.New(t), now: time.Now().UTC()}
	f.svc = runners.New(runners.Options{Store: f.st, Now: func() time.Time { return f.now }})
	payload, _ := json.Marshal(runners.Job{RunID: "run1", Attempt: 1, Command: []string{"/bin/true"}, Case: json.RawMessage(`{}`), TimeoutMs: 60000})
	if _, _, err := f.st.EnqueueRunnerJob(t.Context(), store.RunnerJob{ID: runners.JobID("run1", 1), Workspace: "acme", Runtime: "own",
		RunID: "run1", Attempt: 1, Payload: payload, CreatedAt: f.now}); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) lease(t *testing.T) *runners.Lease {
	t.Helper()
	l, err := f.svc.Lease(t.Context(), acmeRunner, runners.LeaseRequest{WaitMs: 1})
	if err != nil || l == nil {
		t.Fatalf("Lease = %+v, %v; want the queued job", l, err)
	}
	return l
}

func TestAppendLogs(t *testing.T) {
	f := newFixture(t)
	l := f.lease(t)
	ok := runners.LogBatch{LeaseID: l.LeaseID, Chunks: []runners.LogChunk{{Seq: 1, Stream: "stdout", Data: []byte("hi\n")}}}
	if err := f.svc.AppendLogs(t.Context(), acmeRunner, l.JobID, ok); err != nil {
		t.Fatalf("AppendLogs: %v", err)
	}
	// The same post again stores nothing more.
	if err := f.svc.AppendLogs(t.Context(), acmeRunner, l.JobID, ok); err != nil {
		t.Fatalf("AppendLogs again: %v", err)
	}
	got, err := f.st.ListRunnerJobLogs(t.Context(), "acme", l.JobID, l.LeaseID, 0, 10)
	if err != nil || len(got) != 1 || string(got[0].Data) != "hi\n" {
		t.Errorf("stored chunks %+v, %v; want the one chunk once", got, err)
	}

	big := make([]runners.LogChunk, 0, 17)
	for i := range 17 {
		big = append(big, runners.LogChunk{Seq: int64(10 + i), Stream: "stdout", Data: make([]byte, 64<<10)})
	}
	many := make([]runners.LogChunk, runners.MaxLogBatchChunks+1)
	for i := range many {
		many[i] = runners.LogChunk{Seq: int64(i + 1), Stream: "stdout"}
	}
	for _, tc := range []struct {
		name string
		p    auth.Principal
		id   string
		b    runners.LogBatch
		want error
	}{
		{"another workspace's job is not found", betaRunner, l.JobID, ok, derrors.ErrNotFound},
		{"a person's credential is refused", acmePerson, l.JobID, ok, derrors.ErrForbidden},
		{"no lease id", acmeRunner, l.JobID, runners.LogBatch{Chunks: ok.Chunks}, derrors.ErrInvalid},
		{"another lease", acmeRunner, l.JobID, runners.LogBatch{LeaseID: "lease_other", Chunks: ok.Chunks}, derrors.ErrConflict},
		{"seq 0", acmeRunner, l.JobID, runners.LogBatch{LeaseID: l.LeaseID, Chunks: []runners.LogChunk{{Seq: 0, Stream: "stdout"}}}, derrors.ErrInvalid},
		{"seq out of order", acmeRunner, l.JobID, runners.LogBatch{LeaseID: l.LeaseID, Chunks: []runners.LogChunk{{Seq: 3, Stream: "stdout"}, {Seq: 2, Stream: "stdout"}}}, derrors.ErrInvalid},
		{"unknown stream", acmeRunner, l.JobID, runners.LogBatch{LeaseID: l.LeaseID, Chunks: []runners.LogChunk{{Seq: 5, Stream: "stdin"}}}, derrors.ErrInvalid},
		{"too many chunks", acmeRunner, l.JobID, runners.LogBatch{LeaseID: l.LeaseID, Chunks: many}, derrors.ErrInvalid},
		{"too many bytes", acmeRunner, l.JobID, runners.LogBatch{LeaseID: l.LeaseID, Chunks: big}, derrors.ErrTooLarge},
	} {
		if err := f.svc.AppendLogs(t.Context(), tc.p, tc.id, tc.b); !errors.Is(err, tc.want) {
			t.Errorf("%s: AppendLogs = %v, want %v", tc.name, err, tc.want)
		}
	}

	// A lease's output is bounded in all.
	seq := int64(100)
	var err2 error
	for sent := 0; sent <= runners.MaxJobLog+(1<<20) && err2 == nil; sent += 1 << 20 {
		var b runners.LogBatch
		b.LeaseID = l.LeaseID
		for range 16 {
			seq++
			b.Chunks = append(b.Chunks, runners.LogChunk{Seq: seq, Stream: "stdout", Data: make([]byte, 64<<10)})
		}
		err2 = f.svc.AppendLogs(t.Context(), acmeRunner, l.JobID, b)
	}
	if !errors.Is(err2, derrors.ErrTooLarge) {
		t.Errorf("posting past %d bytes = %v, want too large", runners.MaxJobLog, err2)
	}

	// Once the job is done its lease posts nothing more.
	raw, _ := json.Marshal(runners.Result{})
	if err := f.svc.Complete(t.Context(), acmeRunner, l.JobID, runners.Completion{LeaseID: l.LeaseID, Result: runners.Result{}}); err != nil {
		t.Fatal(err, string(raw))
	}
	late := runners.LogBatch{LeaseID: l.LeaseID, Chunks: []runners.LogChunk{{Seq: 1000, Stream: "stdout", Data: []byte("x")}}}
	if err := f.svc.AppendLogs(t.Context(), acmeRunner, l.JobID, late); !errors.Is(err, derrors.ErrConflict) {
		t.Errorf("a post after the result = %v, want a conflict", err)
	}
}

// TestOTLPToken: a lease carries a run-scoped token that verifies as its
// run's while the lease holds the job, and not after the job ended, nor
// once the lease was lost, nor past its expiry; it is stored hashed.
func TestOTLPToken(t *testing.T) {
	t.Run("while the lease holds the job", func(t *testing.T) {
		f := newFixture(t)
		l := f.lease(t)
		if !strings.HasPrefix(l.OTLPToken, runners.OTLPTokenPrefix) || !runners.IsOTLPToken(l.OTLPToken) {
			t.Fatalf("lease token %q, want an %s token", l.OTLPToken, runners.OTLPTokenPrefix)
		}
		g, err := f.svc.VerifyOTLPToken(t.Context(), l.OTLPToken)
		if err != nil || g.Workspace != "acme" || g.RunID != "run1" || g.JobID != l.JobID {
			t.Fatalf("VerifyOTLPToken = %+v, %v; want run1 of acme", g, err)
		}
		if _, err := f.st.RunnerJobTokenByHash(t.Context(), []byte(l.OTLPToken)); !errors.Is(err, derrors.ErrNotFound) {
			t.Errorf("the token is stored as itself (%v), want only its hash", err)
		}
		for _, bad := range []string{"", "rjt_", l.OTLPToken + "x", "rjt_" + strings.Repeat("A", 43), l.LeaseID} {
			if _, err := f.svc.VerifyOTLPToken(t.Context(), bad); !errors.Is(err, derrors.ErrUnauthenticated) {
				t.Errorf("VerifyOTLPToken(%q) = %v, want unauthenticated", bad, err)
			}
		}
		// Past its expiry (the job's timeout and a margin) it is refused,
		// even were the lease still renewed.
		f.now = f.now.Add(time.Minute + 6*time.Minute)
		if _, err := f.st.RenewRunnerLease(t.Context(), "acme", l.JobID, l.LeaseID, f.now, f.now.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.VerifyOTLPToken(t.Context(), l.OTLPToken); !errors.Is(err, derrors.ErrUnauthenticated) {
			t.Errorf("an expired token = %v, want unauthenticated", err)
		}
	})
	t.Run("revoked when the job ends", func(t *testing.T) {
		f := newFixture(t)
		l := f.lease(t)
		if err := f.svc.Complete(t.Context(), acmeRunner, l.JobID, runners.Completion{LeaseID: l.LeaseID}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.VerifyOTLPToken(t.Context(), l.OTLPToken); !errors.Is(err, derrors.ErrUnauthenticated) {
			t.Errorf("the token of a finished job = %v, want unauthenticated", err)
		}
		if err := f.st.DeleteRunnerJob(t.Context(), "acme", l.JobID); err != nil {
			t.Fatal(err)
		}
		if err := f.st.DeleteRunnerJobOutput(t.Context(), "acme", l.JobID); err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.VerifyOTLPToken(t.Context(), l.OTLPToken); !errors.Is(err, derrors.ErrUnauthenticated) {
			t.Errorf("the token of a deleted job = %v, want unauthenticated", err)
		}
	})
	t.Run("revoked when the lease is lost", func(t *testing.T) {
		f := newFixture(t)
		first := f.lease(t)
		// The runner stops heartbeating; past its lease another takes it.
		f.now = f.now.Add(time.Minute)
		second := f.lease(t)
		if second.JobID != first.JobID || second.OTLPToken == first.OTLPToken {
			t.Fatalf("second lease %+v, want the same job with a new token", second)
		}
		if _, err := f.svc.VerifyOTLPToken(t.Context(), first.OTLPToken); !errors.Is(err, derrors.ErrUnauthenticated) {
			t.Errorf("the lost lease's token = %v, want unauthenticated", err)
		}
		if g, err := f.svc.VerifyOTLPToken(t.Context(), second.OTLPToken); err != nil || g.RunID != "run1" {
			t.Errorf("the new lease's token = %+v, %v", g, err)
		}
	})
}
