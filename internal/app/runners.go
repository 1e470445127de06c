package app

import (
	"svc/drivers/runner"
	"svc/internal/app/runnerqueue"
	"svc/internal/platform/secrets"
	"svc/internal/service/runners"
	"svc/store"
)

// RunnerQueue is the lease queue the worker's runner driver queues a
// self-hosted runtime's jobs in: the runners service's (runners.Queue)
// over st, sealing the jobs' secrets with sealer (nil without
// SVC_SECRET_KEY: a job with secrets is then refused).
func RunnerQueue(st store.Store, sealer *secrets.Sealer) runner.Queue {
	var s runners.Sealer
	if sealer != nil {
		s = sealer
	}
	return runnerqueue.New(runners.NewQueue(st, s))
}
