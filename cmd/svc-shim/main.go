// Command svc-shim supervises one job of svc's local runtime: svc starts
// it per case, beside the harness, and it imports nothing but the standard
// library and drivers/local/shim so that it costs about a millisecond to
// start (svc itself, linking Temporal's server, costs 170 ms). It is not
// meant to be run by hand; see docs/runtimes.md.
package main

import (
	"os"

	"svc/drivers/local/shim"
)

func main() { os.Exit(shim.Main()) }
