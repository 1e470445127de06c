//go:build !linux

package local

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"

	"svc/drivers"
)

// run refuses: the guarantees of this driver (the whole process tree dies
// with the job and with the service) are built on Linux's child subreaper,
// Pdeathsig and /proc.
func (d *Driver) run(context.Context, drivers.Job) (drivers.Result, error) {
	return drivers.Result{}, fmt.Errorf("local driver: jobs run only on Linux workers; this worker runs %s", runtime.GOOS)
}

// ShimName is the file name of the supervisor program, installed beside svc.
const ShimName = "svc-shim"

// FindShim returns "": there is no local runtime on this system.
func FindShim() string { return "" }

// DefaultUser is the user jobs run as when the service runs as root.
const DefaultUser = "svc-job"

// ResolveUser refuses: jobs run only on Linux.
func ResolveUser(string) (int, int, error) {
	return 0, 0, fmt.Errorf("local jobs run only on Linux; this is %s", runtime.GOOS)
}

// Check reports that jobs cannot run here.
func (d *Driver) Check(context.Context) error {
	if d.isolate == nil || d.off != "" {
		return nil
	}
	return fmt.Errorf("local driver: jobs run only on Linux workers; this worker runs %s", runtime.GOOS)
}

// jobServer is the Linux job server; there is none here.
type jobServer struct{}

// netState is the Linux isolated network's; there is none here.
type netState struct{}

// Close has nothing to stop here.
func (d *Driver) Close() error { return nil }

// DefaultRoot returns dataDir/work: jobs run only on Linux.
func DefaultRoot(dataDir string) (root, note string) { return filepath.Join(dataDir, "work"), "" }
