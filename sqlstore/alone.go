// This file owns the proof that a SQLite file has no other user: what a
// gentle pass needs before it holds the writer lock as long as it likes.

package sqlstore

import (
	"context"

	"github.com/tqscavenger/tqscavenger/store"
)

var _ store.AloneProver = (*DB)(nil)

// Alone implements store.AloneProver. On SQLite in WAL mode every
// connection holds a shared lock on a byte of the -shm file (SQLite's
// "DMS" lock) for as long as it has the database open, idle or not; WAL
// works only between processes of one host, which share that file's
// memory. So where the kernel lists every process's locks (Linux, this
// process in the initial PID namespace: in a container, the locks of
// processes in other containers are not listed), the file is alone when
// /proc/locks shows this process's lock on the -shm file and no other
// process's. The proof fails, and Alone says why, on another engine or
// system, in a rollback journal (an idle connection there holds no lock),
// in a container, and before the store's own connection has opened the
// -shm file.
//
// It cannot see another connection of this process: a program that opens
// the file beside the store in its own process is its own judge.
func (s *DB) Alone(ctx context.Context) (alone bool, why string, err error) {
	if s.d.engine != SQLite {
		return false, "not SQLite", nil
	}
	if err := ctx.Err(); err != nil {
		return false, "", err
	}
	return aloneOnFile(s.dsn.Path)
}
