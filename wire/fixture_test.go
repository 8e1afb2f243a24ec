package wire

import (
	"bytes"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	_ "modernc.org/sqlite"

	"github.com/tqscavenger/tqscavenger/internal/fixture"
)

// The fixture tests decode every row of every real Temporal database and
// hold the results against the manifests, which Temporal's own decoders
// wrote.

type queueRow struct {
	table     string
	rangeHash uint32
	id        []byte
	rangeID   int64
	info      TaskQueueInfo
}

type taskRow struct {
	table     string
	rangeHash uint32
	id        []byte
	pass      int64 // tasks_v2 only
	taskID    int64
	task      AllocatedTaskInfo
	parent    *queueRow // the queue row this task belongs to, if any
	subqueue  int       // its subqueue in parent
}

type fixtureDB struct {
	queues map[string]*queueRow // by table + "/" + hex id
	tasks  []*taskRow
}

func queueKey(table string, id []byte) string { return table + "/" + hex.EncodeToString(id) }

// queueTableOf returns the queue table of a task table.
func queueTableOf(taskTable string) string {
	if taskTable == "tasks_v2" {
		return "task_queues_v2"
	}
	return "task_queues"
}

func loadFixture(t *testing.T, name string) *fixtureDB {
	t.Helper()
	db, err := sql.Open("sqlite", fixture.Path(t, name))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	queueMD, taskMD := oracle(t)
	fx := &fixtureDB{queues: map[string]*queueRow{}}

	for _, table := range []string{"task_queues", "task_queues_v2"} {
		rows, err := db.Query("SELECT range_hash, task_queue_id, range_id, data, data_encoding FROM " + table)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var (
				r    = queueRow{table: table}
				data []byte
				enc  string
			)
			if err := rows.Scan(&r.rangeHash, &r.id, &r.rangeID, &data, &enc); err != nil {
				t.Fatal(err)
			}
			where := fmt.Sprintf("%s row %x", table, r.id)
			r.info, err = DecodeTaskQueueInfo(enc, data)
			if err != nil {
				t.Errorf("%s: %v", where, err)
				continue
			}
			if got := RangeHash(r.id); got != r.rangeHash {
				t.Errorf("%s: RangeHash = %d, range_hash column %d", where, got, r.rangeHash)
			}
			ns, name, typ, err := ParseQueueRowID(r.id)
			if err != nil {
				t.Errorf("%s: %v", where, err)
				continue
			}
			if ns.String() != r.info.NamespaceID || name != r.info.Name || typ != r.info.TaskType {
				t.Errorf("%s: id reads (%v, %q, %v), blob says (%s, %q, %v)", where, ns, name, typ, r.info.NamespaceID, r.info.Name, r.info.TaskType)
			}
			blobNS, err := ParseNamespaceID(r.info.NamespaceID)
			if err != nil {
				t.Errorf("%s: %v", where, err)
			} else if id := QueueID(blobNS, r.info.Name, r.info.TaskType, 0); !bytes.Equal(id, r.id) {
				t.Errorf("%s: QueueID of the blob's queue = %x", where, id)
			}
			// Re-encoding gives what proto.Marshal gives for the fields
			// this package models.
			if canon, err := oracleCanonical(t, queueMD, data); err != nil {
				t.Errorf("%s: protobuf-go: %v", where, err)
			} else if enc := EncodeTaskQueueInfo(r.info); !bytes.Equal(enc, canon) {
				t.Errorf("%s: re-encoded\n %x\nprotobuf-go\n %x", where, enc, canon)
			}
			if o, err := oracleTaskQueueInfo(t, data); err != nil || !equalQueue(o, r.info) {
				t.Errorf("%s: decoded %+v\nprotobuf-go %+v, %v", where, r.info, o, err)
			}
			fx.queues[queueKey(table, r.id)] = &r
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
	}

	for _, table := range []string{"tasks", "tasks_v2"} {
		pass := "0"
		if table == "tasks_v2" {
			pass = "pass"
		}
		rows, err := db.Query("SELECT range_hash, task_queue_id, " + pass + ", task_id, data, data_encoding FROM " + table)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var (
				r    = taskRow{table: table}
				data []byte
				enc  string
			)
			if err := rows.Scan(&r.rangeHash, &r.id, &r.pass, &r.taskID, &data, &enc); err != nil {
				t.Fatal(err)
			}
			where := fmt.Sprintf("%s row %x/%d/%d", table, r.id, r.pass, r.taskID)
			r.task, err = DecodeAllocatedTaskInfo(enc, data)
			if err != nil {
				t.Errorf("%s: %v", where, err)
				continue
			}
			times, err := DecodeTaskTimes(enc, data)
			if err != nil || times.CreateTime != r.task.Data.CreateTime || times.ExpiryTime != r.task.Data.ExpiryTime {
				t.Errorf("%s: DecodeTaskTimes = %+v, %v; data %+v", where, times, err, r.task.Data)
			}
			if r.task.TaskID != r.taskID || r.task.TaskPass != r.pass {
				t.Errorf("%s: blob says task_id %d, task_pass %d", where, r.task.TaskID, r.task.TaskPass)
			}
			if got := RangeHash(r.id); got != r.rangeHash {
				t.Errorf("%s: RangeHash = %d, range_hash column %d", where, got, r.rangeHash)
			}
			if len(r.id) >= 16 && NamespaceID(r.id[:16]).String() != r.task.Data.NamespaceID {
				t.Errorf("%s: blob namespace %s", where, r.task.Data.NamespaceID)
			}
			if canon, err := oracleCanonical(t, taskMD, data); err != nil {
				t.Errorf("%s: protobuf-go: %v", where, err)
			} else if enc := EncodeAllocatedTaskInfo(r.task); !bytes.Equal(enc, canon) {
				t.Errorf("%s: re-encoded\n %x\nprotobuf-go\n %x", where, enc, canon)
			}
			if o, err := oracleAllocatedTaskInfo(t, data); err != nil || !equalTask(o, r.task) {
				t.Errorf("%s: decoded %+v\nprotobuf-go %+v, %v", where, r.task, o, err)
			}
			parents := CandidateParents(r.id)
			if len(parents) == 0 {
				t.Errorf("%s: no candidate parent", where)
			}
			r.subqueue = -1
			for _, p := range parents {
				q := fx.queues[queueKey(queueTableOf(table), p.QueueID)]
				if q == nil {
					continue
				}
				if r.parent != nil {
					t.Errorf("%s: two parents: %x/%d and %x/%d", where, r.parent.id, r.subqueue, p.QueueID, p.Subqueue)
				}
				r.parent, r.subqueue = q, p.Subqueue
			}
			fx.tasks = append(fx.tasks, &r)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
	}
	return fx
}

func TestFixtures(t *testing.T) {
	names := fixture.Names()
	if len(names) == 0 {
		t.Fatal("no fixtures")
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fx := loadFixture(t, name)
			orphans, inSubqueues := 0, 0
			for _, r := range fx.tasks {
				switch {
				case r.parent == nil:
					orphans++
				case r.subqueue >= len(r.parent.info.Subqueues):
					t.Errorf("%s row %x/%d: subqueue %d, but its queue lists %d subqueues", r.table, r.id, r.taskID, r.subqueue, len(r.parent.info.Subqueues))
				case r.subqueue > 0:
					inSubqueues++
				}
			}
			t.Logf("%d queue rows, %d task rows, %d in subqueues k > 0, %d orphans", len(fx.queues), len(fx.tasks), inSubqueues, orphans)
			// Only a scavenger that deletes queue rows under their
			// subqueues' tasks (Temporal's) leaves orphans.
			if orphans > 0 && !strings.Contains(name, "after-temporal-scavenger") {
				t.Errorf("%d tasks have no queue row", orphans)
			}
			if fixture.HasManifest(name) {
				checkManifest(t, fx, fixture.Manifest(t, name))
			}
		})
	}
}

// The manifest, as far as these tests read it. int64 values inside
// decoded blobs are JSON strings, as protojson writes them.
type manifest struct {
	GeneratedAt time.Time        `json:"generated_at"`
	Counts      map[string]any   `json:"counts"`
	TaskQueues  []manifestQueue  `json:"task_queues"`
	Groups      []manifestGroup  `json:"task_groups_without_queue_row"`
	Examples    []manifestSample `json:"example_blobs"`
}

type manifestQueue struct {
	Table                   string             `json:"table"`
	RangeHash               uint32             `json:"range_hash"`
	IDHex                   string             `json:"task_queue_id_hex"`
	NamespaceID             string             `json:"namespace_id"`
	Name                    string             `json:"name"`
	TaskType                string             `json:"task_type"`
	TaskTypeNum             int                `json:"task_type_num"`
	Kind                    string             `json:"kind"`
	SubqueueFromID          int                `json:"subqueue_from_id"`
	RangeID                 int64              `json:"range_id"`
	DataEncoding            string             `json:"data_encoding"`
	LastUpdateTime          time.Time          `json:"last_update_time"`
	ExpiryTime              *time.Time         `json:"expiry_time"`
	AckLevel                int64              `json:"ack_level"`
	ApproximateBacklogCount int64              `json:"approximate_backlog_count"`
	Subqueues               []manifestSubqueue `json:"subqueues"`
	Tasks                   manifestTasks      `json:"tasks"`
}

type manifestSubqueue struct {
	Key struct {
		Priority int32 `json:"priority"`
	} `json:"key"`
	AckLevel                int64         `json:"ack_level,string"`
	ApproximateBacklogCount int64         `json:"approximate_backlog_count,string"`
	FairAckLevel            *manifestFair `json:"fair_ack_level"`
	FairMaxReadLevel        *manifestFair `json:"fair_max_read_level"`
}

type manifestFair struct {
	TaskPass int64 `json:"task_pass,string"`
	TaskID   int64 `json:"task_id,string"`
}

type manifestTasks struct {
	TaskRows       int            `json:"task_rows"`
	MinTaskID      *int64         `json:"min_task_id"`
	MaxTaskID      *int64         `json:"max_task_id"`
	ExpiredAsOfNow int            `json:"expired_as_of_now"`
	ExpiryInFuture int            `json:"expiry_in_future"`
	NoExpiry       int            `json:"no_expiry"`
	MinExpiryTime  *time.Time     `json:"min_expiry_time"`
	MaxExpiryTime  *time.Time     `json:"max_expiry_time"`
	DataEncodings  map[string]int `json:"data_encodings"`
	MinPass        *int64         `json:"min_pass"`
	MaxPass        *int64         `json:"max_pass"`
	FairnessKeys   map[string]int `json:"fairness_keys"`
	PriorityKeys   map[string]int `json:"priority_keys"`
}

type manifestGroup struct {
	Table       string        `json:"table"`
	IDHex       string        `json:"task_queue_id_hex"`
	NamespaceID string        `json:"namespace_id"`
	Name        string        `json:"name"`
	TaskType    int           `json:"task_type"`
	Subqueue    int           `json:"subqueue"`
	Tasks       manifestTasks `json:"tasks"`
}

type manifestSample struct {
	Kind         string          `json:"kind"`
	Table        string          `json:"table"`
	DataEncoding string          `json:"data_encoding"`
	Hex          string          `json:"hex"`
	Decoded      json.RawMessage `json:"decoded"`
}

// taskStats computes what the manifest says about a group of tasks.
func taskStats(tasks []*taskRow, now time.Time) manifestTasks {
	var s manifestTasks
	s.DataEncodings = map[string]int{}
	for _, r := range tasks {
		s.TaskRows++
		s.DataEncodings[EncodingProto3]++ // every row was decoded
		id, pass := r.taskID, r.pass
		if s.MinTaskID == nil || id < *s.MinTaskID {
			s.MinTaskID = &id
		}
		if s.MaxTaskID == nil || id > *s.MaxTaskID {
			s.MaxTaskID = &id
		}
		if r.table == "tasks_v2" {
			if s.MinPass == nil || pass < *s.MinPass {
				s.MinPass = &pass
			}
			if s.MaxPass == nil || pass > *s.MaxPass {
				s.MaxPass = &pass
			}
		}
		exp := r.task.Data.ExpiryTime
		switch {
		case exp.IsZero():
			s.NoExpiry++
		case Expired(exp, now):
			s.ExpiredAsOfNow++
		default:
			s.ExpiryInFuture++
		}
		if !exp.IsZero() {
			if s.MinExpiryTime == nil || exp.Before(*s.MinExpiryTime) {
				s.MinExpiryTime = &exp
			}
			if s.MaxExpiryTime == nil || exp.After(*s.MaxExpiryTime) {
				s.MaxExpiryTime = &exp
			}
		}
		if k := r.task.Data.Priority.FairnessKey; k != "" {
			if s.FairnessKeys == nil {
				s.FairnessKeys = map[string]int{}
			}
			s.FairnessKeys[k]++
		}
		if k := r.task.Data.Priority.PriorityKey; k != 0 {
			if s.PriorityKeys == nil {
				s.PriorityKeys = map[string]int{}
			}
			s.PriorityKeys[strconv.Itoa(int(k))]++
		}
	}
	return s
}

func (s manifestTasks) String() string {
	b, _ := json.Marshal(s)
	return string(b)
}

func sameStats(a, b manifestTasks) bool {
	if len(a.DataEncodings) == 0 && len(b.DataEncodings) == 0 {
		a.DataEncodings, b.DataEncodings = nil, nil
	}
	return a.String() == b.String()
}

func checkManifest(t *testing.T, fx *fixtureDB, raw []byte) {
	var m manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("manifest: %v", err)
	}
	now := m.GeneratedAt
	// Older manifests do not count priority keys at all.
	recordsPriorityKeys := false
	for _, g := range m.Groups {
		recordsPriorityKeys = recordsPriorityKeys || g.Tasks.PriorityKeys != nil
	}
	for _, q := range m.TaskQueues {
		recordsPriorityKeys = recordsPriorityKeys || q.Tasks.PriorityKeys != nil
	}
	stats := func(tasks []*taskRow) manifestTasks {
		s := taskStats(tasks, now)
		if !recordsPriorityKeys {
			s.PriorityKeys = nil
		}
		return s
	}

	// Tasks grouped by exact task_queue_id, as the manifest groups them.
	groups := map[string][]*taskRow{}
	for _, r := range fx.tasks {
		k := queueKey(queueTableOf(r.table), r.id)
		groups[k] = append(groups[k], r)
	}

	seen := map[string]bool{}
	for _, mq := range m.TaskQueues {
		id, err := hex.DecodeString(mq.IDHex)
		if err != nil {
			t.Fatal(err)
		}
		k := queueKey(mq.Table, id)
		seen[k] = true
		q := fx.queues[k]
		if q == nil {
			t.Errorf("manifest queue %s is not in the database", k)
			continue
		}
		info := q.info
		where := fmt.Sprintf("%s %q %v", mq.Table, mq.Name, info.TaskType)
		want := TaskQueueInfo{
			NamespaceID:             mq.NamespaceID,
			Name:                    mq.Name,
			TaskType:                TaskType(mq.TaskTypeNum),
			AckLevel:                mq.AckLevel,
			LastUpdateTime:          mq.LastUpdateTime,
			ApproximateBacklogCount: mq.ApproximateBacklogCount,
			Kind:                    info.Kind, // checked by name below
			OtherHasTasks:           info.OtherHasTasks,
		}
		if mq.ExpiryTime != nil {
			want.ExpiryTime = *mq.ExpiryTime
		}
		for _, s := range mq.Subqueues {
			w := SubqueueInfo{Priority: s.Key.Priority, AckLevel: s.AckLevel, ApproximateBacklogCount: s.ApproximateBacklogCount}
			if s.FairAckLevel != nil {
				w.FairAckLevel = FairLevel{s.FairAckLevel.TaskPass, s.FairAckLevel.TaskID}
				w.HasFairAckLevel = true
			}
			if s.FairMaxReadLevel != nil {
				w.FairMaxReadLevel = FairLevel{s.FairMaxReadLevel.TaskPass, s.FairMaxReadLevel.TaskID}
			}
			want.Subqueues = append(want.Subqueues, w)
		}
		if !equalQueue(info, want) {
			t.Errorf("%s: decoded\n %+v\nmanifest\n %+v", where, info, want)
		}
		if info.Kind.String() != mq.Kind || info.TaskType.String() != mq.TaskType {
			t.Errorf("%s: kind %v, type %v; manifest %s, %s", where, info.Kind, info.TaskType, mq.Kind, mq.TaskType)
		}
		if q.rangeHash != mq.RangeHash || q.rangeID != mq.RangeID || mq.SubqueueFromID != 0 || mq.DataEncoding != EncodingProto3 {
			t.Errorf("%s: range_hash %d, range_id %d; manifest %+v", where, q.rangeHash, q.rangeID, mq)
		}
		if got := stats(groups[k]); !sameStats(got, mq.Tasks) {
			t.Errorf("%s: tasks\n %v\nmanifest\n %v", where, got, mq.Tasks)
		}
	}
	for k := range fx.queues {
		if !seen[k] {
			t.Errorf("queue %s is not in the manifest", k)
		}
	}

	for _, g := range m.Groups {
		id, err := hex.DecodeString(g.IDHex)
		if err != nil {
			t.Fatal(err)
		}
		where := fmt.Sprintf("%s group %q/%d/%d", g.Table, g.Name, g.TaskType, g.Subqueue)
		k := queueKey(queueTableOf(g.Table), id)
		seen[k] = true
		tasks := groups[k]
		if got := stats(tasks); !sameStats(got, g.Tasks) {
			t.Errorf("%s: tasks\n %v\nmanifest\n %v", where, got, g.Tasks)
		}
		ns, err := ParseNamespaceID(g.NamespaceID)
		if err != nil {
			t.Fatal(err)
		}
		if want := QueueID(ns, g.Name, TaskType(g.TaskType), g.Subqueue); !bytes.Equal(want, id) {
			t.Errorf("%s: QueueID = %x, manifest %x", where, want, id)
		}
		parent := QueueID(ns, g.Name, TaskType(g.TaskType), 0)
		for _, r := range tasks {
			if r.parent == nil || !bytes.Equal(r.parent.id, parent) || r.subqueue != g.Subqueue {
				t.Errorf("%s: task %d resolved to parent %v, subqueue %d", where, r.taskID, r.parent, r.subqueue)
				break
			}
		}
	}
	for k, tasks := range groups {
		if !seen[k] {
			t.Errorf("task group %s (%d tasks) is not in the manifest", k, len(tasks))
		}
	}

	checkCounts(t, fx, m)
	checkExamples(t, m)
}

// checkCounts checks the manifest's totals.
func checkCounts(t *testing.T, fx *fixtureDB, m manifest) {
	got := map[string]int{}
	for _, q := range fx.queues {
		got[q.table]++
		if m.GeneratedAt.Sub(q.info.LastUpdateTime) > 48*time.Hour && q.table == "task_queues" {
			got["task_queues_last_update_older_than_48h"]++
		}
	}
	for _, r := range fx.tasks {
		got[r.table]++
		exp := r.task.Data.ExpiryTime
		switch {
		case exp.IsZero():
			got[r.table+"_no_expiry"]++
		case Expired(exp, m.GeneratedAt):
			got[r.table+"_expired_now"]++
		default:
			got[r.table+"_expiry_in_future"]++
		}
		if r.subqueue > 0 {
			got[r.table+"_in_subqueue_gt0"]++
		}
		if r.task.Data.Priority.FairnessKey != "" {
			got[r.table+"_with_fairness_key"]++
		}
	}
	var keys []string
	for k := range m.Counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		want, ok := m.Counts[k].(float64)
		if !ok { // "at", the time of counting
			continue
		}
		if float64(got[k]) != want {
			t.Errorf("count %s = %d, manifest %d", k, got[k], m.Counts[k])
		}
	}
}

// checkExamples decodes the manifest's sample blobs and compares them with
// protojson's rendering of Temporal's decoding.
func checkExamples(t *testing.T, m manifest) {
	for i, ex := range m.Examples {
		b, err := hex.DecodeString(ex.Hex)
		if err != nil {
			t.Fatal(err)
		}
		var got, want any
		switch ex.Kind {
		case "TaskQueueInfo":
			q, err := DecodeTaskQueueInfo(ex.DataEncoding, b)
			if err != nil {
				t.Errorf("example %d: %v", i, err)
				continue
			}
			var d struct {
				NamespaceID             string             `json:"namespace_id"`
				Name                    string             `json:"name"`
				TaskType                string             `json:"task_type"`
				Kind                    string             `json:"kind"`
				AckLevel                int64              `json:"ack_level,string"`
				ExpiryTime              *time.Time         `json:"expiry_time"`
				LastUpdateTime          *time.Time         `json:"last_update_time"`
				ApproximateBacklogCount int64              `json:"approximate_backlog_count,string"`
				Subqueues               []manifestSubqueue `json:"subqueues"`
				OtherHasTasks           bool               `json:"other_has_tasks"`
			}
			if err := json.Unmarshal(ex.Decoded, &d); err != nil {
				t.Fatal(err)
			}
			want = []any{d.NamespaceID, d.Name, "TASK_QUEUE_TYPE_" + strings.ToUpper(q.TaskType.String()), "TASK_QUEUE_KIND_" + strings.ToUpper(q.Kind.String()),
				d.AckLevel, optTime(d.ExpiryTime), optTime(d.LastUpdateTime), d.ApproximateBacklogCount, len(d.Subqueues), d.OtherHasTasks}
			got = []any{q.NamespaceID, q.Name, d.TaskType, d.Kind,
				q.AckLevel, q.ExpiryTime.UnixNano(), q.LastUpdateTime.UnixNano(), q.ApproximateBacklogCount, len(q.Subqueues), q.OtherHasTasks}
		case "AllocatedTaskInfo":
			task, err := DecodeAllocatedTaskInfo(ex.DataEncoding, b)
			if err != nil {
				t.Errorf("example %d: %v", i, err)
				continue
			}
			var d struct {
				Data struct {
					NamespaceID      string     `json:"namespace_id"`
					WorkflowID       string     `json:"workflow_id"`
					RunID            string     `json:"run_id"`
					ScheduledEventID int64      `json:"scheduled_event_id,string"`
					CreateTime       *time.Time `json:"create_time"`
					ExpiryTime       *time.Time `json:"expiry_time"`
					Stamp            int32      `json:"stamp"`
					Priority         struct {
						PriorityKey    int32   `json:"priority_key"`
						FairnessKey    string  `json:"fairness_key"`
						FairnessWeight float32 `json:"fairness_weight"`
					} `json:"priority"`
				} `json:"data"`
				TaskID   int64 `json:"task_id,string"`
				TaskPass int64 `json:"task_pass,string"`
			}
			if err := json.Unmarshal(ex.Decoded, &d); err != nil {
				t.Fatal(err)
			}
			dd := d.Data
			want = []any{dd.NamespaceID, dd.WorkflowID, dd.RunID, dd.ScheduledEventID, optTime(dd.CreateTime), optTime(dd.ExpiryTime), dd.Stamp,
				dd.Priority.PriorityKey, dd.Priority.FairnessKey, dd.Priority.FairnessWeight, d.TaskID, d.TaskPass}
			td := task.Data
			got = []any{td.NamespaceID, td.WorkflowID, td.RunID, td.ScheduledEventID, td.CreateTime.UnixNano(), td.ExpiryTime.UnixNano(), td.Stamp,
				td.Priority.PriorityKey, td.Priority.FairnessKey, td.Priority.FairnessWeight, task.TaskID, task.TaskPass}
		default:
			t.Errorf("example %d: unknown kind %q", i, ex.Kind)
			continue
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("example %d (%s in %s):\n got %v\nwant %v", i, ex.Kind, ex.Table, got, want)
		}
	}
}

func optTime(t *time.Time) int64 {
	if t == nil {
		return time.Time{}.UnixNano()
	}
	return t.UnixNano()
}

// BenchmarkDecodeTaskTimes decodes a real task blob: the fairness fixture's
// first example, which has a priority, a clock and both times.
func BenchmarkDecodeTaskTimes(b *testing.B) {
	var m manifest
	if err := json.Unmarshal(fixture.Manifest(b, "temporal-1.32-fair-aged72h"), &m); err != nil {
		b.Fatal(err)
	}
	var blob []byte
	for _, ex := range m.Examples {
		if ex.Kind == "AllocatedTaskInfo" && ex.Table == "tasks_v2" {
			blob, _ = hex.DecodeString(ex.Hex)
			break
		}
	}
	if blob == nil {
		b.Fatal("no tasks_v2 example in the manifest")
	}
	benchmarkDecodeTaskTimes(b, blob)
}

// BenchmarkDecodeTaskTimesGeneral decodes a task blob that the fast path of
// DecodeTaskTimes hands over to the general decoder: it has a field with a
// two-byte tag, as a field numbered 16 or more that a later Temporal adds to
// TaskInfo would have.
func BenchmarkDecodeTaskTimesGeneral(b *testing.B) {
	task := EncodeAllocatedTaskInfo(roundTripTasks[2])
	_, _, n := protowire.ConsumeTag(task)
	data, m := protowire.ConsumeBytes(task[n:])
	data = data[:len(data):len(data)] // appending must not overwrite task
	data = protowire.AppendVarint(protowire.AppendTag(data, 16, protowire.VarintType), 1)
	blob := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), data)
	blob = append(blob, task[n+m:]...)
	if fastTaskTimes(blob, &taskTimes{}) {
		b.Fatal("the fast path decodes the blob")
	}
	benchmarkDecodeTaskTimes(b, blob)
}

func benchmarkDecodeTaskTimes(b *testing.B, blob []byte) {
	b.ReportAllocs()
	b.SetBytes(int64(len(blob)))
	for b.Loop() {
		tt, err := DecodeTaskTimes(EncodingProto3, blob)
		if err != nil || tt.ExpiryTime.IsZero() {
			b.Fatal(tt, err)
		}
	}
}

func BenchmarkDecodeAllocatedTaskInfo(b *testing.B) {
	blob := EncodeAllocatedTaskInfo(roundTripTasks[2])
	b.ReportAllocs()
	b.SetBytes(int64(len(blob)))
	for b.Loop() {
		if _, err := DecodeAllocatedTaskInfo(EncodingProto3, blob); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeTaskQueueInfo(b *testing.B) {
	blob := EncodeTaskQueueInfo(roundTripQueues[3])
	b.ReportAllocs()
	b.SetBytes(int64(len(blob)))
	for b.Loop() {
		if _, err := DecodeTaskQueueInfo(EncodingProto3, blob); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkQueueID(b *testing.B) {
	ns, _ := ParseNamespaceID(exampleNS)
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendQueueID(buf[:0], ns, "/_sys/my-tq/1", TaskTypeActivity, 2)
		_ = RangeHash(buf)
	}
}
