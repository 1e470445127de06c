//go:build linux && !386 && !arm

package shim

import "syscall"

// sysSetresuid is setresuid with 32-bit uids.
const sysSetresuid = syscall.SYS_SETRESUID
