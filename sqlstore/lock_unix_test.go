//go:build unix

package sqlstore_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

// TestLockFileIdentity: the same SQLite file through a symlink, a hard
// link in another directory or another relative path is one database
// with one lock; the lock file beside the path as given, which earlier
// versions take alone, is still taken too.
func TestLockFileIdentity(t *testing.T) {
	db := testdb.Open(t, sqlstore.SQLite)
	path := db.DSN().Path
	symlink := filepath.Join(t.TempDir(), "symlink.db")
	if err := os.Symlink(path, symlink); err != nil {
		t.Fatal(err)
	}
	hardlink := filepath.Join(t.TempDir(), "hardlink.db")
	if err := os.Link(path, hardlink); err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Dir(path))
	relative := "./" + filepath.Base(path)
	ways := map[string]string{"the path": path, "a symlink": symlink, "a hard link in another directory": hardlink, "a relative path": relative}
	for holder, hp := range ways {
		lock, err := testdb.OpenDSN(t, "sqlite:"+hp).Lock(ctx, false)
		if err != nil {
			t.Fatalf("lock through %s: %v", holder, err)
		}
		for other, op := range ways {
			if _, err := testdb.OpenDSN(t, "sqlite:"+op).Lock(ctx, false); !errors.Is(err, store.ErrLocked) {
				t.Errorf("locked through %s, then through %s: %v, want ErrLocked", holder, other, err)
			}
		}
		if err := lock.Unlock(); err != nil {
			t.Fatal(err)
		}
	}

	// An earlier version, which locks only <path>.tqscavenger.lock, and
	// this one exclude each other.
	old, err := os.OpenFile(path+".tqscavenger.lock", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if err := syscall.Flock(int(old.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Lock(ctx, false); !errors.Is(err, store.ErrLocked) {
		t.Errorf("lock while an earlier version holds the lock file beside the database: %v, want ErrLocked", err)
	}
	syscall.Flock(int(old.Fd()), syscall.LOCK_UN)
	lock, err := db.Lock(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(old.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Errorf("an earlier version could lock the file beside the database while this one holds the lock: %v", err)
	}
	lock.Unlock()
}
