//go:build !linux

package testdb

import (
	"os"
	"os/exec"
)

// osUser is the user a private server runs as; only Linux has them here.
type osUser struct{}

// serverUser reports that private servers are not run here.
func serverUser(string) (osUser, error) { return osUser{}, errNoServerUser }

func (osUser) chown(string) error { return errNoServerUser }
func (osUser) runAs(*exec.Cmd)    {}
func dieWithParent(*exec.Cmd)     {}
func terminate(p *os.Process)     { p.Kill() }
