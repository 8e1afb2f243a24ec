package bench

// This file reads what the database cost sampler (dbcost.go) needs from
// Linux's /proc: a process's or thread's CPU time, which processes are the
// pass's, which TCP ports their connections have, and who holds which
// POSIX lock. Elsewhere every read fails, and the figures built on it are
// unavailable.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// CPU times are in clock ticks, USER_HZ (clockTicks, partitions.go): 100
// on every Linux, whatever the kernel's own tick; sysconf CLK_TCK says 100
// here, and Go has no sysconf without cgo.

// procStat is what the sampler reads of /proc/PID/stat (or
// /proc/PID/task/TID/stat), in clock ticks.
type procStat struct {
	comm string
	ppid int
	// utime and stime are the process's (a thread's: its own) user and
	// system time; cutime and cstime those of its children that it has
	// waited for.
	utime, stime, cutime, cstime int64
	// start is when it started, in ticks since boot.
	start int64
}

// cpu is the process's own CPU time, user plus system, in ticks.
func (s procStat) cpu() int64 { return s.utime + s.stime }

// readProcStat reads a stat file of /proc.
func readProcStat(path string) (procStat, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return procStat{}, err
	}
	return parseProcStat(b)
}

// parseProcStat parses a /proc stat line. The command name, in
// parentheses, may hold spaces and parentheses itself: the fields after it
// start after the last ')'.
func parseProcStat(b []byte) (procStat, error) {
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return procStat{}, fmt.Errorf("stat line without a command name: %.60q", b)
	}
	f := strings.Fields(string(b[end+1:]))
	// f[0] is field 3 of proc(5): state; ppid is 4, utime 14 to cstime 17,
	// starttime 22.
	if len(f) < 20 {
		return procStat{}, fmt.Errorf("stat line of %d fields, want 22 or more", len(f)+2)
	}
	var s procStat
	s.comm = string(b[open+1 : end])
	ints := []*int64{&s.utime, &s.stime, &s.cutime, &s.cstime}
	for i, p := range ints {
		v, err := strconv.ParseInt(f[11+i], 10, 64)
		if err != nil {
			return procStat{}, fmt.Errorf("stat field %d: %w", 14+i, err)
		}
		*p = v
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return procStat{}, fmt.Errorf("stat ppid: %w", err)
	}
	s.ppid = ppid
	if s.start, err = strconv.ParseInt(f[19], 10, 64); err != nil {
		return procStat{}, fmt.Errorf("stat starttime: %w", err)
	}
	return s, nil
}

// uptimeTicks is the time since boot, in clock ticks: what a process's
// start is counted from.
func uptimeTicks() (int64, error) {
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, errors.New("/proc/uptime is empty")
	}
	secs, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0, fmt.Errorf("/proc/uptime: %w", err)
	}
	return int64(secs * clockTicks), nil
}

// procParents maps every process's pid to its parent's.
func procParents() (map[int]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	parents := make(map[int]int, len(ents))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		// A process that ended since ReadDir is no one's to count.
		if s, err := readProcStat("/proc/" + e.Name() + "/stat"); err == nil {
			parents[pid] = s.ppid
		}
	}
	return parents, nil
}

// descendants returns the processes below root (not root), by parents.
func descendants(parents map[int]int, root int) []int {
	children := map[int][]int{}
	for pid, ppid := range parents {
		children[ppid] = append(children[ppid], pid)
	}
	var out []int
	for todo := children[root]; len(todo) > 0; {
		pid := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		out = append(out, pid)
		todo = append(todo, children[pid]...)
	}
	return out
}

// exePath is the executable a process runs, as /proc shows it: an absolute
// path with symbolic links resolved (less " (deleted)" when the file has
// been replaced since).
func exePath(pid int) (string, error) {
	p, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	return strings.TrimSuffix(p, " (deleted)"), err
}

// samePath resolves p as /proc shows executables: absolute, links
// resolved. A path that cannot be resolved is kept as it is absolute.
func samePath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	return p
}

// socketInodes returns the inodes of the sockets pid has open.
func socketInodes(pid int) (map[uint64]bool, error) {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	inodes := map[uint64]bool{}
	for _, e := range ents {
		l, err := os.Readlink(dir + "/" + e.Name())
		if err != nil {
			continue // closed since ReadDir
		}
		if s, ok := strings.CutPrefix(l, "socket:["); ok {
			if ino, err := strconv.ParseUint(strings.TrimSuffix(s, "]"), 10, 64); err == nil {
				inodes[ino] = true
			}
		}
	}
	return inodes, nil
}

// tcpPorts returns the local ports of pid's TCP sockets (IPv4 and IPv6),
// read in pid's own network namespace: the client ports a server shows
// for its connections.
func tcpPorts(pid int) (map[int]bool, error) {
	inodes, err := socketInodes(pid)
	if err != nil {
		return nil, err
	}
	ports := map[int]bool{}
	if len(inodes) == 0 {
		return ports, nil
	}
	var read bool
	for _, name := range []string{"tcp", "tcp6"} {
		f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/net/" + name)
		if err != nil {
			continue // no IPv6, say
		}
		read = true
		parseTCPTable(f, inodes, ports)
		f.Close()
	}
	if !read {
		return nil, fmt.Errorf("no /proc/%d/net/tcp to read", pid)
	}
	return ports, nil
}

// parseTCPTable adds to ports the local port of each socket of
// /proc/net/tcp's table in r whose inode is in inodes. A line is
// "sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout
// inode …", an address being HEXIP:HEXPORT.
func parseTCPTable(r *os.File, inodes map[uint64]bool, ports map[int]bool) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 10 {
			continue
		}
		ino, err := strconv.ParseUint(f[9], 10, 64)
		if err != nil || !inodes[ino] {
			continue
		}
		_, hexPort, ok := strings.Cut(f[1], ":")
		if !ok {
			continue
		}
		if p, err := strconv.ParseUint(hexPort, 16, 16); err == nil {
			ports[int(p)] = true
		}
	}
}

// posixLock is one granted lock of /proc/locks.
type posixLock struct {
	pid        int
	write      bool
	dev        string // major:minor, in hex as /proc/locks has it
	ino        uint64
	start, end int64 // end -1: to the end of the file (EOF)
}

// covers reports whether l holds byte off.
func (l posixLock) covers(off int64) bool {
	return l.start <= off && (l.end < 0 || off <= l.end)
}

// parseLocks parses /proc/locks' granted POSIX locks: lines such as
// "1: POSIX  ADVISORY  WRITE 3884 fe:00:778394 120 120". Waiting requests
// ("1: -> POSIX …"), and flock and OFD locks (whose pid is no owner's),
// are skipped.
func parseLocks(b []byte) []posixLock {
	var out []posixLock
	for line := range bytes.Lines(b) {
		f := strings.Fields(string(line))
		if len(f) < 8 || f[1] != "POSIX" {
			continue
		}
		pid, err := strconv.Atoi(f[4])
		if err != nil {
			continue
		}
		id := strings.Split(f[5], ":")
		if len(id) != 3 {
			continue
		}
		ino, err := strconv.ParseUint(id[2], 10, 64)
		if err != nil {
			continue
		}
		start, err := strconv.ParseInt(f[6], 10, 64)
		if err != nil {
			continue
		}
		end := int64(-1)
		if f[7] != "EOF" {
			if end, err = strconv.ParseInt(f[7], 10, 64); err != nil {
				continue
			}
		}
		out = append(out, posixLock{pid: pid, write: f[3] == "WRITE", dev: id[0] + ":" + id[1], ino: ino, start: start, end: end})
	}
	return out
}
