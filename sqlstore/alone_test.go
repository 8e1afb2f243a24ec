//go:build linux

package sqlstore_test

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

// TestAloneChild is run by TestAlone in a child process: it opens the
// SQLite file named by TQS_ALONE_CHILD as Temporal's SQLite plugin does
// (no busy timeout), reads from it, says "ready" and keeps the file open
// until its standard input closes.
func TestAloneChild(t *testing.T) {
	path := os.Getenv("TQS_ALONE_CHILD")
	if path == "" {
		t.Skip("run by TestAlone")
	}
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow("SELECT count(*) FROM sqlite_master").Scan(&n); err != nil {
		t.Fatal(err)
	}
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
}

// TestAlone: a SQLite file in WAL mode that only the store has open is
// alone, once the store has read it; while another process has it open
// (idle, holding no transaction) it is not, and it is again once that
// process is gone. A file in a rollback journal is never proven alone, nor
// is a server engine.
func TestAlone(t *testing.T) {
	ctx := context.Background()
	db := testdb.OpenDSN(t, testdb.DSN(t, sqlstore.SQLite))
	alone := func(want bool, says string) {
		t.Helper()
		got, why, err := db.Alone(ctx)
		if err != nil || got != want || !strings.Contains(why, says) {
			t.Fatalf("Alone = %v, %q, %v; want %v, %q", got, why, err, want, says)
		}
	}
	if _, err := db.Tables(ctx); err != nil {
		t.Fatal(err)
	}
	alone(true, "")

	cmd := exec.Command(os.Args[0], "-test.run=^TestAloneChild$")
	cmd.Env = append(os.Environ(), "TQS_ALONE_CHILD="+db.DSN().Path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("child said %q, %v", line, err)
	}
	alone(false, "another process")
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	alone(true, "")

	t.Run("rollback journal", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "rollback.db")
		raw, err := sql.Open("sqlite", "file:"+file)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := raw.Exec("CREATE TABLE t (x INT)"); err != nil {
			t.Fatal(err)
		}
		raw.Close()
		db := testdb.OpenDSN(t, "sqlite:"+file)
		if _, err := db.Tables(ctx); err != nil {
			t.Fatal(err)
		}
		if got, why, err := db.Alone(ctx); got || err != nil || !strings.Contains(why, "WAL") {
			t.Errorf("Alone = %v, %q, %v; want false, not in WAL mode", got, why, err)
		}
	})
	for _, e := range []sqlstore.Engine{sqlstore.Postgres, sqlstore.MySQL} {
		t.Run(string(e), func(t *testing.T) {
			var ap store.AloneProver = testdb.Open(t, e)
			if got, why, err := ap.Alone(ctx); got || err != nil || why != "not SQLite" {
				t.Errorf("Alone = %v, %q, %v; want false, not SQLite", got, why, err)
			}
		})
	}
}
