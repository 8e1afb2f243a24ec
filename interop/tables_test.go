package interop

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/dgryski/go-farm"
	"github.com/google/uuid"
	persistencespb "go.temporal.io/server/api/persistence/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// The suite reads Temporal's tables on its own, with Temporal's own protobuf
// types, not with tqscavenger's decoders: what it checks does not rest on
// the code under test.

type queueRow struct {
	table   string // task_queues or task_queues_v2
	hash    int64
	id      []byte
	rangeID int64
	info    *persistencespb.TaskQueueInfo
}

type taskRow struct {
	table  string // tasks or tasks_v2
	hash   int64
	id     []byte
	pass   int64
	taskID int64
	info   *persistencespb.AllocatedTaskInfo
}

var (
	queueTables = []string{"task_queues", "task_queues_v2"}
	taskTables  = map[string]string{"task_queues": "tasks", "task_queues_v2": "tasks_v2"}
)

func readQueueRows(ctx context.Context, db *sql.DB, table string) ([]queueRow, error) {
	rows, err := db.QueryContext(ctx, "SELECT range_hash, task_queue_id, range_id, data, data_encoding FROM "+table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []queueRow
	for rows.Next() {
		r := queueRow{table: table}
		var data []byte
		var enc string
		if err := rows.Scan(&r.hash, &r.id, &r.rangeID, &data, &enc); err != nil {
			return nil, err
		}
		r.info = &persistencespb.TaskQueueInfo{}
		if err := proto.Unmarshal(data, r.info); err != nil {
			return nil, fmt.Errorf("%s row %x: %v", table, r.id, err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func readTaskRows(ctx context.Context, db *sql.DB, table string) ([]taskRow, error) {
	cols := "range_hash, task_queue_id, 0, task_id, data"
	if table == "tasks_v2" {
		cols = "range_hash, task_queue_id, pass, task_id, data"
	}
	rows, err := db.QueryContext(ctx, "SELECT "+cols+" FROM "+table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []taskRow
	for rows.Next() {
		r := taskRow{table: table}
		var data []byte
		if err := rows.Scan(&r.hash, &r.id, &r.pass, &r.taskID, &data); err != nil {
			return nil, err
		}
		r.info = &persistencespb.AllocatedTaskInfo{}
		if err := proto.Unmarshal(data, r.info); err != nil {
			return nil, fmt.Errorf("%s task %x/%d: %v", table, r.id, r.taskID, err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// ageQueues moves every queue row's last_update_time back by d, as the
// fixtures in internal/fixture/testdata were made. The server must be down.
func ageQueues(ctx context.Context, db *sql.DB, engine string, d time.Duration) (int, error) {
	n := 0
	for _, table := range queueTables {
		rows, err := readQueueRows(ctx, db, table)
		if err != nil {
			return n, err
		}
		for _, r := range rows {
			lut := r.info.GetLastUpdateTime().AsTime()
			r.info.LastUpdateTime = timestamppb.New(lut.Add(-d))
			data, err := proto.Marshal(r.info)
			if err != nil {
				return n, err
			}
			res, err := db.ExecContext(ctx, q(engine, "UPDATE "+table+" SET data = ? WHERE range_hash = ? AND task_queue_id = ? AND range_id = ?"), data, r.hash, r.id, r.rangeID)
			if err != nil {
				return n, err
			}
			if k, _ := res.RowsAffected(); k != 1 {
				return n, fmt.Errorf("aging %s row %q: %d rows updated", table, r.info.GetName(), k)
			}
			n++
		}
	}
	return n, nil
}

// queueID is Temporal's task_queue_id for (namespace, name, type, subqueue).
func queueID(ns uuid.UUID, name string, taskType int, subqueue int) []byte {
	id := append(append([]byte{}, ns[:]...), name...)
	if subqueue > 0 {
		id = append(id, byte(taskType)|0x80)
		return binary.AppendUvarint(id, uint64(subqueue))
	}
	return append(id, byte(taskType))
}

func rangeHash(id []byte) int64 { return int64(farm.Fingerprint32(id)) }

// rangeIDOf reads a queue row's range_id; ok is false if the row is absent.
func rangeIDOf(ctx context.Context, db *sql.DB, engine, table string, id []byte) (int64, bool, error) {
	var r int64
	err := db.QueryRowContext(ctx, q(engine, "SELECT range_id FROM "+table+" WHERE range_hash = ? AND task_queue_id = ?"), rangeHash(id), id).Scan(&r)
	if err == sql.ErrNoRows {
		return 0, false, nil
	}
	return r, err == nil, err
}

// inventory is an independent read of the four task tables.
type inventory struct {
	queues map[string][]queueRow // by table
	tasks  map[string][]taskRow
}

func readInventory(ctx context.Context, db *sql.DB) (inventory, error) {
	inv := inventory{queues: map[string][]queueRow{}, tasks: map[string][]taskRow{}}
	for _, qt := range queueTables {
		qs, err := readQueueRows(ctx, db, qt)
		if err != nil {
			return inv, err
		}
		inv.queues[qt] = qs
		ts, err := readTaskRows(ctx, db, taskTables[qt])
		if err != nil {
			return inv, err
		}
		inv.tasks[taskTables[qt]] = ts
	}
	return inv, nil
}

func (inv inventory) String() string {
	var b strings.Builder
	for _, qt := range queueTables {
		fmt.Fprintf(&b, "%s %d rows, %s %d rows; ", qt, len(inv.queues[qt]), taskTables[qt], len(inv.tasks[taskTables[qt]]))
	}
	return strings.TrimSuffix(b.String(), "; ")
}

// tasksOf counts the tasks of a queue (every subqueue, both tables).
func (inv inventory) tasksOf(ns uuid.UUID, name string, taskType int) int {
	ids := map[string]bool{}
	for k := 0; k < 64; k++ {
		ids[string(queueID(ns, name, taskType, k))] = true
	}
	n := 0
	for _, ts := range inv.tasks {
		for _, t := range ts {
			if ids[string(t.id)] {
				n++
			}
		}
	}
	return n
}

// has says whether a table holds a row of the queue.
func (inv inventory) has(table, name string, taskType int) bool {
	for _, r := range inv.queues[table] {
		if r.info.GetName() == name && int(r.info.GetTaskType()) == taskType {
			return true
		}
	}
	return false
}

func expired(t *persistencespb.AllocatedTaskInfo, now time.Time) bool {
	e := t.GetData().GetExpiryTime()
	return e != nil && e.GetSeconds() > 0 && e.AsTime().Before(now)
}

// check is the final independent read: after a final pass at now, in mode
// m, no expired task the mode should have removed is left, and no task has
// lost its queue row (an orphan). It returns one line per problem and a
// summary of what is left.
func (inv inventory) check(m mode, now time.Time) (problems []string, summary string) {
	var left, expiredLeft, orphans int
	for _, qt := range queueTables {
		tt := taskTables[qt]
		// Each queue row owns its subqueues' task ids.
		type owner struct {
			row *queueRow
			k   int
		}
		owners := map[string]owner{}
		for i := range inv.queues[qt] {
			r := &inv.queues[qt][i]
			ns, err := uuid.Parse(r.info.GetNamespaceId())
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s row %x: namespace %q: %v", qt, r.id, r.info.GetNamespaceId(), err))
				continue
			}
			if id := queueID(ns, r.info.GetName(), int(r.info.GetTaskType()), 0); !bytes.Equal(id, r.id) {
				problems = append(problems, fmt.Sprintf("%s row %x does not match its blob (%s type %d)", qt, r.id, r.info.GetName(), r.info.GetTaskType()))
			}
			n := max(len(r.info.GetSubqueues()), 1)
			for k := 0; k < n+8; k++ { // a few beyond the listed ones: tasks there are found, not called orphans
				owners[string(queueID(ns, r.info.GetName(), int(r.info.GetTaskType()), k))] = owner{r, k}
			}
		}
		// Group tasks by their task_queue_id, in (pass, task_id) order.
		groups := map[string][]taskRow{}
		for _, t := range inv.tasks[tt] {
			groups[string(t.id)] = append(groups[string(t.id)], t)
		}
		keys := make([]string, 0, len(groups))
		for k := range groups {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ts := groups[k]
			sort.Slice(ts, func(i, j int) bool {
				if ts[i].pass != ts[j].pass {
					return ts[i].pass < ts[j].pass
				}
				return ts[i].taskID < ts[j].taskID
			})
			left += len(ts)
			o, ok := owners[k]
			if !ok {
				orphans += len(ts)
				problems = append(problems, fmt.Sprintf("%s: %d orphaned tasks under task_queue_id %x (no %s row owns them; first task of workflow %s)",
					tt, len(ts), []byte(k), qt, ts[0].info.GetData().GetWorkflowId()))
				continue
			}
			if o.k >= max(len(o.row.info.GetSubqueues()), 1) {
				problems = append(problems, fmt.Sprintf("%s: %d tasks in subqueue %d of %s type %d, which its row does not list", tt, len(ts), o.k, o.row.info.GetName(), o.row.info.GetTaskType()))
			}
			for i, t := range ts {
				if expired(t.info, now) {
					expiredLeft++
					if m.pastLiveHead || i == 0 {
						problems = append(problems, fmt.Sprintf("%s: expired task %d/%d of %s type %d subqueue %d (workflow %s, expired %s) left%s",
							tt, t.pass, t.taskID, o.row.info.GetName(), o.row.info.GetTaskType(), o.k, t.info.GetData().GetWorkflowId(),
							t.info.GetData().GetExpiryTime().AsTime().Format(time.RFC3339), map[bool]string{true: "", false: " at the head of its subqueue"}[m.pastLiveHead]))
						if !m.pastLiveHead {
							break
						}
					}
				}
			}
			if m.belowAckLevel {
				var ack int64
				var fair *[2]int64
				if sq := o.row.info.GetSubqueues(); o.k < len(sq) {
					ack = sq[o.k].GetAckLevel()
					if fl := sq[o.k].GetFairAckLevel(); fl != nil && qt == "task_queues_v2" {
						fair = &[2]int64{fl.GetTaskPass(), fl.GetTaskId()}
					}
				} else if o.k == 0 {
					ack = o.row.info.GetAckLevel()
				}
				for _, t := range ts {
					below := t.taskID <= ack
					if qt == "task_queues_v2" {
						below = fair != nil && (t.pass < fair[0] || t.pass == fair[0] && t.taskID <= fair[1])
					}
					if below {
						problems = append(problems, fmt.Sprintf("%s: task %d/%d of %s type %d subqueue %d is at or below its ack level, left", tt, t.pass, t.taskID, o.row.info.GetName(), o.row.info.GetTaskType(), o.k))
					}
				}
			}
		}
	}
	summary = fmt.Sprintf("%s; %d tasks left (%d expired, behind live ones or in no mode's reach), %d orphans", inv, left, expiredLeft, orphans)
	return problems, summary
}

// shape says what the tables hold beyond plain queues: rows listing
// subqueues k > 0, tasks in such subqueues, tasks with a fairness key.
func (inv inventory) shape() string {
	rows, subTasks, fair := 0, 0, 0
	subIDs := map[string]bool{}
	for _, qs := range inv.queues {
		for _, r := range qs {
			if len(r.info.GetSubqueues()) > 1 {
				rows++
				if ns, err := uuid.Parse(r.info.GetNamespaceId()); err == nil {
					for k := 1; k < len(r.info.GetSubqueues()); k++ {
						subIDs[string(queueID(ns, r.info.GetName(), int(r.info.GetTaskType()), k))] = true
					}
				}
			}
		}
	}
	for _, ts := range inv.tasks {
		for _, t := range ts {
			if subIDs[string(t.id)] {
				subTasks++
			}
			if t.info.GetData().GetPriority().GetFairnessKey() != "" {
				fair++
			}
		}
	}
	return fmt.Sprintf("%d queue rows with subqueues k > 0, %d tasks in them, %d tasks with a fairness key", rows, subTasks, fair)
}
