package app

import (
	"context"
	"time"

	"go.temporal.io/sdk/worker"

	"svc/activities"
	"svc/internal/platform/config"
)

// notificationDrainInterval is how often the worker looks for notification
// deliveries that are due.
const notificationDrainInterval = 500 * time.Millisecond

// startNotificationDrainer drains the notification delivery outbox in the
// background with the worker's webhook guard, client and sealer, and
// sweeps approval notifications whose approval is settled or gone every
// SVC_APPROVAL_NOTICE_SWEEP, until the returned worker is stopped.
func startNotificationDrainer(cfg config.Config, d Deps, acts *activities.Activities, w worker.Worker) worker.Worker {
	ctx, cancel := context.WithCancel(context.Background())
	drainer := &activities.NotificationDrainer{Store: d.Store, Sealer: acts.Sealer, Guard: acts.Guard, HTTP: acts.HTTP,
		PublicURL: cfg.PublicURL, SweepEvery: cfg.ApprovalNoticeSweep, Logger: d.Logger}
	done := make(chan struct{})
	go func() {
		defer close(done)
		drainer.Run(ctx, notificationDrainInterval)
	}()
	return drainingWorker{Worker: w, stop: func() { cancel(); <-done }}
}

// drainingWorker is a worker with the notification drainer: stopping it
// stops the drainer first.
type drainingWorker struct {
	worker.Worker
	stop func()
}

func (w drainingWorker) Stop() {
	w.stop()
	w.Worker.Stop()
}
