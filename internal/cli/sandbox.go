package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"svc/internal/client"
	"svc/internal/domain/eval"
	"svc/internal/domain/sandboxwire"
)

const sandboxSynopsis = `usage: svc sandbox create [--image REF] [--world ID [--world-version vN]] [--ttl D] [--hibernate=false]
                          [--runtime NAME] [--repo GIT [--repo-ref REF] [--repo-dir DIR]] [--json]
       svc sandbox exec ID [--timeout D] [--json] [--] COMMAND [ARG...]
       svc sandbox snapshot ID [--json]
       svc sandbox close ID [--no-snapshot] [--json]
       svc sandbox touch ID [--ttl D] [--json]
       svc sandbox ls [--format table|csv|jsonl|md] [--json]
       svc sandbox get ID [--json]

A sandbox is a long-lived session in a container of an image (docs/cli-sandboxes.md).
create starts one (POST /sandboxes) and prints its id: from --image (a reference into the
workspace's image store, as svc image import prints it), or from the latest version of
--world (--world-version v2 rolls back to v2; a world with no version yet starts from
--image). A world session hibernates into its world at close and expiry unless
--hibernate=false. --ttl is a duration (90s, 30m, 2h) or seconds; touch extends the
deadline to now + ttl (the session's own ttl when omitted), never shortening it.
exec runs COMMAND with its ARGs, each passed as written (quoted for the container's
/bin/sh), prints what it wrote to stdout and stderr, and exits with its exit code (137 when
--timeout killed it); for a shell line write: svc sandbox exec ID -- sh -c 'a | b'.
snapshot publishes the session's changes as the next version of its world and prints the
version's pinned reference (world:vN@sha256:...). close ends the session (idempotent);
--no-snapshot skips a world session's hibernation. ls lists your live sessions.

Exit codes: 0 done; exec: the command's own; 2 usage or service error (the service's
message says what to do).`

// RunSandbox is `svc sandbox`.
func RunSandbox(ctx context.Context, x *cli, args []string) (int, error) {
	return subcommand(ctx, x, sandboxSynopsis, []sub{
		{"create", runSandboxCreate},
		{"exec", runSandboxExec},
		{"snapshot", runSandboxSnapshot},
		{"close", runSandboxClose},
		{"touch", runSandboxTouch},
		{"ls", runSandboxList},
		{"list", runSandboxList},
		{"get", runSandboxGet},
	}, args)
}

// ttlFlag is a --ttl: a duration or a number of seconds, in whole seconds
// (0: not given).
type ttlFlag struct{ seconds int64 }

func (f *ttlFlag) String() string {
	if f == nil || f.seconds == 0 {
		return ""
	}
	return (time.Duration(f.seconds) * time.Second).String()
}

func (f *ttlFlag) Set(s string) error {
	n, err := parseSeconds(s)
	if err != nil {
		return err
	}
	f.seconds = n
	return nil
}

// parseSeconds reads "90", "90s", "30m" or "1h30m" as whole seconds
// (a fraction rounds up), at least 1.
func parseSeconds(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 1 {
			return 0, fmt.Errorf("want a positive duration such as 90s, 30m or 2h")
		}
		return n, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("want a positive duration such as 90s, 30m or 2h (or a number of seconds)")
	}
	return int64(math.Ceil(d.Seconds())), nil
}

// runSandboxCreate is `svc sandbox create`.
func runSandboxCreate(ctx context.Context, x *cli, args []string) (int, error) {
	fs := newFlagSet(x, "sandbox create", sandboxSynopsis)
	var cf clientFlags
	cf.register(fs, x.getenv)
	image := fs.String("image", "", "the image to run: a reference into the workspace's image store (repo:tag, repo:tag@sha256:...)")
	world := fs.String("world", "", "the world to start from and hibernate into (its latest version)")
	worldVersion := fs.String("world-version", "", "start from this version of --world (v2, or 2) instead of its latest")
	var ttl ttlFlag
	fs.Var(&ttl, "ttl", "the session's lifetime: a duration (30m, 2h) or seconds; default: the service's")
	hibernate := fs.Bool("hibernate", true, "a world session snapshots into its world at close and expiry")
	runtime := fs.String("runtime", "", "a registered runtime with a session mode (default: the deployment's local runtime)")
	repo := fs.String("repo", "", "a git repository to clone into the session at create")
	repoRef := fs.String("repo-ref", "", "the ref of --repo to check out")
	repoDir := fs.String("repo-dir", "", "where in the session to clone --repo")
	asJSON := fs.Bool("json", false, "print the session's record as the service sent it")
	if err := parseNone(fs, args); err != nil {
		return 0, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	req := sandboxwire.CreateRequest{Image: strings.TrimSpace(*image), Runtime: *runtime, TTL: ttl.seconds}
	if req.Image == "" && *world == "" {
		return 0, fmt.Errorf("%w: name what the session runs: --image REF (svc image import prints one) or --world ID", errUsage)
	}
	if *world != "" {
		req.World = &eval.SessionWorld{ID: *world}
		if *worldVersion != "" {
			n, err := parseWorldVersion(*worldVersion)
			if err != nil {
				return 0, err
			}
			req.World.Version = n
		}
	} else if *worldVersion != "" {
		return 0, fmt.Errorf("%w: --world-version needs --world", errUsage)
	}
	if set["hibernate"] {
		req.Hibernate = hibernate
	}
	if *repo != "" {
		req.Repo = &eval.SessionRepo{Git: *repo, Ref: *repoRef, Dir: *repoDir}
	} else if *repoRef != "" || *repoDir != "" {
		return 0, fmt.Errorf("%w: --repo-ref and --repo-dir need --repo", errUsage)
	}
	c, err := cf.client(x.getenv)
	if err != nil {
		return 0, err
	}
	sb, raw, err := c.CreateSandbox(ctx, req)
	if err != nil {
		return 0, err
	}
	if *asJSON {
		writeJSON(x.stdout, raw)
	} else {
		fmt.Fprintln(x.stdout, sb.ID)
	}
	return exitOK, nil
}

// parseWorldVersion reads v3 or 3 (latest: 0).
func parseWorldVersion(s string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "latest" {
		return 0, nil
	}
	n, err := strconv.Atoi(strings.TrimPrefix(s, "v"))
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%w: --world-version %q: want v1, v2, ... (svc world ls ID lists them)", errUsage, s)
	}
	return n, nil
}

// runSandboxExec is `svc sandbox exec`: flags come before COMMAND (after
// ID or before it); "--" ends them, so COMMAND may start with a dash.
func runSandboxExec(ctx context.Context, x *cli, args []string) (int, error) {
	fs := newFlagSet(x, "sandbox exec", sandboxSynopsis)
	var cf clientFlags
	cf.register(fs, x.getenv)
	var timeout ttlFlag
	fs.Var(&timeout, "timeout", "bound on the command (a duration or seconds, at most 1h); default 10m")
	asJSON := fs.Bool("json", false, "print the service's answer (exitCode, stdout, stderr, ...) as JSON instead of the output")
	if err := fs.Parse(args); err != nil {
		return 0, flagsErr(err)
	}
	if fs.NArg() == 0 {
		return 0, fmt.Errorf("%w: name the session: svc sandbox exec ID -- COMMAND", errUsage)
	}
	id := fs.Arg(0)
	// Flags may follow the ID too; the first word after them is COMMAND.
	if err := fs.Parse(fs.Args()[1:]); err != nil {
		return 0, flagsErr(err)
	}
	words := fs.Args()
	if len(words) == 0 {
		return 0, fmt.Errorf("%w: name the command to run: svc sandbox exec %s -- COMMAND [ARG...]", errUsage, id)
	}
	if timeout.seconds > 3600 {
		return 0, fmt.Errorf("%w: --timeout %s: at most 1h", errUsage, timeout.String())
	}
	c, err := cf.client(x.getenv)
	if err != nil {
		return 0, err
	}
	res, raw, err := c.ExecSandbox(ctx, id, sandboxwire.ExecRequest{Command: shellJoin(words), TimeoutSec: int(timeout.seconds)})
	if err != nil {
		return 0, err
	}
	if *asJSON {
		writeJSON(x.stdout, raw)
	} else {
		io.WriteString(x.stdout, res.Stdout)
		io.WriteString(x.stderr, res.Stderr)
		if res.StdoutTruncated || res.StderrTruncated {
			fmt.Fprintln(x.stderr, "svc sandbox exec: the service kept only the start of the command's output (svc runs trace "+id+" shows what it recorded)")
		}
	}
	if res.TimedOut {
		limit := client.ExecDefaultTimeout
		if timeout.seconds > 0 {
			limit = time.Duration(timeout.seconds) * time.Second
		}
		fmt.Fprintf(x.stderr, "svc sandbox exec: the command ran past its timeout (%s) and was killed; give a longer --timeout\n", limit)
	}
	return exitStatus(res.ExitCode), nil
}

// exitStatus is the command's exit code as a process can exit with it.
func exitStatus(code int) int {
	if code < 0 || code > 255 {
		return 255
	}
	return code
}

// plainWord is a word /bin/sh reads as itself.
var plainWord = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

// shellJoin writes argv as one /bin/sh command line that runs it as
// written: each word single-quoted unless it is plain.
func shellJoin(argv []string) string {
	out := make([]string, len(argv))
	for i, w := range argv {
		if plainWord.MatchString(w) {
			out[i] = w
			continue
		}
		out[i] = "'" + strings.ReplaceAll(w, "'", `'"'"'`) + "'"
	}
	return strings.Join(out, " ")
}

// runSandboxSnapshot is `svc sandbox snapshot`.
func runSandboxSnapshot(ctx context.Context, x *cli, args []string) (int, error) {
	fs := newFlagSet(x, "sandbox snapshot", sandboxSynopsis)
	var cf clientFlags
	cf.register(fs, x.getenv)
	asJSON := fs.Bool("json", false, "print the service's answer as JSON")
	id, c, err := cf.oneArg(fs, args, "session id", x.getenv)
	if err != nil {
		return 0, err
	}
	res, raw, err := c.SnapshotSandbox(ctx, id)
	if err != nil {
		return 0, err
	}
	if *asJSON {
		writeJSON(x.stdout, raw)
		return exitOK, nil
	}
	if res.Skipped != "" {
		fmt.Fprintf(x.stderr, "svc sandbox snapshot: nothing published: %s\n", res.Skipped)
		return exitOK, nil
	}
	fmt.Fprintln(x.stdout, res.Ref)
	fmt.Fprintf(x.stderr, "world %s version %d published (%s compressed)\n", res.World, res.Version, byteSize(res.Bytes))
	if len(res.PrunedVersions) > 0 {
		fmt.Fprintf(x.stderr, "retention pruned %s\n", strings.Join(res.PrunedVersions, ", "))
	}
	if res.PruneError != "" {
		fmt.Fprintf(x.stderr, "retention stopped (the version stays published): %s\n", res.PruneError)
	}
	return exitOK, nil
}

// runSandboxClose is `svc sandbox close`.
func runSandboxClose(ctx context.Context, x *cli, args []string) (int, error) {
	fs := newFlagSet(x, "sandbox close", sandboxSynopsis)
	var cf clientFlags
	cf.register(fs, x.getenv)
	noSnapshot := fs.Bool("no-snapshot", false, "do not hibernate a world session into its world")
	asJSON := fs.Bool("json", false, "print the session's record as the service sent it")
	id, c, err := cf.oneArg(fs, args, "session id", x.getenv)
	if err != nil {
		return 0, err
	}
	var snapshot *bool
	if *noSnapshot {
		f := false
		snapshot = &f
	}
	sb, raw, err := c.CloseSandbox(ctx, id, snapshot)
	if err != nil {
		return 0, err
	}
	if *asJSON {
		writeJSON(x.stdout, raw)
		return exitOK, nil
	}
	if sb.Live != nil && sb.Live.Open {
		fmt.Fprintf(x.stdout, "%s closing (still %s; svc sandbox get %s)\n", sb.ID, sb.Status, sb.ID)
		return exitOK, nil
	}
	line := sb.ID + " " + sb.Status
	if sb.Session != nil && sb.Session.ClosedReason != "" {
		line += " (" + sb.Session.ClosedReason + ")"
	}
	fmt.Fprintln(x.stdout, line)
	if sb.Session != nil && len(sb.Session.Snapshots) > 0 {
		last := sb.Session.Snapshots[len(sb.Session.Snapshots)-1]
		fmt.Fprintf(x.stdout, "last snapshot: %s\n", last.Ref)
	}
	if sb.Error != nil && sb.Error.Message != "" {
		fmt.Fprintf(x.stderr, "%s: %s\n", sb.Error.Code, sb.Error.Message)
	}
	return exitOK, nil
}

// runSandboxTouch is `svc sandbox touch`.
func runSandboxTouch(ctx context.Context, x *cli, args []string) (int, error) {
	fs := newFlagSet(x, "sandbox touch", sandboxSynopsis)
	var cf clientFlags
	cf.register(fs, x.getenv)
	var ttl ttlFlag
	fs.Var(&ttl, "ttl", "extend the deadline to now + this (a duration or seconds); default: the session's own ttl")
	asJSON := fs.Bool("json", false, "print the session's record as the service sent it")
	id, c, err := cf.oneArg(fs, args, "session id", x.getenv)
	if err != nil {
		return 0, err
	}
	sb, raw, err := c.TouchSandbox(ctx, id, ttl.seconds)
	if err != nil {
		return 0, err
	}
	if *asJSON {
		writeJSON(x.stdout, raw)
		return exitOK, nil
	}
	fmt.Fprintf(x.stdout, "%s expires at %s\n", sb.ID, sb.ExpiresAt().UTC().Format(time.RFC3339))
	return exitOK, nil
}

// runSandboxList is `svc sandbox ls`.
func runSandboxList(ctx context.Context, x *cli, args []string) (int, error) {
	fs := newFlagSet(x, "sandbox ls", sandboxSynopsis)
	var cf clientFlags
	cf.register(fs, x.getenv)
	format := fs.String("format", formatTable, "output `format`: "+strings.Join(formats, ", "))
	asJSON := fs.Bool("json", false, "print the service's JSON")
	if err := parseNone(fs, args); err != nil {
		return 0, err
	}
	c, err := cf.tableClient(x.getenv, *format)
	if err != nil {
		return 0, err
	}
	list, raw, err := c.ListSandboxes(ctx)
	if err != nil {
		return 0, err
	}
	sh := &sheet{cols: []column{
		{head: "ID", key: "id"},
		{head: "IMAGE/WORLD", key: "source"},
		{head: "STATUS", key: "status"},
		{head: "EXPIRES", key: "expiresAt"},
		{head: "BUSY", key: "busy"},
	}}
	for _, sb := range list {
		src := sandboxSource(sb)
		if *format == formatTable {
			src = shortRefDigest(src)
		}
		sh.add(sb.ID, src, sb.Status, sb.ExpiresAt(), sb.Busy())
	}
	return writeList(x, sh, *format, *asJSON, raw, func() {
		fmt.Fprintln(x.stderr, "no live sandbox sessions (svc sandbox create starts one)")
	})
}

// writeList ends a list command: with --json the service's answer as it
// sent it; else, when a table would have no row and empty is not nil,
// empty (a note saying so); else sh in format.
func writeList(x *cli, sh *sheet, format string, asJSON bool, raw json.RawMessage, empty func()) (int, error) {
	if asJSON {
		writeJSON(x.stdout, raw)
		return exitOK, nil
	}
	if len(sh.rows) == 0 && format == formatTable && empty != nil {
		empty()
		return exitOK, nil
	}
	return exitOK, sh.write(x.stdout, format)
}

// digestRE is a sha256 digest in a reference.
var digestRE = regexp.MustCompile(`sha256:([0-9a-f]{12})[0-9a-f]{52}`)

// shortRefDigest cuts a reference's sha256 digest to its first 12 hex
// digits, as a table shows it (csv, jsonl and --json keep it whole).
func shortRefDigest(ref string) string {
	return digestRE.ReplaceAllString(ref, "sha256:$1")
}

// sandboxSource is what a session runs: world ID (and version) or its image.
func sandboxSource(sb client.Sandbox) string {
	s := sb.Session
	if s == nil {
		return ""
	}
	if s.World != nil && s.World.ID != "" {
		w := "world " + s.World.ID
		if s.World.Version > 0 {
			w += ":v" + strconv.Itoa(s.World.Version)
		}
		return w
	}
	return s.Image
}

// runSandboxGet is `svc sandbox get`.
func runSandboxGet(ctx context.Context, x *cli, args []string) (int, error) {
	fs := newFlagSet(x, "sandbox get", sandboxSynopsis)
	var cf clientFlags
	cf.register(fs, x.getenv)
	asJSON := fs.Bool("json", false, "print the session's record as the service sent it")
	id, c, err := cf.oneArg(fs, args, "session id", x.getenv)
	if err != nil {
		return 0, err
	}
	sb, raw, err := c.Sandbox(ctx, id)
	if err != nil {
		return 0, err
	}
	if *asJSON {
		writeJSON(x.stdout, raw)
		return exitOK, nil
	}
	tw := newTable(x.stdout)
	row := func(k string, v any) {
		t := cellText(v)
		if t == "" {
			return
		}
		fmt.Fprintf(tw, "%s\t%s\n", k, t)
	}
	row("id", sb.ID)
	row("status", sb.Status)
	row("source", sandboxSource(sb))
	if s := sb.Session; s != nil {
		if s.World != nil {
			row("image", s.Image)
		}
		row("image digest", s.ImageDigest)
		row("closed", s.ClosedReason)
		row("host", s.Host)
	}
	if sb.Live != nil {
		row("open", sb.Live.Open)
		if sb.Live.Open {
			row("seconds left", int(sb.Live.SecondsLeft))
		}
	}
	row("expires", sb.ExpiresAt().UTC().Format(time.RFC3339))
	row("busy", sb.Busy())
	row("created", sb.CreatedAt)
	row("created by", sb.CreatedBy)
	row("runtime", sb.Runtime)
	if sb.Error != nil {
		row("error", sb.Error.Code+": "+sb.Error.Message)
	}
	if s := sb.Session; s != nil {
		for _, sn := range s.Snapshots {
			row("snapshot", fmt.Sprintf("v%d %s (%s)", sn.Version, sn.Ref, cellText(sn.At)))
		}
	}
	tw.Flush()
	return exitOK, nil
}

// byteSize prints n bytes in binary units: 512 B, 1.5 KiB, 20.0 MiB.
func byteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
