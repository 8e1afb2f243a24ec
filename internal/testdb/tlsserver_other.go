//go:build !linux

package testdb

import (
	"os"
	"os/exec"
)

func dieWithParent(*exec.Cmd) {}
func terminate(p *os.Process) { p.Kill() }
