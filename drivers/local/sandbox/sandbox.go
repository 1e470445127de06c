// Package sandbox is the local runtime's sandbox sessions: long-lived OCI
// containers started from an image's root file system, run by Debian's runc.
//
// An image's layers are unpacked once per image digest into a base root
// file system under Root/images (read-only to sessions: it is only ever an
// overlayfs lower directory). Each session gets Root/sessions/<id>: an
// overlayfs upper and work directory of its own, mounted over the base at
// MountDir/<hash of Root>/<id> as the container's root, and an OCI runtime
// bundle whose init (a shell
// sleeping and reaping, pid 1 of the container) keeps it alive. Commands
// run in it through `runc exec`. Changes reads the upper directory (never
// the merged root, never following a link) into one OCI layer with
// whiteouts, which a caller appends to the base image with mutate.Append.
//
// Isolation: every container is root of a user namespace of its own mapped
// to UIDs host uids from UIDBase (outside the local job pool's range), so
// its root owns nothing of the host's; it has its own pid, mount, ipc, uts,
// cgroup and network namespaces (the network has only a loopback), no
// mount from the host but /proc, /sys (read-only), /dev's tmpfs and
// /dev/pts, no new privileges, the memory, pid and CPU limits of
// CreateOptions. Nothing of the service's data directory is mounted.
//
// State lives under Root alone: a new Runtime on the same Root finds the
// sessions a previous process left (List, Lookup) and drives them.
//
// Limits: Linux only, the service must be root (it mounts overlayfs and
// maps user namespaces); an image must have /bin/sh (the init and Exec use
// it); an image entry under a symbolic link of the image is refused, not
// followed. The upper directory's size is not bounded (only a capture is).
// Sessions share one uid range (a shared base needs it without idmapped
// mounts); their mount and pid namespaces keep them apart. An Exec into a
// paused session waits for Resume or its timeout.
package sandbox

import (
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"time"
)

// Defaults for Options and CreateOptions.
const (
	// DefaultUIDBase is the first host uid of a container's user
	// namespace: far above what distributions hand out, and above the
	// local job pool (drivers/local.DefaultUIDs, 0x70000000 + 65536).
	DefaultUIDBase = 0x71000000
	// DefaultMountDir is Options.MountDir's default.
	DefaultMountDir = "/run/svc-sandbox"
	// UIDs is how many uids (and gids) a container's namespace maps.
	UIDs = 65536
	// DefaultMaxCaptureBytes bounds Changes' compressed layer
	// (SVC_WORLD_MAX_CAPTURE_BYTES).
	DefaultMaxCaptureBytes = 2 << 30
	// DefaultMemoryBytes, DefaultPIDs and DefaultCPUs are a session's
	// resource limits when CreateOptions leaves them 0.
	DefaultMemoryBytes = 2 << 30
	DefaultPIDs        = 1024
	DefaultCPUs        = 1.0
	// MaxOutput bounds each of an exec's stdout and stderr.
	MaxOutput = 1 << 20
)

// InstallRunc is what Available asks for when runc is missing.
const InstallRunc = "install runc (apt-get install runc)"

// Errors a caller may test with errors.Is.
var (
	// ErrNotFound is a session id with no container under Root.
	ErrNotFound = errors.New("no such sandbox")
	// ErrExists is a Create of an id that already has a container.
	ErrExists = errors.New("sandbox already exists")
	// ErrTooLarge is a change set whose compressed layer passes the
	// capture cap.
	ErrTooLarge = errors.New("change set exceeds the capture cap")
	// ErrUnavailable is a host where sandboxes cannot run (Available).
	ErrUnavailable = errors.New("sandboxes cannot run on this host")
	// ErrNotRunning is an Exec into a container that is not running.
	ErrNotRunning = errors.New("sandbox is not running")
)

// Options configure a Runtime.
type Options struct {
	// Root holds the runtime's state: unpacked images, sessions, runc's
	// state. Required; keep it out of every job's and container's reach.
	Root string
	// Runc is the OCI runtime's program; "" looks up "runc" on PATH.
	Runc string
	// MountDir is where containers' roots are mounted; "" means
	// DefaultMountDir. runc 1.1 reaches a root from inside the container's
	// user namespace, so every directory on the way must be searchable by
	// the container's root: Root's ancestors are the caller's, MountDir's
	// are the system's. Each Runtime mounts under MountDir/<hash of Root>,
	// a directory (mode 0710) only root and the containers' group search.
	MountDir string
	// UIDBase is the host uid (and gid) of a container's root; 0 means
	// DefaultUIDBase. The next UIDs-1 uids are the container's others.
	UIDBase int
	// MaxCaptureBytes bounds Changes' compressed layer; 0 means
	// DefaultMaxCaptureBytes.
	MaxCaptureBytes int64
	// Logger receives what is skipped or fails in the background; nil
	// means slog.Default().
	Logger *slog.Logger
}

// Network modes of CreateOptions.Network.
const (
	// NetworkNone (the default): a network namespace with a loopback only.
	NetworkNone = "none"
)

// CreateOptions shape one session's container.
type CreateOptions struct {
	// Env is added to the image's environment (NAME=value).
	Env []string
	// Hostname is the container's; "" means "sandbox".
	Hostname string
	// MemoryBytes, PIDs and CPUs are resource limits; 0 means the default.
	MemoryBytes int64
	PIDs        int64
	CPUs        float64
	// Network is NetworkNone or "" (the same).
	Network string
}

// State is a container's state as Lookup finds it.
type State string

// States of a container.
const (
	StateRunning State = "running"
	StatePaused  State = "paused"
	// StateStopped: the file system (and its changes) is there, no
	// process is (after Stop, a crash of the container, or a reboot).
	StateStopped State = "stopped"
)

// Info is one session's container.
type Info struct {
	ID string
	// Image is the digest of the image it was created from.
	Image   string
	Created time.Time
	State   State
	// Pid is the init's host pid while it runs.
	Pid int
}

// ExecResult is what one command did.
type ExecResult struct {
	ExitCode int
	Stdout   []byte
	Stderr   []byte
	// StdoutTruncated and StderrTruncated say that output past MaxOutput
	// was dropped.
	StdoutTruncated bool
	StderrTruncated bool
	// TimedOut: the timeout passed and the command's processes were
	// killed (ExitCode is then 137).
	TimedOut bool
	Duration time.Duration
}

var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

func checkID(id string) error {
	if !idPattern.MatchString(id) {
		return fmt.Errorf("sandbox id %q: want 1-128 letters, digits, '_', '.' or '-', starting with a letter or digit", id)
	}
	return nil
}
