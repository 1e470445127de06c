package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"svc/internal/platform/config"
)

// runVersion prints the version, the Go version and the VCS stamp.
func runVersion(_ context.Context, _ config.Config, _ []string, stdout, _ io.Writer) error {
	fmt.Fprintf(stdout, "svc %s (%s %s/%s)\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision", "vcs.time", "vcs.modified":
				fmt.Fprintf(stdout, "%s=%s\n", s.Key, s.Value)
			}
		}
	}
	return nil
}
