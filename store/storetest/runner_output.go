package storetest

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"svc/internal/platform/derrors"
	"svc/store"
)

var runnerOutputCases = []Case{
	{"runner_job_output/logs_by_lease_once_and_bounded", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		now := time.Now()
		j, _ := enqueue(t, s, runnerJob("j1", "run1", "own", now))
		chunk := func(seq int64, data string) store.RunnerLogChunk {
			return store.RunnerLogChunk{Seq: seq, Stream: "stdout", Data: []byte(data), At: now}
		}
		if err := s.AppendRunnerJobLogs(ctx, "acme", j.ID, "L1", []store.RunnerLogChunk{chunk(1, "a")}, 100); !errors.Is(err, derrors.ErrConflict) {
			t.Errorf("appending to a queued job = %v, want a conflict", err)
		}
		if _, err := lease(s, t, "", "box", "L1", now); err != nil {
			t.Fatal(err)
		}
		bin := string([]byte{0xff, 0x00, 'x'})
		if err := s.AppendRunnerJobLogs(ctx, "acme", j.ID, "L1", []store.RunnerLogChunk{chunk(1, "a"), chunk(2, bin)}, 100); err != nil {
			t.Fatal(err)
		}
		if err := s.AppendRunnerJobLogs(ctx, "acme", j.ID, "L1", []store.RunnerLogChunk{chunk(2, "again"), chunk(3, "c")}, 100); err != nil {
			t.Fatal(err)
		}
		got, err := s.ListRunnerJobLogs(ctx, "acme", j.ID, "L1", 1, 10)
		if err != nil || len(got) != 2 || got[0].Seq != 2 || !bytes.Equal(got[0].Data, []byte(bin)) || string(got[1].Data) != "c" {
			t.Errorf("ListRunnerJobLogs after 1 = %+v, %v; want seq 2 (its bytes as sent, once) and 3", got, err)
		}
		if err := s.AppendRunnerJobLogs(ctx, "acme", j.ID, "L1", []store.RunnerLogChunk{chunk(4, string(make([]byte, 98)))}, 100); !errors.Is(err, derrors.ErrTooLarge) {
			t.Errorf("appending past the bound = %v, want too large", err)
		}
		if err := s.AppendRunnerJobLogs(ctx, "acme", j.ID, "L2", []store.RunnerLogChunk{chunk(1, "x")}, 100); !errors.Is(err, derrors.ErrConflict) {
			t.Errorf("appending under another lease = %v, want a conflict", err)
		}
		if err := s.AppendRunnerJobLogs(ctx, "beta", j.ID, "L1", []store.RunnerLogChunk{chunk(9, "x")}, 100); !errors.Is(err, derrors.ErrNotFound) {
			t.Errorf("appending to another workspace's job = %v, want not found", err)
		}
		for _, bad := range []store.RunnerLogChunk{{Seq: 0, Stream: "stdout"}, {Seq: 5, Stream: "stdin"}} {
			if err := s.AppendRunnerJobLogs(ctx, "acme", j.ID, "L1", []store.RunnerLogChunk{bad}, 100); !errors.Is(err, derrors.ErrInvalid) {
				t.Errorf("appending %+v = %v, want invalid", bad, err)
			}
		}
		if err := s.DeleteRunnerJob(ctx, "acme", j.ID); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteRunnerJobOutput(ctx, "acme", "other"); err != nil {
			t.Fatal(err)
		}
		if got, err := s.ListRunnerJobLogs(ctx, "acme", j.ID, "L1", 0, 10); err != nil || len(got) != 0 {
			t.Errorf("chunks of a deleted job after another job's delete = %+v, %v; want none", got, err)
		}
	}},
	{"runner_job_output/tokens_by_hash_expired_dropped", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		now := time.Now().UTC().Truncate(time.Microsecond)
		old := store.RunnerJobToken{Hash: []byte("old-hash-0123456789"), Workspace: "acme", JobID: "j0", LeaseID: "L0", RunID: "run0", IssuedAt: now.Add(-time.Hour), ExpiresAt: now.Add(-time.Minute)}
		tok := store.RunnerJobToken{Hash: []byte("new-hash-0123456789"), Workspace: "acme", JobID: "j1", LeaseID: "L1", RunID: "run1", IssuedAt: now, ExpiresAt: now.Add(time.Hour)}
		if err := s.PutRunnerJobToken(ctx, old); err != nil {
			t.Fatal(err)
		}
		if err := s.PutRunnerJobToken(ctx, tok); err != nil {
			t.Fatal(err)
		}
		got, err := s.RunnerJobTokenByHash(ctx, tok.Hash)
		if err != nil || got.Workspace != "acme" || got.JobID != "j1" || got.LeaseID != "L1" || got.RunID != "run1" || !got.ExpiresAt.Equal(tok.ExpiresAt) {
			t.Errorf("RunnerJobTokenByHash = %+v, %v; want %+v", got, err, tok)
		}
		if _, err := s.RunnerJobTokenByHash(ctx, old.Hash); !errors.Is(err, derrors.ErrNotFound) {
			t.Errorf("an expired token after a put = %v, want it dropped", err)
		}
		if err := s.PutRunnerJobToken(ctx, tok); !errors.Is(err, derrors.ErrConflict) {
			t.Errorf("the same hash twice = %v, want a conflict", err)
		}
		if err := s.DeleteRunnerJobOutput(ctx, "acme", "j1"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.RunnerJobTokenByHash(ctx, tok.Hash); !errors.Is(err, derrors.ErrNotFound) {
			t.Errorf("a deleted job's token = %v, want not found", err)
		}
	}},
}
