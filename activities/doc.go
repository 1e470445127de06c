// Package activities holds every side effect a workflow needs (dispatching a
// case through a driver, running judges, persisting results, webhooks). The
// activities are methods on Activities, which carries their dependencies, so
// workflows name them through a nil pointer:
//
//	var a *activities.Activities
//	workflow.ExecuteActivity(ctx, a.RunCase, in)
package activities

import (
	"go.temporal.io/sdk/worker"

	"svc/store"
)

// Activities carries the dependencies of every activity method.
type Activities struct {
	Store store.Store // the records activities read and write
}

// Register adds a's activity methods to r. It registers nothing yet: the SDK
// refuses a struct without exported methods, so the first activity added
// also adds r.RegisterActivity(a) here.
func Register(r worker.Registry, a *Activities) {
	_, _ = r, a
}
