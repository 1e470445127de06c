// Command svc is the evaluation control plane: one binary with the roles
// dev (everything in one process), serve (API), worker (Temporal worker),
// migrate and version, and the client commands CI uses against a running
// service (scorecard, dataset, harness, judge, runs, diff, eval, gate,
// verify, sandbox, world, image, approvals, notifications, events;
// docs/cli.md). `svc help` lists the commands and every setting.
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

	"svc/internal/cli"
	"svc/internal/client"
	"svc/internal/platform/config"
)

// command is one subcommand of svc: a server role (run, reading the
// settings table) or a client command (client, with its own flags and exit
// codes).
type command struct {
	name   string
	short  string
	run    func(ctx context.Context, cfg config.Config, args []string, stdout, stderr io.Writer) error
	client cli.Command
}

func commands() []command {
	return []command{
		{"dev", "run everything in one process: embedded Temporal, embedded SQLite store, API and worker", runDev, nil},
		{"serve", "run the HTTP API against PostgreSQL (DATABASE_URL) and Temporal (TEMPORAL_ADDRESS)", runServe, nil},
		{"worker", "run the Temporal worker (workflows and activities) against PostgreSQL and Temporal", runWorker, nil},
		{"migrate", "apply database migrations (PostgreSQL when DATABASE_URL is set, else the embedded SQLite store)", runMigrate, nil},
		{"version", "print the version and build information", runVersion, nil},
		{"gate", "decide whether a candidate scorecard may replace a baseline (exit 0 pass, 1 block, 2 error)", nil, cli.RunGate},
		{"verify", "check a scorecard's sealed manifest against the registries now (exit 0 verified, 1 drift)", nil, cli.RunVerify},
		{"scorecard", "run, wait for, list, show, re-score or cancel scorecards", nil, cli.RunScorecard},
		{"diff", "compare two scorecards: cases that broke or were fixed, with both answers", nil, cli.RunDiff},
		{"dataset", "push a dataset from JSON, JSONL or CSV; diff or list datasets", nil, cli.RunDataset},
		{"harness", "register a harness from a JSON or YAML file; list harnesses", nil, cli.RunHarness},
		{"judge", "register a code judge from its source file; list judges", nil, cli.RunJudge},
		{"runs", "print a run's logs or its trajectory", nil, cli.RunRuns},
		{"sandbox", "open a sandbox session from an image or a world; exec in it, snapshot, touch, close, ls, get", nil, cli.RunSandbox},
		{"world", "list the workspace's worlds (saved sandbox states) or one world's versions", nil, cli.RunWorld},
		{"image", "import an image (an OCI layout directory, a docker save or OCI tar) into the image store", nil, cli.RunImage},
		{"eval", "run an eval file: push, run, wait and gate in one command (CI)", nil, cli.RunEval},
		{"approvals", "list, show, approve or deny agents' parked calls; read or set the approval policies", nil, cli.RunApprovals},
		{"notifications", "list or mark read your notifications; add, list, remove or re-enable delivery channels", nil, cli.RunNotifications},
		{"events", "read the workspace's event log, newest first, by type or glob (--all follows every page)", nil, cli.RunEvents},
		{"runner", "a self-hosted runner: lease a workspace's jobs and run them on this machine (--url, --workers)", nil, cli.Runner(openLocalDriver)},
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
		if c.client != nil {
			return cli.Run(ctx, c.name, c.client, args[1:], stdout, stderr, config.Environ)
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
		if c.client == nil {
			fmt.Fprintf(w, "  %-13s %s\n", c.name, c.short)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Client commands, against a running svc (docs/cli.md; `svc <command> -h` for each):")
	for _, c := range commands() {
		if c.client != nil {
			fmt.Fprintf(w, "  %-13s %s\n", c.name, c.short)
		}
	}
	fmt.Fprintf(w, "  Connection: --url or %s (default %s); --workspace or %s;\n", client.EnvURL, client.DefaultURL, client.EnvWorkspace)
	fmt.Fprintf(w, "  a bearer token from %s (environment only, never printed).\n", client.EnvToken)
	fmt.Fprintln(w, "  Output: a table by default, --json for the service's JSON, --format csv|jsonl|md where there are rows.")
	fmt.Fprintln(w, "  Exit codes: 0 ok, 1 a verdict against (block, drift, a failed batch), 2 usage or service error.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Settings of the server commands (flag, environment variable, default):")
	config.PrintSettings(w)
}
