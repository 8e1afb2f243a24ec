// This file owns the proof that a SQLite file has no other user on Linux:
// the -shm file's locks in /proc/locks.

package sqlstore

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// initPIDNamespace is the initial PID namespace, as /proc/self/ns/pid
// names it (the kernel's PROC_PID_INIT_INO): only from there does
// /proc/locks list the locks of every process.
const initPIDNamespace = "pid:[4026531836]"

// maxLocksFile bounds how much of /proc/locks is read: a host with more
// locks than that gets no proof.
const maxLocksFile = 16 << 20

// aloneOnFile proves, or fails to prove, that no other process has the
// SQLite database at path open (see DB.Alone).
func aloneOnFile(path string) (bool, string, error) {
	if ns, err := os.Readlink("/proc/self/ns/pid"); err != nil || ns != initPIDNamespace {
		return false, "not in the host's PID namespace (a container?): /proc/locks does not list every process's locks", nil
	}
	var st syscall.Stat_t
	if err := syscall.Stat(path+"-shm", &st); err != nil {
		return false, "no -shm file (not in WAL mode?)", nil
	}
	f, err := os.Open("/proc/locks")
	if err != nil {
		return false, "cannot read /proc/locks", nil
	}
	defer f.Close()
	return shmAlone(bufio.NewScanner(&limitedReader{f: f, left: maxLocksFile}), lockFileID(uint64(st.Dev), st.Ino), os.Getpid())
}

// lockFileID is how /proc/locks names a file: major:minor:inode, the
// device numbers in hex.
func lockFileID(dev, ino uint64) string {
	major := (dev>>8)&0xfff | (dev>>32)&^0xfff
	minor := dev&0xff | (dev>>12)&^0xff
	return fmt.Sprintf("%02x:%02x:%d", major, minor, ino)
}

// shmAlone reads /proc/locks from sc: the file id is alone when self holds
// a lock on it and no other process does (an open file description's
// lock, whose owner shows as -1, counts as another's).
func shmAlone(sc *bufio.Scanner, id string, self int) (bool, string, error) {
	ours := false
	for sc.Scan() {
		// "1: POSIX  ADVISORY  READ 5433 08:01:7864448 128 128"; a
		// process waiting for a lock is listed after it as "1: -> POSIX …".
		fields := strings.Fields(sc.Text())
		if len(fields) > 1 && fields[1] == "->" {
			fields = append(fields[:1], fields[2:]...)
		}
		if len(fields) < 6 || fields[5] != id {
			continue
		}
		pid, err := strconv.Atoi(fields[4])
		if err != nil || pid != self {
			return false, "another process has the file open", nil
		}
		ours = true
	}
	if err := sc.Err(); err != nil {
		return false, "cannot read /proc/locks", nil
	}
	if !ours {
		return false, "this process holds no lock on the -shm file yet", nil
	}
	return true, "", nil
}

// limitedReader reads at most left bytes of f, then fails.
type limitedReader struct {
	f    *os.File
	left int
}

func (r *limitedReader) Read(p []byte) (int, error) {
	if r.left <= 0 {
		return 0, fmt.Errorf("/proc/locks is over %d bytes", maxLocksFile)
	}
	p = p[:min(len(p), r.left)]
	n, err := r.f.Read(p)
	r.left -= n
	return n, err
}
