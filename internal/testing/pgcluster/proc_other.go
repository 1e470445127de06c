//go:build !linux

package pgcluster

import (
	"os/exec"
	"syscall"
)

// setProcAttr runs cmd as cred (nil: as ourselves).
func setProcAttr(cmd *exec.Cmd, cred *syscall.Credential) {
	if cred == nil {
		return
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Credential = cred
}

// setServerProcAttr keeps the server out of our process group; without a
// parent-death signal outside Linux, Stop is the only way it ends.
func setServerProcAttr(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}
