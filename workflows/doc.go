// Package workflows holds Temporal workflow code only: deterministic, no I/O,
// no clocks, no maps iterated for order. Every side effect is an activity in
// package activities, called through a nil *activities.Activities.
package workflows

import "go.temporal.io/sdk/worker"

// Register adds every workflow of svc to r. It registers nothing yet: the
// binary wires it now so that each workflow added later is one line here.
func Register(r worker.Registry) {
	_ = r
}
