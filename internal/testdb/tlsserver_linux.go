package testdb

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// osUser is the user a private server runs as: PostgreSQL refuses to
// run as root, so a test run by root runs it as the user postgres.
type osUser struct {
	cred *syscall.Credential // nil: this process's user
}

// serverUser returns the user a server that refuses root runs as: name
// if this process is root, else this process's own user.
func serverUser(name string) (osUser, error) {
	if os.Geteuid() != 0 {
		return osUser{}, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return osUser{}, fmt.Errorf("the tests run as root and there is no user %q to run the server as", name)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return osUser{}, fmt.Errorf("user %s: uid %s gid %s", name, u.Uid, u.Gid)
	}
	return osUser{cred: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}, nil
}

// chown gives the user every file under dir (keys must be the server
// user's own, mode 0600).
func (u osUser) chown(dir string) error {
	if u.cred == nil {
		return nil
	}
	return filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(u.cred.Uid), int(u.cred.Gid))
	})
}

// runAs makes cmd run as the user, and die with this process.
func (u osUser) runAs(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.cred, Pdeathsig: syscall.SIGKILL}
}

// dieWithParent makes cmd die with this process, so that a killed test
// binary leaves no server behind.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// terminate asks a server to shut down.
func terminate(p *os.Process) { p.Signal(syscall.SIGTERM) }
