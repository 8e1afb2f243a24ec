package bench

// SQLite's side of the database cost sampler (dbcost.go): how long the
// pass held the write lock.
//
// `tqscavenger run --stats-json` does not say how long the pass held it
// (its counts, statements and elapsed time only), so it is seen from
// outside, without touching the lock: SQLite's locks are POSIX advisory
// locks, and /proc/locks lists each with the pid of its holder. A probe
// connection trying BEGIN IMMEDIATE would itself take the lock from the
// workload, and an fcntl(F_GETLK) needs a descriptor of the file whose
// closing would drop every POSIX lock this process (the workload's
// connection) holds on it.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// The bytes SQLite's unix VFS locks to write.
const (
	// walWriteLock is WAL_WRITE_LOCK's byte in the -shm file: the shm
	// locks start at byte 120 ((22+SQLITE_SHM_NLOCK)*4), the write lock
	// first.
	walWriteLock = 120
	// reservedByte is RESERVED_BYTE of the main file (PENDING_BYTE+1),
	// which a writer holds in rollback-journal mode.
	reservedByte = 0x40000001
)

// sqliteCost samples /proc/locks for the write lock of one database.
type sqliteCost struct {
	id passIdent
	// locks is /proc/locks, open for the span and read at each tick into
	// buf: a pread of a procfs file renders it anew.
	locks *os.File
	buf   []byte
	files []lockedFile
	// pids caches whether a holder's pid is the pass's.
	pids map[int]bool
	held float64
	// restat is when to look again for a file not found yet (the -shm
	// file appears with the first connection in WAL mode).
	restat time.Time
	failed int
	// err is the last tick's error, identErr the last error telling the
	// pass's processes.
	err, identErr error
}

// lockedFile is a file whose byte off is the write lock.
type lockedFile struct {
	path  string
	off   int64
	found bool
	dev   string
	ino   uint64
}

// startSQLiteCost starts sampling the write lock of the database file
// path.
func startSQLiteCost(path string, id passIdent, c *Cost) costProbe {
	locks, err := os.Open("/proc/locks")
	if err != nil {
		return unavailableProbe(c, fmt.Errorf("no /proc/locks to read the write lock's holder from: %w", err), "WriteLockSeconds")
	}
	p := &sqliteCost{id: id, locks: locks, buf: make([]byte, 16<<10), pids: map[int]bool{}, files: []lockedFile{
		{path: path + "-shm", off: walWriteLock},
		{path: path, off: reservedByte},
	}}
	p.find()
	return p
}

// find looks for the files not found yet.
func (p *sqliteCost) find() {
	for i := range p.files {
		f := &p.files[i]
		if !f.found {
			var err error
			f.dev, f.ino, err = fileID(f.path)
			f.found = err == nil
		}
	}
	p.restat = time.Now().Add(100 * time.Millisecond)
}

func (p *sqliteCost) tick(_ context.Context, dt time.Duration) int {
	if !p.files[0].found && time.Now().After(p.restat) {
		p.find()
	}
	b, err := p.readLocks()
	if err != nil {
		p.failed++
		p.err = err
		return -1
	}
	for _, l := range parseLocks(b) {
		if l.write && p.isWriteLock(l) && p.isPass(l.pid) {
			p.held += dt.Seconds()
			break
		}
	}
	return -1 // no one's waits are seen from here
}

// readLocks reads /proc/locks whole.
func (p *sqliteCost) readLocks() ([]byte, error) {
	for {
		n, err := p.locks.ReadAt(p.buf, 0)
		if n < len(p.buf) && (err == nil || errors.Is(err, io.EOF)) {
			return p.buf[:n], nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("/proc/locks: %w", err)
		}
		p.buf = make([]byte, 2*len(p.buf)) // it filled the buffer: more locks than it holds
	}
}

// isWriteLock reports whether l holds the write lock's byte of one of the
// files.
func (p *sqliteCost) isWriteLock(l posixLock) bool {
	for _, f := range p.files {
		if f.found && l.ino == f.ino && l.dev == f.dev && l.covers(f.off) {
			return true
		}
	}
	return false
}

// isPass reports whether pid is a process of the pass.
func (p *sqliteCost) isPass(pid int) bool {
	if is, ok := p.pids[pid]; ok {
		return is
	}
	procs, err := p.id.procs()
	if err != nil {
		p.identErr = err
		return false // not cached: asked again at the next tick
	}
	p.pids[pid] = procs[pid]
	return procs[pid]
}

func (p *sqliteCost) finish(_ context.Context, c *Cost) {
	p.locks.Close()
	c.FailedSamples = p.failed
	switch {
	case !p.files[0].found && !p.files[1].found:
		c.unavailable("WriteLockSeconds", fmt.Errorf("the database file %s was not found", p.files[1].path))
	case p.identErr != nil && p.held == 0:
		c.unavailable("WriteLockSeconds", fmt.Errorf("cannot tell the pass's processes: %w", p.identErr))
	case p.failed > 0 && p.failed*2 >= c.Samples:
		c.unavailable("WriteLockSeconds", fmt.Errorf("%d of %d samples failed: %w", p.failed, c.Samples, p.err))
	default:
		held := p.held
		c.WriteLockSeconds = &held
	}
}
