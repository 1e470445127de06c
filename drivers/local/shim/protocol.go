// Package shim is the supervisor of local jobs: the process between the
// service and a harness (one per job), or between the service and every
// harness of a driver (the job server). It is its own small program (cmd/svc-shim, which
// imports nothing but this package and the standard library, so it starts
// in about a millisecond) and, as a fallback, the service's own binary
// re-executed with Marker=1 in its environment (see drivers/local).
//
// The driver starts the shim, sends it one JSON line of Config on fd 3 and
// then one byte per command ('T' to terminate; EOF means the service is
// gone), and reads JSON lines of Status on fd 4. Stdout and stderr are the
// job's output pipes, passed on to the harness.
//
// With Config.Isolate set, the driver starts the shim as PID 1 of new PID
// and mount namespaces (and, when the service is not root, a new user
// namespace). The shim then hides the service's files, mounts a /proc that
// shows only the job's processes, and runs the harness as an unprivileged
// user. Its death, however it dies, makes the kernel kill every process of
// the namespace: nothing of the job can outlive it. Without Isolate, the
// shim is a child subreaper that finds and kills the job's tree itself.
//
// Server mode (the job server, serve_linux.go): when fd 3 is a
// SOCK_SEQPACKET socket rather than a pipe, the shim is one long-lived
// supervisor of every job of a driver. The driver starts it as PID 1 of new
// PID and mount namespaces and sends, one JSON datagram each, first a Config
// with Serve set, then Requests (a start carries the job's stdout and
// stderr and the lock of its uid as SCM_RIGHTS); the server answers with
// Events. The server sets up the isolation once, then forks every harness
// itself, each as a uid of its own that nothing else on the host uses.
package shim

import "time"

// Marker is the environment variable that turns a binary linking
// drivers/local into a shim (the fallback when cmd/svc-shim is absent).
const Marker = "_SVC_LOCAL_SHIM"

// Arg0 is the shim's argv[0], so that ps shows what the process is. The
// job itself never travels in argv, where any user can read it.
const Arg0 = "svc-local-shim"

// ServerArg0 is the job server's argv[0].
const ServerArg0 = "svc-local-server"

// CmdTerminate asks the shim to end the job: SIGTERM to the harness's
// process group, then SIGKILL of everything after the grace.
const CmdTerminate = 'T'

// Config is the job as the driver sends it to the shim.
type Config struct {
	Path      string        `json:"path"` // absolute path of the program
	Args      []string      `json:"args"`
	Env       []string      `json:"env"`
	Dir       string        `json:"dir"`
	Record    string        `json:"record,omitempty"` // where to record the process group (not isolated)
	KillGrace time.Duration `json:"killGrace"`
	// Isolate, when set, asks for the job's own namespaces; the driver
	// started the shim in them.
	Isolate *Isolation `json:"isolate,omitempty"`
	// Check makes the shim set up Isolate and report Done without running
	// anything: the driver's start-up test of what the kernel allows.
	Check bool `json:"check,omitempty"`
	// Serve, in the first message on a job server's socket, makes the
	// shim the job server; Isolate is then what it sets up once for every
	// job, and Path, Args, Env and Dir are unused.
	Serve *ServeConfig `json:"serve,omitempty"`
}

// ServeConfig is what only a job server needs.
type ServeConfig struct {
	// FirstUID and LastUID bound the uids the server runs jobs as; it
	// refuses a job with any other (never root, never the service's).
	FirstUID int `json:"firstUID"`
	LastUID  int `json:"lastUID"`
}

// Operations of a Request.
const (
	OpStart = "start" // fork the harness; fds: stdout, stderr, the uid's lock
	OpTerm  = "term"  // SIGTERM to the harness's group, SIGKILL of the uid after KillGrace
	OpKill  = "kill"  // SIGKILL of every process of the job's uid now
)

// MaxFDs is how many descriptors a Request carries at most (a start's).
const MaxFDs = 3

// Request is one message from the driver to a job server.
type Request struct {
	Op string `json:"op"`
	// ID names the job in this server's lifetime; never 0.
	ID   uint64   `json:"id"`
	Path string   `json:"path,omitempty"` // absolute path of the program
	Args []string `json:"args,omitempty"`
	Env  []string `json:"env,omitempty"`
	Dir  string   `json:"dir,omitempty"`
	// UID is the job's uid and gid (no supplementary groups): its own, held
	// by the lock that comes with the request.
	UID       int           `json:"uid,omitempty"`
	KillGrace time.Duration `json:"killGrace,omitempty"`
	// NoNetwork gives the job an empty network namespace of its own.
	NoNetwork bool `json:"noNetwork,omitempty"`
}

// Event is one message from a job server to the driver: with ID 0, Ready
// or Error about the server itself; otherwise a Status of job ID, or
// Error when its request was refused.
type Event struct {
	ID    uint64 `json:"id,omitempty"`
	Ready bool   `json:"ready,omitempty"`
	Error string `json:"error,omitempty"`
	// Listening, with Ready, is how many listening sockets (one per
	// Isolation.Listen address, in order) come with the message.
	Listening int `json:"listening,omitempty"`
	Status
}

// Isolation is what the shim sets up, as PID 1 of its namespaces, before
// it starts the harness.
type Isolation struct {
	// Hide are directories covered by an empty read-only tmpfs: the
	// service's data directory, the driver's root, the service user's home.
	Hide []string `json:"hide,omitempty"`
	// Area is the job's work area (for a job server, the driver's root,
	// where every job's area is); when a hidden directory covers it, it
	// is bound back at the same path, the only place of the host's disk
	// the job can write.
	Area string `json:"area,omitempty"`
	// PrivateTmp makes the host's /tmp and /var/tmp read-only for the job
	// and gives it a /dev/shm of its own.
	PrivateTmp bool `json:"privateTmp,omitempty"`
	// UID and GID are the unprivileged user the harness runs as; -1 keeps
	// the shim's (in a user namespace, where the shim instead drops every
	// capability before it starts the harness).
	UID int `json:"uid"`
	GID int `json:"gid"`
	// UserNS is set when the shim runs in a user namespace of its own.
	UserNS bool `json:"userns,omitempty"`
	// ReadOnly makes every mount read-only but Area and /dev/shm (Linux
	// 5.12 and later; earlier kernels leave the mounts as they are): a job
	// server's uids are reused, and a job must find nothing a previous job
	// with its uid left in some world-writable directory of the host.
	ReadOnly bool `json:"readOnly,omitempty"`
	// HidePid mounts /proc with hidepid=invisible (hidepid=2 on kernels
	// before 5.8): a job server's jobs share its PID namespace, and each
	// sees only the processes of its own uid.
	HidePid bool `json:"hidePid,omitempty"`
	// Listen, for a shim the driver started in a network namespace of its
	// own (the isolated network), are addresses ("127.0.0.1:8080",
	// "[::1]:8080", "10.1.2.3:8000") where the shim listens, before any job
	// starts, and whose listening sockets it hands to the driver: on
	// ListenFD when it supervises one job, with its Ready event when it is
	// a job server. An address off the loopback is first added to the
	// namespace's loopback device, so that it is this listener a job
	// reaches there and nothing else. The driver relays what arrives to
	// the same address on the host.
	Listen []string `json:"listen,omitempty"`
	// Refuse, in the isolated network, are IPv4 networks ("10.0.0.0/8",
	// "192.0.2.2/32") jobs may not reach: the shim adds a prohibit route
	// for each to its namespace, so that a connection there fails at once
	// (EACCES) rather than leave through slirp4netns.
	Refuse []string `json:"refuse,omitempty"`
	// Reach are IPv4 networks inside Refuse that jobs reach after all (the
	// operator's SVC_LOCAL_NETWORK_ALLOW): routed through Gateway, more
	// specific than the prohibit route that covers them.
	Reach []string `json:"reach,omitempty"`
	// Gateway is slirp4netns's gateway in the namespace (10.0.2.2), where
	// Reach is routed.
	Gateway string `json:"gateway,omitempty"`
	// ResolvConf, when set, is a file mounted read-only over
	// /etc/resolv.conf: the host's names a resolver on its loopback, which
	// the isolated network does not reach.
	ResolvConf string `json:"resolvConf,omitempty"`
}

// Status is one report from the shim: first Pgid (or StartError), then,
// when every process of the job is gone, Done with the harness's exit.
type Status struct {
	Pgid       int           `json:"pgid,omitempty"`
	StartError string        `json:"startError,omitempty"`
	StartErrno int           `json:"startErrno,omitempty"`
	Done       bool          `json:"done,omitempty"`
	ExitCode   int           `json:"exitCode,omitempty"`
	Signal     string        `json:"signal,omitempty"`
	Terminated bool          `json:"terminated,omitempty"` // the harness was running when 'T' arrived
	Duration   time.Duration `json:"duration,omitempty"`   // from the harness's start to its exit
}
