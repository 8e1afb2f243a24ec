package testdb

import (
	"os"
	"os/exec"
	"syscall"
)

// dieWithParent makes cmd die with this process, so that a killed test
// binary leaves no server behind.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// terminate asks a server to shut down.
func terminate(p *os.Process) { p.Signal(syscall.SIGTERM) }
