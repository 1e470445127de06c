package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"golang.org/x/term"
)

// The client commands (gate, verify, scorecard) talk to a running svc over
// HTTP. They read their own environment rather than config.Settings: those
// are the server's settings, and a CI job that only gates should not see
// (or be able to set) the server's database or Temporal flags.
const (
	EnvURL       = "SVC_URL"
	EnvToken     = "SVC_TOKEN" // a secret: environment only, never a flag, never printed
	EnvWorkspace = "SVC_WORKSPACE"
	DefaultURL   = "http://127.0.0.1:8080"

	// workspaceHeader selects the active workspace (auth.WorkspaceHeader).
	workspaceHeader = "x-svc-workspace"
)

// Exit codes of the client commands: CI branches on them (docs/ci.md).
const (
	exitOK      = 0 // pass, verified, succeeded
	exitVerdict = 1 // block, blocked_missing, not_comparable, drift, a failed or cancelled batch
	exitProblem = 2 // a usage error, an unreachable or failing service
)

// errUsage marks a usage error: exit code 2.
var errUsage = errors.New("usage")

// requestLimit bounds one request; a gate over a large batch bootstraps
// every metric, so it is generous.
const requestLimit = 2 * time.Minute

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

// NewCLI returns the cli of a real invocation.
func NewCLI(stdout, stderr io.Writer, getenv func(string) string) *cli {
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
	def := getenv(EnvURL)
	if def == "" {
		def = DefaultURL
	}
	fs.StringVar(&f.url, "url", def, "base URL of the svc API (env "+EnvURL+")")
	fs.StringVar(&f.workspace, "workspace", getenv(EnvWorkspace), "workspace to act in, sent as "+workspaceHeader+" (env "+EnvWorkspace+"); default: the token's own")
}

// client builds the API client of these flags; the token comes from the
// environment only, so it never appears in argv or in shell history.
func (f *clientFlags) client(getenv func(string) string) (*apiClient, error) {
	u, err := url.Parse(f.url)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: --url %q is not an http(s) URL such as %s", errUsage, f.url, DefaultURL)
	}
	return &apiClient{
		base:      strings.TrimRight(f.url, "/"),
		token:     strings.TrimSpace(getenv(EnvToken)),
		workspace: f.workspace,
		http:      &http.Client{Timeout: requestLimit},
	}, nil
}

// tableClient checks a command's --format, then builds its client: the
// start of every command that prints records.
func (f *clientFlags) tableClient(getenv func(string) string, format string) (*apiClient, error) {
	if err := checkFormat(format); err != nil {
		return nil, err
	}
	return f.client(getenv)
}

// oneArg parses the command line of a command that takes one argument
// (what names it in the usage error), then builds its client.
func (f *clientFlags) oneArg(fs *flag.FlagSet, args []string, what string, getenv func(string) string) (string, *apiClient, error) {
	arg, err := parseOne(fs, args, what)
	if err != nil {
		return "", nil, err
	}
	c, err := f.client(getenv)
	return arg, c, err
}

// apiClient sends requests to the svc API.
type apiClient struct {
	base      string
	token     string
	workspace string
	http      *http.Client
}

// apiError is an error the service answered with its JSON error body.
type apiError struct {
	Status    int
	Code      string
	Message   string
	RequestID string
	// Details is the error body's details, as sent: a registry's refusal
	// lists its problems there ({problems: [{path, message}]}).
	Details json.RawMessage
}

// problems returns the {path, message} problems an invalid spec was
// refused with, one "path: message" each; none for other errors.
func problems(err error) []string {
	var ae *apiError
	if !errors.As(err, &ae) || len(ae.Details) == 0 {
		return nil
	}
	var d struct {
		Problems []struct {
			Path    string `json:"path"`
			Message string `json:"message"`
		} `json:"problems"`
	}
	if json.Unmarshal(ae.Details, &d) != nil {
		return nil
	}
	var out []string
	for _, p := range d.Problems {
		if p.Path == "" {
			out = append(out, p.Message)
		} else {
			out = append(out, p.Path+": "+p.Message)
		}
	}
	return out
}

// Error reads "<message> (request <id>)": what a user quotes when reporting.
func (e *apiError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = fmt.Sprintf("HTTP %d %s", e.Status, http.StatusText(e.Status))
	}
	if e.RequestID != "" {
		msg += " (request " + e.RequestID + ")"
	}
	return msg
}

// transient reports whether a retry may succeed: the service is restarting,
// overloaded or behind a proxy that lost it.
func (e *apiError) transient() bool {
	switch e.Status {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// transportError is a request that got no HTTP answer.
type transportError struct {
	url string
	err error
}

func (e *transportError) Error() string {
	return fmt.Sprintf("cannot reach %s: %v", e.url, e.err)
}

func (e *transportError) Unwrap() error { return e.err }

// transient reports whether err is worth retrying while waiting on a batch.
func transient(err error) bool {
	var te *transportError
	if errors.As(err, &te) {
		return !errors.Is(err, context.Canceled)
	}
	var ae *apiError
	return errors.As(err, &ae) && ae.transient()
}

// do sends one request with a JSON body (when body is not nil) and returns
// the raw 2xx answer, decoded into out when out is not nil. A non-2xx
// answer is an *apiError; no answer at all is a *transportError.
func (c *apiClient) do(ctx context.Context, method, path string, body, out any) ([]byte, error) {
	raw, _, err := c.doHeader(ctx, method, path, body, out)
	return raw, err
}

// doHeader is do that also returns the answer's headers: the registries
// and the paginated lists say things there (X-Svc-Next-Cursor, X-Svc-Digest).
func (c *apiClient) doHeader(ctx context.Context, method, path string, body, out any) ([]byte, http.Header, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, nil, fmt.Errorf("encoding the request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.workspace != "" {
		req.Header.Set(workspaceHeader, c.workspace)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		// url.Error repeats the method and URL; keep only the cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, nil, &transportError{url: c.base, err: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, &transportError{url: c.base, err: fmt.Errorf("reading the answer to %s %s: %w", method, path, err)}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, resp.Header, c.errorOf(resp, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return nil, resp.Header, fmt.Errorf("%s %s answered %d with a body that is not the expected JSON: %v", method, path, resp.StatusCode, err)
		}
	}
	return raw, resp.Header, nil
}

// errorOf reads the service's error body, or describes an answer that has
// none (a proxy's HTML page, say) without echoing it.
func (c *apiClient) errorOf(resp *http.Response, raw []byte) *apiError {
	var body struct {
		Error struct {
			Code      string          `json:"code"`
			Message   string          `json:"message"`
			RequestID string          `json:"requestId"`
			Details   json.RawMessage `json:"details"`
		} `json:"error"`
	}
	e := &apiError{Status: resp.StatusCode, RequestID: resp.Header.Get("X-Request-Id")}
	if json.Unmarshal(raw, &body) == nil && body.Error.Message != "" {
		e.Code, e.Message, e.Details = body.Error.Code, body.Error.Message, body.Error.Details
		if body.Error.RequestID != "" {
			e.RequestID = body.Error.RequestID
		}
	} else {
		e.Message = fmt.Sprintf("%s answered HTTP %d %s", c.base, resp.StatusCode, http.StatusText(resp.StatusCode))
	}
	if resp.StatusCode == http.StatusUnauthorized && c.token == "" {
		e.Message += "; set " + EnvToken + " to a bearer token"
	}
	return e
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

// RunClient runs a client command and turns its error into the one line
// "svc <name>: <message>" and exit code 2.
func RunClient(ctx context.Context, name string, f Command, x *cli, args []string) int {
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
		fmt.Fprintf(x.stderr, "\nThe bearer token is read from %s (environment only, never printed).\n", EnvToken)
	}
	return fs
}

// errFlags marks a flag the flag package refused; it has already printed
// the problem and the usage, so RunClient prints nothing more.
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
