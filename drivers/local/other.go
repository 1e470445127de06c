//go:build !linux

package local

import (
	"context"
	"fmt"
	"runtime"

	"svc/drivers"
)

// run refuses: the guarantees of this driver (the whole process tree dies
// with the job and with the service) are built on Linux's child subreaper,
// Pdeathsig and /proc.
func (d *Driver) run(context.Context, drivers.Job) (drivers.Result, error) {
	return drivers.Result{}, fmt.Errorf("local driver: jobs run only on Linux workers; this worker runs %s", runtime.GOOS)
}
