package bench

import (
	"os/exec"
	"syscall"
)

// dieWithParent kills the child if this process dies first, so that a
// killed benchmark leaves no pass running against a database it drops.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
