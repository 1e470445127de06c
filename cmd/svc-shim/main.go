// Command svc-shim supervises the jobs of svc's local runtime: as svc's
// job server (one per worker, forking every harness), or per case beside
// the harness. It imports nothing but the standard library and
// drivers/local/shim so that it costs a few milliseconds to start (svc
// itself, linking Temporal's server, costs 170 ms). It is not meant to be
// run by hand; see docs/runtimes.md.
package main

import (
	"os"

	"svc/drivers/local/shim"
)

func main() { os.Exit(shim.Main()) }
