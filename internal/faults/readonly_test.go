package faults

import (
	"bufio"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// readOnly returns db's DSN with every transaction read-only, as on a
// replica: PostgreSQL's default_transaction_read_only, MySQL's
// tx_read_only, set for the session by the DSN.
func readOnly(t *testing.T, db *sqlstore.DB) string {
	t.Helper()
	u, err := url.Parse(dsnOf(db))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	if db.Engine() == sqlstore.Postgres {
		q.Set("default_transaction_read_only", "on")
	} else {
		q.Set("tx_read_only", "1")
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// readerOnly returns a DSN of db for a new user granted SELECT only.
func readerOnly(t *testing.T, db *sqlstore.DB) string {
	t.Helper()
	if db.Engine() == sqlstore.MySQL {
		u, _ := testdb.MySQLUser(t)
		testdb.Exec(t, db, "REVOKE ALL PRIVILEGES, GRANT OPTION FROM '"+u.User.Username()+"'@'%'")
		testdb.Exec(t, db, "GRANT SELECT ON "+db.DSN().Database()+".* TO '"+u.User.Username()+"'@'%'")
		u.Path = db.DSN().URL.Path
		return u.String()
	}
	u := *db.DSN().URL
	schema := u.Query().Get("search_path")
	role := schema + "_reader"
	testdb.Exec(t, db, "CREATE ROLE "+role+" LOGIN")
	t.Cleanup(func() {
		testdb.Exec(t, db, "DROP OWNED BY "+role)
		testdb.Exec(t, db, "DROP ROLE "+role)
	})
	testdb.Exec(t, db, "GRANT USAGE ON SCHEMA "+schema+" TO "+role)
	testdb.Exec(t, db, "GRANT SELECT ON ALL TABLES IN SCHEMA "+schema+" TO "+role)
	u.User = url.User(role)
	return u.String()
}

// TestReadOnlyDatabase: every delete of a pass on a read-only database
// (read-only transactions, or a user granted SELECT only) fails.
//
// Invariant: run exits 1 at once (no retries), names the cause and what
// to do, and nothing is deleted; serve counts its passes as failed and
// never sets the last success.
func TestReadOnlyDatabase(t *testing.T) {
	for _, e := range servers {
		for how, dsnFor := range map[string]func(*testing.T, *sqlstore.DB) string{"read-only transactions": readOnly, "SELECT only": readerOnly} {
			t.Run(string(e)+"/"+how, func(t *testing.T) {
				t.Parallel()
				db := testdb.Open(t, e)
				before := seedWorkload(t, db, workload{dead: 20, live: 5, tasksPerQueue: 10})
				dsn := dsnFor(t, db)

				began := time.Now()
				code, out := tqs(t, time.Minute, "run", "--db", dsn, "--progress", "never")
				if code != 1 {
					t.Errorf("run: exit status %d, want 1", code)
				}
				for _, want := range []string{"read_only", "outcome: failed", "point --db at the primary"} {
					if !strings.Contains(out, want) {
						t.Errorf("run: the output does not say %q:\n%s", want, out)
					}
				}
				if took := time.Since(began); took > 20*time.Second {
					t.Errorf("run took %s: a read-only database is not worth retrying", took)
				}
				if tasks, queues := checkSafe(t, before, snapshot(t, db)); tasks != 0 || queues != 0 {
					t.Errorf("%d tasks and %d queues went from a read-only database", tasks, queues)
				}

				p := start(t, "serve", "--db", dsn, "--run-at-start", "--every", "1s", "--unsafe-short-interval", "--jitter", "0", "--listen", "127.0.0.1:0", "--log-format", "json")
				addr := listenAddr(t, p)
				// The third pass starts once the second is recorded.
				p.waitOutputN(`"msg":"scavenger pass started"`, 3, time.Minute)
				m := metrics(t, addr)
				if m["tqscavenger_last_success_timestamp_seconds"] != 0 {
					t.Errorf("last success set by failed passes: %v", m["tqscavenger_last_success_timestamp_seconds"])
				}
				if m["tqscavenger_passes_failed_total"] < 2 {
					t.Errorf("passes_failed_total %v after two failed passes", m["tqscavenger_passes_failed_total"])
				}
				p.cmd.Process.Signal(syscall.SIGTERM)
				if code := p.wait(time.Minute); code != 0 {
					t.Errorf("serve stopped by SIGTERM: exit %d", code)
				}
			})
		}
	}
}

// metrics scrapes /metrics: each sample's value by name (labels kept).
func metrics(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	res, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	m := map[string]float64{}
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "#") {
			continue
		}
		i := strings.LastIndexByte(l, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(l[i+1:], 64)
		if err == nil {
			m[l[:i]] = v
		}
	}
	return m
}
