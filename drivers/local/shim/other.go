//go:build !linux

package shim

import (
	"fmt"
	"os"
	"runtime"
)

// Main refuses: the shim's guarantees are built on Linux.
func Main() int {
	fmt.Fprintf(os.Stderr, "svc-shim: jobs run only on Linux; this is %s\n", runtime.GOOS)
	return 2
}
