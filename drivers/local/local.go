// Package local is the job driver that runs a process harness on the
// worker's own host: one process tree per case, in a work area of its own.
//
// Each job gets Root/<run id>/ (wiped when an attempt starts, removed when
// it ends) holding the case file, an empty trace file, a 0600 secrets file
// and the harness's work, home and temporary directories. The harness sees
// only the environment the harness contract names (see Job), never the
// service's own.
//
// The harness is not started by the service directly but by a supervisor,
// the shim (package shim: the small svc-shim program, or this binary
// re-executed when svc-shim is absent), that the service holds by a pipe
// or socket and a parent-death signal. When the job ends, is cancelled or
// times out, or the service dies (even by SIGKILL), the whole tree is
// killed and reaped: no harness process outlives the job or the service.
//
// There are two ways to supervise, chosen by Options.Isolate:
//
// The job server (Isolation.UIDs; svc's default as root): one long-lived
// shim per Driver, started on the first job (or by Check) and again after
// it died, PID 1 of its own PID and mount namespaces. It sets up the
// isolation once: the service's data directory and home hidden, every
// mount read-only but Root and a /dev/shm of its own, a /proc with hidepid
// so that each job sees only its own processes. It forks every harness
// itself, each job as a uid of its own from the pool (uid = gid, no
// groups, no_new_privs), locked host-wide in UIDLockDir for as long as a
// process of it may live. The uid names the job's whole tree: the server
// kills it with kill(-1) from a thread whose uids are the job's, and knows
// it is gone when getpriority(PRIO_USER) finds none. Other jobs' areas
// (0700, each owned by its job's uid) and processes are another uid's. A
// job costs a fork and exec of the harness and no exec of a supervisor.
//
// A supervisor per job (Isolation.UID, an explicit SVC_LOCAL_USER; or UID
// -1, a service that is not root; or no Isolate): the shim is PID 1 of the
// job's own PID and mount namespaces, hides the service's data directory
// and the other jobs' work areas, mounts a /proc of the job's namespace,
// leaves the host's /tmp and /var/tmp read-only, and runs the harness as
// the unprivileged user (or, when the service is not root, as root of a
// user namespace with every capability dropped). Without Isolate it runs
// the harness as the service's user, as a child subreaper that finds and
// kills the tree itself.
//
// In both isolated modes the work area is the only writable place of the
// host's disk. The network is the host's, or with Isolation.Network a
// namespace of the job server's (or of each job, under a supervisor per
// job) that reaches the outside through slirp4netns and of the host's
// loopback only the forwarded addresses (network_linux.go), or with
// Isolation.NoNetwork an empty namespace per job.
//
// Attempts of one run id are serialised by a lock file beside the areas;
// a later attempt kills the earlier one: through the job server when it
// runs in this process, by the uid its lock file records when on another
// process's server, or the process group or shim an area's record names
// (after checking, in /proc, that its processes carry SVC_RUN_ID=<id>), so
// a retry supersedes an attempt that is stuck or whose service died.
//
// Limits: Linux only (other systems build, and Run says so). Without
// Isolate the harness runs as the service's user and can read the
// service's files and processes: that mode is for trusted harnesses only.
// A process handed outside the tree (to systemd, say) is beyond its reach.
package local

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"svc/drivers"
	"svc/drivers/local/shim"
	"svc/internal/platform/derrors"
)

// Name is the driver's name as it appears in a Result.
const Name = "local"

// DefaultKillGrace is how long a cancelled or timed-out harness has between
// SIGTERM and SIGKILL when Options.KillGrace is zero.
const DefaultKillGrace = 3 * time.Second

// Options configure a Driver.
type Options struct {
	// Root is the directory under which each job gets its work area,
	// Root/<run id>; "" means <os.TempDir()>/svc-local. A relative Root is
	// made absolute, because the paths handed to the harness must be.
	Root string
	// OTLPEndpoint is the default for Job.OTLPEndpoint.
	OTLPEndpoint string
	// KillGrace is the time between SIGTERM and SIGKILL when a job is
	// cancelled or times out; 0 means DefaultKillGrace.
	KillGrace time.Duration
	// Logger receives what goes wrong after a job ended (a work area that
	// could not be removed); nil means slog.Default().
	Logger *slog.Logger
	// ShimPath is the svc-shim program (see FindShim); "" re-executes the
	// running binary as the shim, which costs every package initialiser of
	// that binary per job.
	ShimPath string
	// Isolate, when set, runs every job in namespaces of its own; nil runs
	// jobs as the service's user, seeing what it sees (trusted harnesses).
	Isolate *Isolation
	// Off, when set, is why this worker runs no local job: Run refuses
	// every job with it.
	Off string
	// MaxConcurrent, when above 0, bounds the jobs that run at once
	// (SVC_LOCAL_MAX_CONCURRENT): a job past it waits in Run for one to
	// end. The bound is the process's own: its jobs end with it.
	MaxConcurrent int
}

// Isolation is how jobs are kept from the service and from one another.
type Isolation struct {
	// UIDs, when set, runs every job through the driver's job server as a
	// uid of its own from this range (the service must be root); UID and
	// GID are then unused.
	UIDs *UIDRange
	// UID and GID are the unprivileged user jobs run as, each under a
	// supervisor of its own; -1 (the service is not root) runs them as
	// root of a user namespace of their own, mapped to the service's user,
	// with every capability dropped.
	UID, GID int
	// Hide are directories the job must not see (the service's data
	// directory); the driver's Root is always hidden.
	Hide []string
	// NoNetwork gives each job an empty network namespace.
	NoNetwork bool
	// Network, unless NoNetwork, gives jobs the isolated network: the
	// outside, and of the host's loopback only Network.Forward. Nil
	// leaves them the host's network.
	Network *Network
}

// UIDRange is a range of uids, First to Last inclusive, that no user or
// file of the host uses: each running job holds one of them, as its uid
// and gid, for itself.
type UIDRange struct{ First, Last int }

// DefaultUIDs is the pool jobs take their uids from when SVC_LOCAL_UIDS is
// unset: 65536 uids from 0x70000000, far above those distributions and
// container runtimes hand out.
var DefaultUIDs = UIDRange{First: 0x70000000, Last: 0x70000000 + 65535}

// ParseUIDRange parses "first-last" (SVC_LOCAL_UIDS).
func ParseUIDRange(s string) (UIDRange, error) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), "-")
	first, err1 := strconv.ParseInt(a, 10, 64)
	last, err2 := strconv.ParseInt(b, 10, 64)
	switch {
	case !ok || err1 != nil || err2 != nil:
		return UIDRange{}, fmt.Errorf("want first-last, such as %d-%d, got %q", DefaultUIDs.First, DefaultUIDs.Last, s)
	case first <= 0 || last < first:
		return UIDRange{}, fmt.Errorf("want 0 < first <= last, got %q", s)
	case last > math.MaxInt32:
		// Beyond, some tools and file systems take a uid for -1.
		return UIDRange{}, fmt.Errorf("uids above %d are not supported, got %q", math.MaxInt32, s)
	}
	return UIDRange{First: int(first), Last: int(last)}, nil
}

// Driver runs process harnesses as local processes. It is safe for
// concurrent use; two attempts of the same run id never run at once (the
// later one kills the earlier one's processes and waits for it to end).
type Driver struct {
	root         string
	otlpEndpoint string
	killGrace    time.Duration
	log          *slog.Logger
	shimPath     string
	isolate      *Isolation
	off          string
	srv          jobServer     // the job server, with Isolate.UIDs
	net          netState      // the isolated network's plan, with Isolate.Network
	slots        chan struct{} // MaxConcurrent's tokens; nil when unbounded
}

var _ drivers.Driver = (*Driver)(nil)

// New returns a Driver for o.
func New(o Options) *Driver {
	root := o.Root
	if root == "" {
		root = filepath.Join(os.TempDir(), "svc-local")
	}
	if abs, err := filepath.Abs(root); err == nil {
		root = abs
	}
	d := &Driver{
		root:         root,
		otlpEndpoint: o.OTLPEndpoint,
		killGrace:    cmp.Or(o.KillGrace, DefaultKillGrace),
		log:          o.Logger,
		shimPath:     o.ShimPath,
		isolate:      o.Isolate,
		off:          o.Off,
	}
	if o.MaxConcurrent > 0 {
		d.slots = make(chan struct{}, o.MaxConcurrent)
	}
	if d.log == nil {
		d.log = slog.Default()
	}
	return d
}

// Run runs j to completion: see drivers.Driver. It returns an error only
// when the job cannot be started (the message says what to fix; a job
// that could never run wraps derrors.ErrInvalid) or its supervisor was
// lost; a non-zero exit, a timeout or a cancel are a Result.
func (d *Driver) Run(ctx context.Context, j drivers.Job) (drivers.Result, error) {
	if d.off != "" {
		return drivers.Result{}, derrors.Invalidf("%s", d.off)
	}
	if err := drivers.CheckJob("local", j); err != nil {
		return drivers.Result{}, err
	}
	if d.slots != nil {
		select {
		case d.slots <- struct{}{}:
			defer func() { <-d.slots }()
		case <-ctx.Done():
			return drivers.Result{}, context.Cause(ctx)
		}
	}
	res, err := d.run(ctx, j)
	if err != nil {
		return drivers.Result{}, err
	}
	res.OS = runtime.GOOS
	res.Driver = Name
	res.Image = j.Image
	return res, nil
}

// Root returns the directory the work areas live under.
func (d *Driver) Root() string { return d.root }

// layout is where one job's files live; every path is absolute.
type layout struct {
	area    string // Root/<run id>: wiped at start, removed at the end
	lock    string // Root/.locks/<run id>: serialises attempts of one run
	record  string // the running attempt's process group, for a retry to kill
	work    string // SVC_WORK_DIR; Files are written here
	dir     string // the harness's working directory (work/Job.WorkDir)
	home    string
	tmp     string
	caseF   string
	trace   string
	secrets string
}

// newLayout returns the layout of the job with run id id.
func (d *Driver) newLayout(id, workDir string) layout {
	name := areaName(id)
	area := filepath.Join(d.root, name)
	work := filepath.Join(area, "work")
	return layout{
		area:    area,
		lock:    filepath.Join(d.root, ".locks", name),
		record:  filepath.Join(area, "pgid"),
		work:    work,
		dir:     filepath.Join(work, filepath.FromSlash(workDir)),
		home:    filepath.Join(area, "home"),
		tmp:     filepath.Join(area, "tmp"),
		caseF:   filepath.Join(area, "case.json"),
		trace:   filepath.Join(area, "trace.jsonl"),
		secrets: filepath.Join(area, "secrets.json"),
	}
}

// areaName turns a run id into one path element. An id that is already a
// plain name is kept so the area is easy to find; any other is cleaned and
// suffixed with a digest of the original so two ids never share an area.
// A name never starts with '.', which keeps Root/.locks apart.
func areaName(id string) string {
	const maxLen = 100
	safe := id != "" && len(id) <= maxLen && id[0] != '.'
	var b strings.Builder
	for i, r := range id {
		ok := r < utf8.RuneSelf && (r == '-' || r == '_' || r == '.' ||
			'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
		if i == 0 && r == '.' {
			ok = false
		}
		if !ok {
			safe = false
			r = '_'
		}
		if b.Len() < 64 {
			b.WriteRune(r)
		}
	}
	if safe {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return b.String() + "-" + hex.EncodeToString(sum[:6])
}

// environment builds the harness's whole environment, sorted. Job.Env may
// replace the defaults (PATH, HOME, TMPDIR, LANG) but not the contract
// variables; an OTEL_RESOURCE_ATTRIBUTES of its own is kept, after
// svc.run_id, minus any svc.run_id of its own.
func environment(j drivers.Job, l layout, otlpEndpoint string) []string {
	path := os.Getenv("PATH")
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	env := map[string]string{
		"PATH":   path,
		"HOME":   l.home,
		"TMPDIR": l.tmp,
		"LANG":   "C.UTF-8",
	}
	for k, v := range j.Env {
		env[k] = v
	}
	// The shim's marker must never reach a harness that links this package.
	delete(env, shim.Marker)
	drivers.SetContract(env, j, drivers.Paths{CaseFile: l.caseF, TraceFile: l.trace, WorkDir: l.work, SecretsFile: l.secrets}, otlpEndpoint)
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// fileMode is the mode of a written Files entry: a script (starting with
// "#!") is made executable, since Files carry no modes and a harness often
// runs one of them.
func fileMode(content string) os.FileMode {
	if strings.HasPrefix(content, "#!") {
		return 0o755
	}
	return 0o644
}
