package report_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/report"
	"github.com/tqscavenger/tqscavenger/seed"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/wire"
)

func hexLit(db *sqlstore.DB, b []byte) string {
	if db.Engine() == sqlstore.Postgres {
		return `'\x` + hex.EncodeToString(b) + `'::bytea`
	}
	return "X'" + hex.EncodeToString(b) + "'"
}

// TestReportListsBadRows: on every engine, report lists each row no mode
// can judge, with its key and why, and counts it in its table's bad rows:
// a queue row and a task row whose data does not decode, tasks whose
// task_queue_id fits no queue id layout, and (PostgreSQL and SQLite,
// whose columns hold them) a queue row at range_hash −1 and tasks at
// 2³², which no listing reaches: before, a report counted none of those
// and a pass reported them as bad rows. In the JSON and in the text.
func TestReportListsBadRows(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, e := range testdb.Engines {
		t.Run(string(e), func(t *testing.T) {
			t.Parallel()
			db := testdb.Open(t, e)
			if _, err := seed.Write(ctx, db, seed.Spec{Queues: 4, TasksPerQueue: 3, Expired: 1, IdleAge: 72 * time.Hour, Now: now}); err != nil {
				t.Fatal(err)
			}
			id := func(i int) []byte {
				return wire.QueueID(seed.DefaultNamespace, "seed-"+string(rune('0'+i)), wire.TaskTypeActivity, 0)
			}
			testdb.Exec(t, db, "UPDATE task_queues SET data = "+hexLit(db, []byte{0x12, 0x7f})+" WHERE task_queue_id = "+hexLit(db, id(0)))
			testdb.Exec(t, db, "UPDATE tasks SET data = "+hexLit(db, []byte{0x12, 0x7f})+" WHERE task_id = 2 AND task_queue_id = "+hexLit(db, id(1)))
			testdb.Exec(t, db, "INSERT INTO tasks (range_hash, task_queue_id, task_id, data, data_encoding) SELECT 77, "+hexLit(db, []byte("abc"))+
				", task_id, data, data_encoding FROM tasks WHERE task_queue_id = "+hexLit(db, id(2)))
			want := []string{"v1 queue " + hex.EncodeToString(id(0)), "v1 task " + hex.EncodeToString(id(1)) + " 2", "v1 tasks 616263"}
			if e != sqlstore.MySQL {
				testdb.Exec(t, db, "INSERT INTO task_queues (range_hash, task_queue_id, range_id, data, data_encoding) SELECT -1, task_queue_id, range_id, data, data_encoding FROM task_queues WHERE task_queue_id = "+hexLit(db, id(3)))
				testdb.Exec(t, db, "INSERT INTO tasks (range_hash, task_queue_id, task_id, data, data_encoding) SELECT 4294967296, task_queue_id, task_id, data, data_encoding FROM tasks WHERE task_id = 1 AND task_queue_id = "+hexLit(db, id(3)))
				want = append(want, "v1 queue "+hex.EncodeToString(id(3))+" range_hash -1", "v1 task "+hex.EncodeToString(id(3))+" 1 range_hash 4294967296")
			}
			r, err := report.Take(ctx, db, report.Options{Now: now})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, b := range r.BadRows {
				s := b.Table + " " + b.Kind + " " + b.TaskQueueID
				if b.TaskID != nil {
					s += " " + itoa(*b.TaskID)
				}
				if b.RangeHash < 0 || b.RangeHash > 1<<32-1 {
					s += " range_hash " + itoa(b.RangeHash)
				}
				if b.Reason == "" {
					t.Errorf("%s: no reason", s)
				}
				got = append(got, s)
			}
			for _, w := range want {
				found := false
				for _, g := range got {
					found = found || g == w
				}
				if !found {
					t.Errorf("bad row %q not listed; listed %q", w, got)
				}
			}
			if len(got) != len(want) || r.Tables["v1"].BadRows != int64(len(want)) {
				t.Errorf("%d listed, %d counted: want %d", len(got), r.Tables["v1"].BadRows, len(want))
			}
			var text, js bytes.Buffer
			if err := r.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(text.String(), "Bad rows: every mode keeps them ("+itoa(int64(len(want)))+" listed") || !strings.Contains(text.String(), hex.EncodeToString(id(0))) {
				t.Errorf("the text does not list the bad rows:\n%s", text.String())
			}
			if err := r.WriteJSON(&js); err != nil {
				t.Fatal(err)
			}
			var back struct {
				BadRows []report.BadRow `json:"bad_rows"`
			}
			if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.BadRows) != len(want) {
				t.Errorf("the JSON lists %d bad rows (%v), want %d", len(back.BadRows), err, len(want))
			}
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
