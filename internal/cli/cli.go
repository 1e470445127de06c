// Package cli holds the `svc` client commands (gate, verify, scorecard,
// diff, dataset, harness, judge, runs, eval, runner; docs/cli.md): each
// parses its own flags, talks to a running svc through internal/client,
// and writes tables, progress lines or the service's JSON to the streams
// it is given. cmd/svc names them in its command table and wires what they
// need from the server side (the local driver of `svc runner`).
package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"svc/internal/client"

	"golang.org/x/term"
)

// Exit codes of the client commands: CI branches on them (docs/ci.md).
const (
	exitOK      = 0 // pass, verified, succeeded
	exitVerdict = 1 // block, blocked_missing, not_comparable, drift, a failed or cancelled batch
	exitProblem = 2 // a usage error, an unreachable or failing service
)

// The client commands talk to a running svc over HTTP (internal/client).
// They read their own environment (client.EnvURL, EnvToken, EnvWorkspace)
// rather than config.Settings: those are the server's settings, and a CI
// job that only gates should not see (or be able to set) the server's
// database or Temporal flags.

// errUsage marks a usage error: exit code 2. A request the command line
// made unbuildable is one too.
var errUsage = client.ErrUsage

// cli is what a client command reads and writes: its streams, its
// environment, and whether stderr is a terminal (progress then rewrites
// one line instead of printing a line per tenth of the batch done).
type cli struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	tty            bool
	// width is the terminal's width in columns, or 0 when unknown (nil
	// means unknown too): a rewritten line longer than that would wrap,
	// and the carriage return would then redraw only its last row.
	width func() int
	// poll is the interval between progress reads of --wait.
	poll time.Duration
}

// newCLI returns the cli of a real invocation.
func newCLI(stdout, stderr io.Writer, getenv func(string) string) *cli {
	x := &cli{stdout: stdout, stderr: stderr, getenv: getenv, tty: isTerminal(stderr), poll: time.Second}
	if f, ok := stderr.(*os.File); ok && x.tty {
		x.width = func() int {
			w, _, err := term.GetSize(int(f.Fd()))
			if err != nil {
				return 0
			}
			return w
		}
	}
	return x
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// clientFlags are the connection flags every client command takes.
type clientFlags struct {
	url       string
	workspace string
}

// register adds --url and --workspace to fs, defaulting from the environment.
func (f *clientFlags) register(fs *flag.FlagSet, getenv func(string) string) {
	def := getenv(client.EnvURL)
	if def == "" {
		def = client.DefaultURL
	}
	fs.StringVar(&f.url, "url", def, "base URL of the svc API (env "+client.EnvURL+")")
	fs.StringVar(&f.workspace, "workspace", getenv(client.EnvWorkspace), "workspace to act in, sent as "+client.WorkspaceHeader+" (env "+client.EnvWorkspace+"); default: the token's own")
}

// client builds the API client of these flags; the token comes from the
// environment only, so it never appears in argv or in shell history.
func (f *clientFlags) client(getenv func(string) string) (*client.Client, error) {
	u, err := url.Parse(f.url)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: --url %q is not an http(s) URL such as %s", errUsage, f.url, client.DefaultURL)
	}
	return client.New(strings.TrimRight(f.url, "/"), strings.TrimSpace(getenv(client.EnvToken)), f.workspace), nil
}

// tableClient checks a command's --format, then builds its client: the
// start of every command that prints records.
func (f *clientFlags) tableClient(getenv func(string) string, format string) (*client.Client, error) {
	if err := checkFormat(format); err != nil {
		return nil, err
	}
	return f.client(getenv)
}

// oneArg parses the command line of a command that takes one argument
// (what names it in the usage error), then builds its client.
func (f *clientFlags) oneArg(fs *flag.FlagSet, args []string, what string, getenv func(string) string) (string, *client.Client, error) {
	arg, err := parseOne(fs, args, what)
	if err != nil {
		return "", nil, err
	}
	c, err := f.client(getenv)
	return arg, c, err
}

// parseArgs parses flags that may come before or after the positional
// arguments (`svc verify sc_1 --json` as well as `svc verify --json sc_1`),
// and returns the positional ones.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, flagsErr(err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if rest[0] == "--" {
			return append(pos, rest[1:]...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// parseOne is parseArgs for a command that takes exactly one positional
// argument, what (named in the usage error).
func parseOne(fs *flag.FlagSet, args []string, what string) (string, error) {
	pos, err := parseArgs(fs, args)
	if err != nil {
		return "", err
	}
	if len(pos) != 1 {
		return "", fmt.Errorf("%w: want exactly one %s, got %d arguments", errUsage, what, len(pos))
	}
	return pos[0], nil
}

// parseNone is parseArgs for a command that takes flags only.
func parseNone(fs *flag.FlagSet, args []string) error {
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, pos)
	}
	return nil
}

// Command is one client command: it returns its exit code, or an
// error that run prints and maps to exitProblem.
type Command func(ctx context.Context, x *cli, args []string) (int, error)

// Run runs the client command f, named name, with args, its streams and
// its environment (getenv), and returns its exit code: 0 ok, 1 a verdict
// against, 2 a usage or service error (printed as "svc <name>: <message>").
func Run(ctx context.Context, name string, f Command, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	return runClient(ctx, name, f, newCLI(stdout, stderr, getenv), args)
}

// runClient runs a client command and turns its error into the one line
// "svc <name>: <message>" and exit code 2.
func runClient(ctx context.Context, name string, f Command, x *cli, args []string) int {
	code, err := f(ctx, x, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.Is(err, errFlags):
		return exitProblem // the flag package has printed the problem and the usage
	case err != nil:
		fmt.Fprintf(x.stderr, "svc %s: %v\n", name, err)
		if errors.Is(err, errUsage) {
			fmt.Fprintf(x.stderr, "run `svc %s -h` for its flags\n", name)
		}
		return exitProblem
	}
	return code
}

// newFlagSet is a flag set whose usage text is the command's synopsis and
// its flags.
func newFlagSet(x *cli, name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet("svc "+name, flag.ContinueOnError)
	fs.SetOutput(x.stderr)
	fs.Usage = func() {
		fmt.Fprintln(x.stderr, synopsis)
		fmt.Fprintln(x.stderr)
		fmt.Fprintln(x.stderr, "Flags:")
		fs.PrintDefaults()
		fmt.Fprintf(x.stderr, "\nThe bearer token is read from %s (environment only, never printed).\n", client.EnvToken)
	}
	return fs
}

// errFlags marks a flag the flag package refused; it has already printed
// the problem and the usage, so runClient prints nothing more.
var errFlags = fmt.Errorf("%w: bad flags", errUsage)

// flagsErr maps a FlagSet.Parse error: -h stays ErrHelp, anything else is
// errFlags.
func flagsErr(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	return errFlags
}

// writeJSON writes raw JSON as the service sent it, newline-terminated, so
// a script sees every field, including ones this binary does not know.
func writeJSON(w io.Writer, raw []byte) {
	w.Write(bytes.TrimRight(raw, "\n"))
	io.WriteString(w, "\n")
}

// sub is one subcommand of a client command (svc scorecard list).
type sub struct {
	name string
	run  Command
}

// subcommand runs the subcommand args[0] names, or prints the synopsis
// for help.
func subcommand(ctx context.Context, x *cli, synopsis string, subs []sub, args []string) (int, error) {
	names := make([]string, len(subs))
	for i, s := range subs {
		names[i] = s.name
	}
	list := strings.Join(names, ", ")
	if len(args) == 0 {
		return 0, fmt.Errorf("%w: name a subcommand: %s", errUsage, list)
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(x.stderr, synopsis)
		return 0, flag.ErrHelp
	}
	for _, s := range subs {
		if s.name == args[0] {
			return s.run(ctx, x, args[1:])
		}
	}
	return 0, fmt.Errorf("%w: unknown subcommand %q: want one of %s", errUsage, args[0], list)
}
