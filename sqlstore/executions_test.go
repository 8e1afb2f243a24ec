package sqlstore_test

import (
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
	"github.com/tqscavenger/tqscavenger/wire"
)

func uuidOf(s string) wire.NamespaceID {
	id, err := wire.ParseNamespaceID(s)
	if err != nil {
		panic(err)
	}
	return id
}

// TestExecutionReader: every store.ExecutionReader method on every engine,
// on Temporal's DDL of the history tables.
func TestExecutionReader(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e sqlstore.Engine, db *sqlstore.DB) {
		testdb.CreateHistoryTables(t, db)

		// Empty tables: no rows, no max shard, no error.
		if _, ok, err := db.MaxExecutionShard(ctx); err != nil || ok {
			t.Fatalf("MaxExecutionShard on an empty table = %v, %v", ok, err)
		}
		ns1 := uuidOf("11111111-2222-4333-8444-555555555555")
		ns2 := uuidOf("aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee")
		testdb.InsertShards(t, db, 4)
		testdb.InsertClusterMetadata(t, db, "active", 4)
		testdb.InsertNamespace(t, db, ns1, "one", 72*time.Hour, false)
		testdb.InsertNamespace(t, db, ns2, "two", 90*time.Minute+500*time.Millisecond, true)

		run := func(i byte) wire.NamespaceID { return wire.NamespaceID{15: i, 0: 0xab} }
		k1 := testdb.InsertExecution(t, db, 4, ns1, "wf", run(1), wire.StateCompleted)
		k2 := testdb.InsertExecution(t, db, 4, ns2, "wf", run(2), wire.StateRunning) // same workflow id, other namespace
		k3 := testdb.InsertExecution(t, db, 4, ns1, "wf-other", run(3), wire.StateCreated)
		testdb.InsertCurrent(t, db, k2, wire.StateRunning)

		cm, err := db.ClusterMetadata(ctx)
		if err != nil || len(cm) != 1 || cm[0].ClusterName != "active" {
			t.Fatalf("ClusterMetadata = %+v, %v", cm, err)
		}
		if m, err := wire.DecodeClusterMetadata(cm[0].Encoding, cm[0].Data); err != nil || m.HistoryShardCount != 4 {
			t.Fatalf("decoded cluster metadata = %+v, %v", m, err)
		}
		if ids, err := db.ShardIDs(ctx); err != nil || !slices.Equal(ids, []int32{1, 2, 3, 4}) {
			t.Fatalf("ShardIDs = %v, %v", ids, err)
		}
		want := max(k1.ShardID, k2.ShardID, k3.ShardID)
		if m, ok, err := db.MaxExecutionShard(ctx); err != nil || !ok || m != want {
			t.Fatalf("MaxExecutionShard = %d, %v, %v; want %d", m, ok, err, want)
		}
		// One row of each workflow, whatever its runs: k1's workflow gets a
		// second run, which the walk skips; across shards, in key order.
		k1b := k1
		k1b.RunID = run(8)
		testdb.InsertExecutionRow(t, db, k1b, wire.EncodeExecutionState(wire.NamespaceID(k1b.RunID).String(), wire.StateRunning))
		var walk []store.ExecutionKey
		var after *store.ExecutionKey
		for {
			k, ok, err := db.NextWorkflow(ctx, after)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			walk = append(walk, k)
			after = &k
			if len(walk) > 10 {
				t.Fatalf("NextWorkflow does not end: %+v", walk)
			}
		}
		if len(walk) != 3 {
			t.Fatalf("NextWorkflow walked %+v; want the 3 workflows", walk)
		}
		for i, k := range walk {
			if wire.HistoryShard(wire.NamespaceID(k.NamespaceID).String(), k.WorkflowID, 4) != k.ShardID {
				t.Errorf("walked row %+v is not in its shard", k)
			}
			if i > 0 && walk[i-1].ShardID > k.ShardID {
				t.Errorf("not in shard order: %+v then %+v", walk[i-1], k)
			}
			// run(1) sorts before run(8).
			if k.NamespaceID == k1.NamespaceID && k.WorkflowID == k1.WorkflowID && k.RunID != k1.RunID {
				t.Errorf("k1's workflow as run %x, want its first run %x", k.RunID, k1.RunID)
			}
		}

		missing := k1
		missing.RunID = run(9)
		got, err := db.GetExecutions(ctx, []store.ExecutionKey{k1, k2, missing, k3})
		if err != nil || len(got) != 3 {
			t.Fatalf("GetExecutions = %d rows, %v; want 3", len(got), err)
		}
		states := map[store.ExecutionKey]wire.ExecutionState{}
		for _, r := range got {
			st, err := wire.DecodeExecutionState(r.StateEncoding, r.State)
			if err != nil {
				t.Fatal(err)
			}
			states[r.ExecutionKey] = st.State
		}
		if states[k1] != wire.StateCompleted || states[k2] != wire.StateRunning || states[k3] != wire.StateCreated {
			t.Fatalf("states = %v", states)
		}

		// More keys than one statement carries: chunked, all found.
		var many []store.ExecutionKey
		for i := range 250 {
			k := missing
			k.WorkflowID = "many-" + string(rune('a'+i%26)) + string(rune('a'+i/26))
			many = append(many, k)
		}
		many = append(many, k1)
		if got, err := db.GetExecutions(ctx, many); err != nil || len(got) != 1 || got[0].ExecutionKey != k1 {
			t.Fatalf("chunked GetExecutions = %+v, %v", got, err)
		}

		cur, err := db.GetCurrentExecutions(ctx, []store.ExecutionKey{k1, k2})
		if err != nil || len(cur) != 1 || cur[0].ExecutionKey != k2 || cur[0].State != int32(wire.StateRunning) {
			t.Fatalf("GetCurrentExecutions = %+v, %v", cur, err)
		}

		nss, err := db.Namespaces(ctx)
		if err != nil || len(nss) != 2 {
			t.Fatalf("Namespaces = %+v, %v", nss, err)
		}
		for _, n := range nss {
			r, err := wire.DecodeNamespaceRetention(n.Encoding, n.Data)
			if err != nil || !r.HasRetention {
				t.Fatalf("retention of %s: %+v, %v", n.Name, r, err)
			}
			switch {
			case n.Name == "one" && (n.IsGlobal || r.Retention != 72*time.Hour),
				n.Name == "two" && (!n.IsGlobal || r.Retention != 90*time.Minute+500*time.Millisecond):
				t.Errorf("namespace %s: global %v retention %v", n.Name, n.IsGlobal, r.Retention)
			}
		}
	})
}

// TestExecutionReaderNoTables: a database without the history tables is
// an error naming the table, not an empty answer.
func TestExecutionReaderNoTables(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e sqlstore.Engine, db *sqlstore.DB) {
		if _, err := db.ClusterMetadata(ctx); err == nil {
			t.Fatal("ClusterMetadata without the table: no error")
		} else if errors.Is(err, store.ErrNotFound) {
			t.Fatalf("ClusterMetadata without the table: %v", err)
		}
		if _, err := db.GetExecutions(ctx, []store.ExecutionKey{{WorkflowID: "x"}}); err == nil {
			t.Fatal("GetExecutions without the table: no error")
		}
	})
}

// TestExecutionReaderNoPrivilege: a user who may not read a history table
// gets store.ErrNoPrivilege naming the table, on the server engines.
func TestExecutionReaderNoPrivilege(t *testing.T) {
	for _, e := range []sqlstore.Engine{sqlstore.Postgres, sqlstore.MySQL} {
		t.Run(string(e), func(t *testing.T) {
			t.Parallel()
			db := testdb.Open(t, e)
			testdb.CreateHistoryTables(t, db)
			var dsn string
			if e == sqlstore.MySQL {
				u, _ := testdb.MySQLUser(t)
				name := u.User.Username()
				testdb.Exec(t, db, "REVOKE ALL PRIVILEGES, GRANT OPTION FROM '"+name+"'@'%'")
				testdb.Exec(t, db, "GRANT SELECT ON "+db.DSN().Database()+".tasks TO '"+name+"'@'%'")
				u.Path = db.DSN().URL.Path
				dsn = u.String()
			} else {
				u := *db.DSN().URL
				schema := u.Query().Get("search_path")
				role := schema + "_hist"
				testdb.Exec(t, db, "CREATE ROLE "+role+" LOGIN")
				t.Cleanup(func() {
					testdb.Exec(t, db, "DROP OWNED BY "+role)
					testdb.Exec(t, db, "DROP ROLE "+role)
				})
				testdb.Exec(t, db, "GRANT USAGE ON SCHEMA "+schema+" TO "+role)
				testdb.Exec(t, db, "GRANT SELECT ON "+schema+".tasks TO "+role)
				u.User = url.User(role)
				dsn = u.String()
			}
			reader, err := sqlstore.Open(ctx, dsn, sqlstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer reader.Close()
			_, err = reader.ClusterMetadata(ctx)
			if !errors.Is(err, store.ErrNoPrivilege) || !strings.Contains(err.Error(), "cluster_metadata_info") {
				t.Fatalf("ClusterMetadata = %v, want ErrNoPrivilege naming the table", err)
			}
			_, err = reader.GetExecutions(ctx, []store.ExecutionKey{{WorkflowID: "x"}})
			if !errors.Is(err, store.ErrNoPrivilege) || !strings.Contains(err.Error(), "executions") {
				t.Fatalf("GetExecutions = %v, want ErrNoPrivilege naming the table", err)
			}
		})
	}
}
