// Command withpg runs a command with a PostgreSQL database available:
//
//	go run ./internal/cmd/withpg -- go test ./...
//
// When DATABASE_URL is set it just runs the command. Otherwise, if the
// PostgreSQL server binaries are installed, it starts a throwaway cluster
// (internal/testing/pgcluster), runs the command with DATABASE_URL pointing at it,
// then stops and removes the cluster. It exits with the command's status.
// Without binaries it runs the command anyway (PostgreSQL tests skip), except
// when CI=true: there a missing PostgreSQL is a failure, and it exits 1.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"svc/internal/testing/pgcluster"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

// run runs args as a command and returns the exit status to use.
func run(args []string) int {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: withpg [--] command [args...]")
		return 2
	}
	if os.Getenv("DATABASE_URL") == "" {
		c, err := pgcluster.Start(context.Background())
		switch {
		case errors.Is(err, pgcluster.ErrNoBinaries) && os.Getenv("CI") == "true":
			fmt.Fprintln(os.Stderr, "withpg: CI=true and no PostgreSQL: install the server (apt-get install postgresql) or set DATABASE_URL")
			return 1
		case errors.Is(err, pgcluster.ErrNoBinaries):
			fmt.Fprintln(os.Stderr, "withpg: no PostgreSQL binaries and no DATABASE_URL; running without a database")
		case err != nil:
			fmt.Fprintln(os.Stderr, "withpg:", err)
			return 1
		default:
			defer func() {
				if err := c.Stop(); err != nil {
					fmt.Fprintln(os.Stderr, "withpg:", err)
				}
			}()
			os.Setenv("DATABASE_URL", c.URL())
		}
	}
	return runCommand(args)
}

// runCommand runs args with our standard streams, forwards SIGINT and
// SIGTERM to it, and returns its exit status (128+signal when a signal
// ended it, as a shell reports).
func runCommand(args []string) int {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// Catch the signals before starting, so none can kill us between start
	// and Notify and leave the cluster behind.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "withpg:", err)
		return 127
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case sig := <-sigs:
			_ = cmd.Process.Signal(sig)
		case err := <-done:
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
					return 128 + int(ws.Signal())
				}
				return exit.ExitCode()
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "withpg:", err)
				return 1
			}
			return 0
		}
	}
}
