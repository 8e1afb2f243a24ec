package testdb_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

// TestChild is run by TestSkipOrFail in a child process: it opens a store
// on the engine named by TQS_TESTDB_CHILD.
func TestChild(t *testing.T) {
	e := os.Getenv("TQS_TESTDB_CHILD")
	if e == "" {
		t.Skip("run by TestSkipOrFail")
	}
	testdb.Open(t, sqlstore.Engine(e))
	t.Log("opened")
}

// TestSkipOrFail runs a test without a server: it must skip with a message
// naming the variable, and fail under CI=true so CI cannot pass by
// skipping. An unreachable server is treated the same.
func TestSkipOrFail(t *testing.T) {
	for _, e := range []sqlstore.Engine{sqlstore.Postgres, sqlstore.MySQL} {
		for _, c := range []struct {
			name, dsn, ci string
			fail          bool
			says          string
		}{
			{"unset", "", "", false, "set " + testdb.EnvVar(e)},
			{"unset under CI", "", "true", true, "CI=true"},
			{"unreachable", string(e) + "://u:sekret@127.0.0.1:1/db", "", false, "unreachable via " + testdb.EnvVar(e)},
			{"unreachable under CI", string(e) + "://u:sekret@127.0.0.1:1/db", "true", true, "CI=true"},
		} {
			t.Run(string(e)+"/"+c.name, func(t *testing.T) {
				cmd := exec.Command(os.Args[0], "-test.run=^TestChild$", "-test.v")
				env := []string{"TQS_TESTDB_CHILD=" + string(e)}
				for _, kv := range os.Environ() {
					if !strings.HasPrefix(kv, "CI=") && !strings.HasPrefix(kv, "TQS_TEST_") {
						env = append(env, kv)
					}
				}
				if c.dsn != "" {
					env = append(env, testdb.EnvVar(e)+"="+c.dsn)
				}
				if c.ci != "" {
					env = append(env, "CI="+c.ci)
				}
				cmd.Env = env
				out, err := cmd.CombinedOutput()
				failed := err != nil
				if failed != c.fail {
					t.Errorf("child failed: %v, want %v\n%s", failed, c.fail, out)
				}
				if !c.fail && !strings.Contains(string(out), "--- SKIP") {
					t.Errorf("child did not skip:\n%s", out)
				}
				if !strings.Contains(string(out), c.says) {
					t.Errorf("child output does not say %q:\n%s", c.says, out)
				}
				if strings.Contains(string(out), "sekret") {
					t.Errorf("child output shows the password:\n%s", out)
				}
			})
		}
	}
}

// TestFresh checks that each test gets its own empty database with the task
// tables, and that it is gone when the test ends.
func TestFresh(t *testing.T) {
	for _, e := range testdb.Engines {
		t.Run(string(e), func(t *testing.T) {
			var dsns []string
			for i := range 2 {
				t.Run("store", func(t *testing.T) {
					db := testdb.Open(t, e)
					dsns = append(dsns, db.DSN().String())
					tables, err := db.Tables(context.Background())
					if err != nil || len(tables) != 2 {
						t.Fatalf("tables %v, %v: want v1 and v2", tables, err)
					}
					rows, err := db.ListQueues(context.Background(), store.V1, nil, 10)
					if err != nil || len(rows) != 0 {
						t.Fatalf("a fresh store has %d queue rows (%v)", len(rows), err)
					}
					// Leave a row behind: the next store must not see it.
					q := store.QueueRow{QueueKey: store.QueueKey{RangeHash: uint32(i), ID: []byte("q")}, RangeID: 1, Data: []byte{}, Encoding: "Proto3"}
					if err := db.CreateQueue(context.Background(), store.V1, q); err != nil {
						t.Fatal(err)
					}
				})
			}
			if len(dsns) == 2 && dsns[0] == dsns[1] {
				t.Errorf("two tests share %s", dsns[0])
			}
			if e == sqlstore.SQLite {
				return
			}
			// The schema (PostgreSQL) or database (MySQL) is dropped.
			admin, err := sqlstore.Open(context.Background(), testdb.Server(t, e), sqlstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer admin.Close()
			for _, dsn := range dsns {
				d, _ := sqlstore.ParseDSN(dsn)
				name := d.Database()
				q := "SELECT count(*) FROM information_schema.schemata WHERE schema_name = ?"
				if e == sqlstore.Postgres {
					name = d.URL.Query().Get("search_path")
					q = "SELECT count(*) FROM information_schema.schemata WHERE schema_name = $1"
				}
				var n int
				if err := testdb.SQL(t, admin).QueryRowContext(context.Background(), q, name).Scan(&n); err != nil {
					t.Fatal(err)
				}
				if n != 0 {
					t.Errorf("%s is still there after its test", name)
				}
			}
		})
	}
}
