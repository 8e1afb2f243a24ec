package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/seed"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
	"github.com/tqscavenger/tqscavenger/wire"
)

// TestRawMatchesPastLiveHead checks that the raw bound deletes exactly
// what a default pass with --past-live-head deletes, on shuffled data
// read and deleted in small pages and batches, so that runs of expired
// tasks cross pages, batches and queues.
func TestRawMatchesPastLiveHead(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	specs := []seed.Spec{
		{NamePrefix: "mixed", Queues: 40, TasksPerQueue: 23, Expired: 0.6, NoExpiry: 0.2, Layout: seed.Shuffled, Seed: 7},
		{NamePrefix: "gone", Queues: 30, TasksPerQueue: 5, Expired: 1},
		{NamePrefix: "empty", Queues: 20},
		// Empty once scavenged, but used an hour ago: kept.
		{NamePrefix: "fresh", Queues: 5, TasksPerQueue: 3, Expired: 1, IdleAge: time.Hour},
		// A live task in subqueue 1 keeps a queue whose subqueue 0 empties.
		{NamePrefix: "sub", Queues: 3, TasksPerQueue: 4, Subqueues: 2, Expired: 0.5, NoExpiry: 0.5, Layout: seed.LiveFirst},
	}
	variants := []struct {
		name string
		cfg  RawConfig
	}{
		{"raw", RawConfig{}},
		{"safe", RawConfig{Safe: true}},
		// Every delete commits at once, and all of them in one transaction.
		{"safe, transactions of one statement", RawConfig{Safe: true, TxBudget: time.Nanosecond}},
		{"transactions of every statement", RawConfig{TxBudget: time.Hour}},
	}
	for _, e := range testdb.Engines {
		for _, v := range variants {
			t.Run(string(e)+"/"+v.name, func(t *testing.T) {
				raw, scav := testdb.Open(t, e), testdb.Open(t, e)
				for _, db := range []*sqlstore.DB{raw, scav} {
					for _, s := range specs {
						if s.IdleAge == 0 {
							s.IdleAge = idleAge
						}
						s.Now = now
						if _, err := seed.Write(ctx, db, s); err != nil {
							t.Fatal(err)
						}
					}
					// Leave sub-0's subqueue 0 with expired tasks only.
					id := wire.QueueID(seed.DefaultNamespace, "sub-0", wire.TaskTypeActivity, 0)
					q := "DELETE FROM tasks WHERE task_queue_id = ? AND task_id = 1"
					if e == sqlstore.Postgres {
						q = "DELETE FROM tasks WHERE task_queue_id = $1 AND task_id = 1"
					}
					testdb.Exec(t, db, q, id)
				}
				cfg := v.cfg
				cfg.Now, cfg.PageSize, cfg.BatchSize = now, 17, 7
				rst, err := Raw(ctx, raw, cfg)
				if err != nil {
					t.Fatal(err)
				}
				sst, err := scavenger.New(scav, scavenger.Config{Rules: scavenger.Rules{PastLiveHead: true, Tables: []store.Table{store.V1}}, Hooks: scavenger.Hooks{Now: func() time.Time { return now }, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}}).Run(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if rst.TasksDeleted != sst.TasksDeleted || rst.QueuesDeleted != sst.QueuesDeleted {
					t.Errorf("raw deleted %d tasks and %d queues, the scavenger %d and %d", rst.TasksDeleted, rst.QueuesDeleted, sst.TasksDeleted, sst.QueuesDeleted)
				}
				if rst.TasksDeleted == 0 || rst.QueuesDeleted == 0 {
					t.Errorf("raw deleted %d tasks and %d queues: the test data should make it delete both", rst.TasksDeleted, rst.QueuesDeleted)
				}
				for _, q := range []string{
					"SELECT range_hash, task_queue_id, task_id FROM tasks ORDER BY range_hash, task_queue_id, task_id",
					"SELECT range_hash, task_queue_id, range_id FROM task_queues ORDER BY range_hash, task_queue_id",
				} {
					a, b := keys(t, raw, q), keys(t, scav, q)
					if !slices.Equal(a, b) {
						t.Errorf("%s: raw left %d rows, the scavenger %d:\nraw:       %q\nscavenger: %q", q, len(a), len(b), a, b)
					}
				}
				if n := int64(len(keys(t, raw, "SELECT range_hash, task_queue_id, range_id FROM task_queues"))); n != 40+5+3 {
					t.Errorf("%d queues left, want the 40 mixed, 5 fresh and 3 sub", n)
				}
				if rst.Orphans != 0 {
					t.Errorf("%d orphans found, want none", rst.Orphans)
				}
			})
		}
	}
}

// keys returns the rows of q, three integer or byte columns, formatted.
func keys(t *testing.T, db *sqlstore.DB, q string) []string {
	t.Helper()
	rows, err := testdb.SQL(t, db).Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var (
			a, c int64
			b    []byte
		)
		if err := rows.Scan(&a, &b, &c); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%d/%x/%d", a, b, c))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
