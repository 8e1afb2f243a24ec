//go:build !linux

package localserver

import (
	"errors"
	"os/exec"
)

// User is the user a server runs as; only Linux has them here.
type User struct{}

// ErrNoUser is LookupUser's error where servers of one's own are not run.
var ErrNoUser = errors.New("servers of one's own need Linux")

// LookupUser reports that servers of one's own are not run here.
func LookupUser(string) (User, error) { return User{}, ErrNoUser }

// Chown fails: see LookupUser.
func (User) Chown(string) error { return ErrNoUser }

// RunAs does nothing: see LookupUser.
func (User) RunAs(*exec.Cmd) {}
