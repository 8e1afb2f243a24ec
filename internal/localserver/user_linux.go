package localserver

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// User is the user a server that refuses root (PostgreSQL) runs as: the
// zero User is this process's own.
type User struct {
	cred *syscall.Credential // nil: this process's user
}

// LookupUser returns the user a server that refuses root runs as: name
// when this process is root, else this process's own user.
func LookupUser(name string) (User, error) {
	if os.Geteuid() != 0 {
		return User{}, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return User{}, fmt.Errorf("running as root, and there is no user %q to run the server as: %w", name, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return User{}, fmt.Errorf("user %s: %w", name, err)
	}
	return User{cred: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}, nil
}

// Chown gives the user every file under dir (a server wants its data
// directory and keys its own).
func (u User) Chown(dir string) error {
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

// RunAs makes cmd run as the user and die with this process, so that a
// killed test or lab leaves no server behind. The credentials are the
// child's own (not runuser's, which would stand between this process and
// the server, its pid not the server's).
func (u User) RunAs(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.cred, Pdeathsig: syscall.SIGKILL}
}
