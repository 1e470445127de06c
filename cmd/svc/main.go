// Command svc is the evaluation control plane: one binary with the roles
// dev (everything in one process), serve (API), worker (Temporal worker),
// migrate and version. `svc help` lists the commands and every setting.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"svc/config"
)

// command is one subcommand of svc.
type command struct {
	name  string
	short string
	run   func(ctx context.Context, cfg config.Config, args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"dev", "run everything in one process: embedded Temporal, embedded SQLite store, API and worker", runDev},
		{"serve", "run the HTTP API against PostgreSQL (DATABASE_URL) and Temporal (TEMPORAL_ADDRESS)", runServe},
		{"worker", "run the Temporal worker (workflows and activities) against PostgreSQL and Temporal", runWorker},
		{"migrate", "apply database migrations (PostgreSQL when DATABASE_URL is set, else the embedded SQLite store)", runMigrate},
		{"version", "print the version and build information", runVersion},
	}
}

// errUsage marks a usage error: exit code 2.
var errUsage = errors.New("usage")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes one svc invocation and returns its exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		printHelp(stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		fs := flag.NewFlagSet("svc "+c.name, flag.ContinueOnError)
		fs.SetOutput(stderr)
		fs.Usage = func() {
			fmt.Fprintf(stderr, "usage: svc %s [flags]\n\n%s\n\nSettings (a flag wins over its environment variable):\n", c.name, c.short)
			config.PrintSettings(stderr)
		}
		cfg, err := config.Load(fs, args[1:], config.Environ)
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		if err != nil {
			fmt.Fprintf(stderr, "svc %s: %v\n", c.name, err)
			return 2
		}
		if err := c.run(ctx, cfg, fs.Args(), stdout, stderr); err != nil {
			fmt.Fprintf(stderr, "svc %s: %v\n", c.name, err)
			if errors.Is(err, errUsage) {
				return 2
			}
			return 1
		}
		return 0
	}
	fmt.Fprintf(stderr, "svc: unknown command %q; run `svc help` for the list\n", args[0])
	return 2
}

func printHelp(w io.Writer) {
	fmt.Fprintln(w, "svc: a multi-tenant control plane for evaluating AI agents.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "usage: svc <command> [flags]     (svc <command> -h for that command)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.short)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Settings (flag, environment variable, default):")
	config.PrintSettings(w)
}
