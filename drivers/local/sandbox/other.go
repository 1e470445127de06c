//go:build !linux

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Runtime is Linux only: elsewhere every call says so.
type Runtime struct{}

// New returns a Runtime whose calls fail: sandboxes need Linux.
func New(o Options) (*Runtime, error) {
	if o.Root == "" {
		return nil, errors.New("sandbox: Options.Root is required")
	}
	return &Runtime{}, nil
}

func (r *Runtime) err() error {
	return fmt.Errorf("%w: sandboxes run on Linux only (this is %s)", ErrUnavailable, runtime.GOOS)
}

func (r *Runtime) Available() error { return r.err() }
func (r *Runtime) Create(context.Context, string, v1.Image, CreateOptions) (Info, error) {
	return Info{}, r.err()
}
func (r *Runtime) Start(context.Context, string) (Info, error) { return Info{}, r.err() }
func (r *Runtime) Exec(context.Context, string, string, time.Duration) (ExecResult, error) {
	return ExecResult{}, r.err()
}
func (r *Runtime) Changes(context.Context, string) (v1.Layer, int64, error) { return nil, 0, r.err() }
func (r *Runtime) Lookup(context.Context, string) (Info, error)             { return Info{}, r.err() }
func (r *Runtime) List(context.Context) ([]Info, error)                     { return nil, r.err() }
func (r *Runtime) Stop(context.Context, string) error                       { return r.err() }
func (r *Runtime) Remove(context.Context, string) error                     { return r.err() }
func (r *Runtime) Pause(context.Context, string) error                      { return r.err() }
func (r *Runtime) Resume(context.Context, string) error                     { return r.err() }
func (r *Runtime) RemoveAll(context.Context) error                          { return r.err() }
