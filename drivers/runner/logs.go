package runner

import (
	"context"
	"fmt"

	"svc/drivers"
)

// logPage is how many chunks one read of the queue's log takes.
const logPage = 256

// logStream hands a runner job's output to j.Log while it runs, as its
// runner posts it (runners.LogBatch): the chunks of the lease that holds
// the job, in their order, each once. When the job moves to another lease
// (its runner died and another leased it), the rest of the old lease's
// chunks are never read: a system line says the job started again, and
// the new lease's chunks follow from its first, so the output of two
// runs of the job is never interleaved, nor any chunk given twice.
type logStream struct {
	d  *Driver
	j  drivers.Job
	id string

	lease string // the lease whose chunks are being read
	after int64  // the last seq handed on
	given bool   // some chunk of some lease was handed on
}

// pump hands on the chunks row's lease posted since the last call. A read
// that fails is retried on the next call: the chunks wait in the queue.
func (s *logStream) pump(ctx context.Context, row Job) {
	if s.j.Log == nil || row.LeaseID == "" {
		return
	}
	if row.LeaseID != s.lease {
		if s.given {
			s.j.Log("system", fmt.Appendf(nil, "svc: the runner running this job stopped heartbeating and lost it; runner %s runs it again from the start (lease %d); its output follows\n", row.Runner, row.Leases))
		}
		s.lease, s.after = row.LeaseID, 0
	}
	for {
		chunks, err := s.d.o.Queue.Logs(ctx, s.d.o.Workspace, s.id, s.lease, s.after, logPage)
		if err != nil {
			s.d.o.Logger.Warn("runner driver: reading a job's output failed; trying again", "job", s.id, "err", err)
			return
		}
		for _, c := range chunks {
			s.j.Log(c.Stream, c.Data)
			s.after, s.given = c.Seq, true
		}
		if len(chunks) < logPage {
			return
		}
	}
}

// streamed reports whether lease's chunks were handed on.
func (s *logStream) streamed(lease string) bool { return s.given && s.lease == lease && s.after > 0 }
