package sandbox

import (
	"cmp"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// initScript is the container's pid 1: a shell that sleeps, reaps the
// processes orphaned to it (wait reaps any child), and ends on SIGTERM.
const initScript = `trap 'exit 0' TERM INT; while :; do sleep 86400 & wait; done`

// defaultPath is the PATH of an image whose config sets none.
const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Capabilities of a container's root, in its own user namespace only:
// Docker's default set.
var capabilities = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD",
	"CAP_NET_RAW", "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP",
	"CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE",
}

// ociConfig is the subset of the OCI runtime config this runtime writes.
type ociConfig struct {
	OCIVersion string     `json:"ociVersion"`
	Process    ociProcess `json:"process"`
	Root       ociRoot    `json:"root"`
	Hostname   string     `json:"hostname"`
	Mounts     []ociMount `json:"mounts"`
	Linux      ociLinux   `json:"linux"`
}

type ociProcess struct {
	Terminal        bool        `json:"terminal"`
	User            ociUser     `json:"user"`
	Args            []string    `json:"args"`
	Env             []string    `json:"env"`
	Cwd             string      `json:"cwd"`
	Capabilities    ociCaps     `json:"capabilities"`
	Rlimits         []ociRlimit `json:"rlimits,omitempty"`
	NoNewPrivileges bool        `json:"noNewPrivileges"`
}

type ociUser struct {
	UID uint32 `json:"uid"`
	GID uint32 `json:"gid"`
}

type ociCaps struct {
	Bounding    []string `json:"bounding"`
	Effective   []string `json:"effective"`
	Permitted   []string `json:"permitted"`
	Inheritable []string `json:"inheritable"`
}

type ociRlimit struct {
	Type string `json:"type"`
	Hard uint64 `json:"hard"`
	Soft uint64 `json:"soft"`
}

type ociRoot struct {
	Path     string `json:"path"`
	Readonly bool   `json:"readonly"`
}

type ociMount struct {
	Destination string   `json:"destination"`
	Type        string   `json:"type"`
	Source      string   `json:"source"`
	Options     []string `json:"options,omitempty"`
}

type ociIDMap struct {
	ContainerID uint32 `json:"containerID"`
	HostID      uint32 `json:"hostID"`
	Size        uint32 `json:"size"`
}

type ociNamespace struct {
	Type string `json:"type"`
}

type ociLinux struct {
	UIDMappings   []ociIDMap     `json:"uidMappings"`
	GIDMappings   []ociIDMap     `json:"gidMappings"`
	Namespaces    []ociNamespace `json:"namespaces"`
	CgroupsPath   string         `json:"cgroupsPath"`
	Resources     ociResources   `json:"resources"`
	MaskedPaths   []string       `json:"maskedPaths"`
	ReadonlyPaths []string       `json:"readonlyPaths"`
}

type ociResources struct {
	Memory ociMemory `json:"memory"`
	Pids   ociPids   `json:"pids"`
	CPU    ociCPU    `json:"cpu"`
}

type ociMemory struct {
	Limit int64 `json:"limit"`
}

type ociPids struct {
	Limit int64 `json:"limit"`
}

type ociCPU struct {
	Quota  int64  `json:"quota"`
	Period uint64 `json:"period"`
}

// runtimeConfig is the OCI runtime config of a session in cgroup: the image's
// environment and working directory, the init, the namespaces and limits.
func runtimeConfig(cgroup string, ic v1.Config, o CreateOptions, uidBase int) ociConfig {
	env := append([]string(nil), ic.Env...)
	hasPath := false
	for _, e := range env {
		if strings.HasPrefix(e, "PATH=") {
			hasPath = true
		}
	}
	if !hasPath {
		env = append(env, defaultPath)
	}
	env = append(env, o.Env...)
	cpus := cmp.Or(o.CPUs, DefaultCPUs)
	const period = 100000
	idmap := []ociIDMap{{ContainerID: 0, HostID: uint32(uidBase), Size: UIDs}}
	return ociConfig{
		OCIVersion: "1.0.2",
		Process: ociProcess{
			User:            ociUser{UID: 0, GID: 0},
			Args:            []string{"/bin/sh", "-c", initScript},
			Env:             env,
			Cwd:             cmp.Or(ic.WorkingDir, "/"),
			Capabilities:    ociCaps{Bounding: capabilities, Effective: capabilities, Permitted: capabilities},
			NoNewPrivileges: true,
		},
		Root:     ociRoot{Path: "rootfs"},
		Hostname: cmp.Or(o.Hostname, "sandbox"),
		Mounts: []ociMount{
			{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "noexec", "nodev"}},
			{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
			{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"}},
			{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}},
			{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue", Options: []string{"nosuid", "noexec", "nodev"}},
			{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", "ro"}},
		},
		Linux: ociLinux{
			UIDMappings: idmap,
			GIDMappings: idmap,
			Namespaces: []ociNamespace{
				{Type: "pid"}, {Type: "network"}, {Type: "ipc"}, {Type: "uts"}, {Type: "mount"}, {Type: "user"}, {Type: "cgroup"},
			},
			CgroupsPath: cgroup,
			Resources: ociResources{
				Memory: ociMemory{Limit: cmp.Or(o.MemoryBytes, DefaultMemoryBytes)},
				Pids:   ociPids{Limit: cmp.Or(o.PIDs, DefaultPIDs)},
				CPU:    ociCPU{Quota: int64(cpus * period), Period: period},
			},
			MaskedPaths: []string{
				"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list",
				"/proc/timer_stats", "/proc/sched_debug", "/sys/firmware", "/proc/scsi",
			},
			ReadonlyPaths: []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"},
		},
	}
}
