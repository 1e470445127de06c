package testbin

import (
	"os"
	"syscall"
)

// sysProcAttr kills the process if the test binary dies first, so a
// crashed test leaves no server behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

func terminate(p *os.Process) { p.Signal(syscall.SIGTERM) }
