package pgcluster

import (
	"os/exec"
	"syscall"
)

// setProcAttr runs cmd as cred (nil: as ourselves).
func setProcAttr(cmd *exec.Cmd, cred *syscall.Credential) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Credential = cred
}

// setServerProcAttr ties the server's life to ours and keeps it out of our
// process group, so a Ctrl-C meant for a test command does not shut the
// database down under it; Stop does that.
func setServerProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	cmd.SysProcAttr.Setpgid = true
}
