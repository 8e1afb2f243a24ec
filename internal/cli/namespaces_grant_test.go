package cli_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/cli"
	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/seed"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/wire"
)

// TestNamespaceGrant: on PostgreSQL and MariaDB, a user with the grants of
// docs/privileges.md reads namespaces by name (run --namespace orders
// covers that namespace only, report shows the names); without SELECT on
// namespaces, report still counts by id and says why the names are
// missing, and a name is refused naming the grant.
func TestNamespaceGrant(t *testing.T) {
	for _, e := range []sqlstore.Engine{sqlstore.Postgres, sqlstore.MySQL} {
		t.Run(string(e), func(t *testing.T) { testNamespaceGrant(t, e) })
	}
}

// grants are docs/privileges.md's statements for a user of the task
// tables (without SELECT on namespaces), and the one for namespaces.
func grants(e sqlstore.Engine, schema, user string) (create, drop []string, namespaces string) {
	tables := []string{"task_queues", "tasks", "task_queues_v2", "tasks_v2"}
	if e == sqlstore.Postgres {
		return []string{"CREATE ROLE " + user + " LOGIN PASSWORD 'pw'", "GRANT USAGE ON SCHEMA " + schema + " TO " + user,
				fmt.Sprintf("GRANT SELECT, DELETE ON %s.%s TO %s", schema, strings.Join(tables, ", "+schema+"."), user)},
			[]string{"DROP OWNED BY " + user, "DROP ROLE " + user},
			fmt.Sprintf("GRANT SELECT ON %s.namespaces TO %s", schema, user)
	}
	create = []string{"CREATE USER '" + user + "'@'%' IDENTIFIED BY 'pw'"}
	for _, tb := range tables {
		create = append(create, fmt.Sprintf("GRANT SELECT, DELETE ON %s.%s TO '%s'@'%%'", schema, tb, user))
	}
	return create, []string{"DROP USER '" + user + "'@'%'"}, fmt.Sprintf("GRANT SELECT ON %s.namespaces TO '%s'@'%%'", schema, user)
}

func testNamespaceGrant(t *testing.T, e sqlstore.Engine) {
	ctx := context.Background()
	dsn := testdb.DSN(t, e)
	db := testdb.OpenDSN(t, dsn)
	orders, other := wire.NamespaceID{0x7c, 1}, wire.NamespaceID{0x0b, 2}
	for _, ns := range []wire.NamespaceID{orders, other} {
		if _, err := seed.Write(ctx, db, seed.Spec{Namespace: ns, Queues: 3, TasksPerQueue: 10, Expired: 0.5, IdleAge: 72 * time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	testdb.CreateHistoryTables(t, db)
	testdb.InsertNamespace(t, db, orders, "orders", 72*time.Hour, false)
	testdb.InsertNamespace(t, db, other, "billing", 72*time.Hour, false)

	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	schema := u.Query().Get("search_path")
	if e == sqlstore.MySQL {
		schema = strings.TrimPrefix(u.Path, "/")
	}
	b := make([]byte, 4)
	rand.Read(b)
	role := "tqs_user_" + hex.EncodeToString(b)
	create, drop, nsGrant := grants(e, schema, role)
	admin := testdb.SQL(t, db)
	grant := func(qs ...string) {
		t.Helper()
		for _, q := range qs {
			if _, err := admin.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	t.Cleanup(func() {
		for _, q := range drop {
			admin.ExecContext(context.Background(), q)
		}
	})
	grant(create...)
	u.User = url.UserPassword(role, "pw")
	roleDSN := u.String()

	code, out, errOut := tqs("report", "--db", roleDSN, "--modes=false", "--json")
	var r struct {
		Names map[string]string `json:"namespace_names"`
		Err   string            `json:"namespace_names_error"`
	}
	if err := json.Unmarshal([]byte(out), &r); code != cli.ExitOK || err != nil {
		t.Fatalf("report without SELECT on namespaces: exit %d, %v: %s%s", code, err, out, errOut)
	}
	if len(r.Names) != 0 || !strings.Contains(r.Err, "namespaces") {
		t.Errorf("report without the grant: names %v, error %q; want none, and why", r.Names, r.Err)
	}
	code, _, errOut = tqs("run", "--db", roleDSN, "--dry-run", "--namespace", "orders", "--progress", "never")
	if code != cli.ExitUsage || !strings.Contains(errOut, "grant SELECT on the namespaces table") {
		t.Errorf("a name without the grant: exit %d, want %d naming the grant:\n%s", code, cli.ExitUsage, errOut)
	}

	grant(nsGrant)
	code, out, errOut = tqs("run", "--db", roleDSN, "--dry-run", "--namespace", "orders", "--progress", "never", "--output", "json", "--log-level", "warn")
	var st map[string]any
	if err := json.Unmarshal([]byte(out), &st); code != cli.ExitOK || err != nil {
		t.Fatalf("with the documented grants: exit %d, %v: %s%s", code, err, out, errOut)
	}
	if w := st["would_delete"].(map[string]any); w["tasks"] != 15.0 {
		t.Errorf("--namespace orders would delete %v tasks, want 15 (its 3 queues' expired half)", w["tasks"])
	}
	code, out, errOut = tqs("report", "--db", roleDSN, "--modes=false")
	if code != cli.ExitOK || !strings.Contains(out, "orders ("+orders.String()+")") || !strings.Contains(out, "billing ("+other.String()+")") {
		t.Errorf("report with the grant (exit %d) does not show the names:\n%s%s", code, out, errOut)
	}
}
