//go:build linux && (386 || arm)

package shim

import "syscall"

// sysSetresuid is setresuid with 32-bit uids (the plain one takes 16).
const sysSetresuid = syscall.SYS_SETRESUID32
