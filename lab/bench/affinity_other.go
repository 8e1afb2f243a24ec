//go:build !linux

package bench

import (
	"errors"
	"os/exec"
)

// errNoAffinity: pinning CPUs and reading them back needs Linux.
var errNoAffinity = errors.New("pinning processes to CPUs needs Linux")

func allowedCPUs() ([]int, error)                 { return nil, errNoAffinity }
func pinSelf(int) (func() error, error)           { return nil, errNoAffinity }
func processCPUs(int) (string, error)             { return "", errNoAffinity }
func lookupServerUser(string) (serverUser, error) { return serverUser{}, errNoAffinity }
func (serverUser) chown(string) error             { return errNoAffinity }
func (serverUser) runAs(*exec.Cmd)                {}

// serverUser is the user a server runs as; only Linux has them here.
type serverUser struct{}
