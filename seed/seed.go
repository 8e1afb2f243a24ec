// Package seed writes synthetic task queues and tasks in Temporal's format
// through a store.Writer, the way a matching host would: for tests, the
// demo and the benchmark.
package seed

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/tqscavenger/tqscavenger/store"
	"github.com/tqscavenger/tqscavenger/wire"
)

// Layout says where expired tasks sit in a queue.
type Layout string

const (
	// ExpiredFirst puts the expired tasks before the live ones: a
	// scavenger deletes them all.
	ExpiredFirst Layout = "expired-first"
	// LiveFirst puts one live task (without expiry) at the head: Temporal's
	// scavenger deletes nothing behind it.
	LiveFirst Layout = "live-first"
	// Shuffled mixes them at random (seeded, so reproducible).
	Shuffled Layout = "shuffled"
)

// DefaultNamespace is the namespace id seeded data uses unless told
// otherwise (the one in Temporal's spec test vectors).
var DefaultNamespace = wire.NamespaceID{0x32, 0x04, 0x9b, 0x68, 0x78, 0x72, 0x40, 0x94, 0x8e, 0x63, 0xd0, 0xdd, 0x59, 0x89, 0x6a, 0x83}

// Spec describes the data to write. Zero fields take the defaults noted.
type Spec struct {
	Table     store.Table      // default store.V1
	Namespace wire.NamespaceID // default DefaultNamespace
	// NamePrefix names queues NamePrefix-0, NamePrefix-1, … Default "seed".
	NamePrefix string
	TaskType   wire.TaskType // default activity
	Queues     int
	// TasksPerQueue is the number of tasks in each subqueue.
	TasksPerQueue int
	// Expired and NoExpiry are the shares (0..1) of tasks that expired
	// before Now and that never expire; the rest expire an hour after Now.
	Expired, NoExpiry float64
	Layout            Layout // default ExpiredFirst
	// IdleAge sets each queue's last_update_time to Now - IdleAge.
	IdleAge time.Duration
	// Subqueues is the number of subqueues per queue (default 1: only
	// subqueue 0). Subqueue k has priority k+1 except subqueue 0 (3).
	Subqueues int
	Now       time.Time // default time.Now()
	Seed      uint64    // random seed for Shuffled
	// BatchSize is how many tasks one AppendTasks call writes. Default 2000.
	BatchSize int
}

// Result counts what was written.
type Result struct {
	Queues, Tasks, Expired, NoExpiry, Future int
}

// Write writes the queues and tasks of spec through w.
func Write(ctx context.Context, w store.Writer, spec Spec) (Result, error) {
	if spec.Table == 0 {
		spec.Table = store.V1
	}
	if spec.Namespace == (wire.NamespaceID{}) {
		spec.Namespace = DefaultNamespace
	}
	if spec.NamePrefix == "" {
		spec.NamePrefix = "seed"
	}
	if spec.TaskType == 0 {
		spec.TaskType = wire.TaskTypeActivity
	}
	if spec.Layout == "" {
		spec.Layout = ExpiredFirst
	}
	if spec.Subqueues <= 0 {
		spec.Subqueues = 1
	}
	if spec.Now.IsZero() {
		spec.Now = time.Now()
	}
	if spec.BatchSize <= 0 {
		spec.BatchSize = 2000
	}
	if spec.Expired < 0 || spec.NoExpiry < 0 || spec.Expired+spec.NoExpiry > 1.0000001 {
		return Result{}, fmt.Errorf("seed: shares expired %.2f + no-expiry %.2f must be within 0..1", spec.Expired, spec.NoExpiry)
	}
	rng := rand.New(rand.NewPCG(spec.Seed, 0x5eed))
	var res Result
	for q := 0; q < spec.Queues; q++ {
		name := fmt.Sprintf("%s-%d", spec.NamePrefix, q)
		if err := writeQueue(ctx, w, spec, name, rng, &res); err != nil {
			return res, err
		}
	}
	return res, nil
}

// kind of one seeded task.
const (
	expired = iota
	noExpiry
	future
)

func kinds(spec Spec, rng *rand.Rand) []int {
	n := spec.TasksPerQueue
	ne := int(float64(n)*spec.Expired + 0.5)
	nn := min(int(float64(n)*spec.NoExpiry+0.5), n-ne)
	ks := make([]int, 0, n)
	switch spec.Layout {
	case LiveFirst:
		if nn > 0 {
			ks = append(ks, noExpiry)
			nn--
		}
	}
	for range ne {
		ks = append(ks, expired)
	}
	for range nn {
		ks = append(ks, noExpiry)
	}
	for len(ks) < n {
		ks = append(ks, future)
	}
	if spec.Layout == Shuffled {
		rng.Shuffle(len(ks), func(i, j int) { ks[i], ks[j] = ks[j], ks[i] })
	}
	return ks
}

func writeQueue(ctx context.Context, w store.Writer, spec Spec, name string, rng *rand.Rand, res *Result) error {
	id := wire.QueueID(spec.Namespace, name, spec.TaskType, 0)
	owner := store.QueueKey{RangeHash: wire.RangeHash(id), ID: id}
	// Matching allocates ids from the block of its range_id: take enough
	// blocks for every subqueue's tasks.
	total := spec.TasksPerQueue * spec.Subqueues
	rangeID := int64(1 + total/100000)
	info := wire.TaskQueueInfo{
		NamespaceID:    spec.Namespace.String(),
		Name:           name,
		TaskType:       spec.TaskType,
		Kind:           wire.KindNormal,
		LastUpdateTime: spec.Now.Add(-spec.IdleAge),
	}
	for k := 0; k < spec.Subqueues; k++ {
		prio := int32(3)
		if k > 0 {
			prio = int32(k + 1)
			if prio >= 3 {
				prio++
			}
		}
		info.Subqueues = append(info.Subqueues, wire.SubqueueInfo{Priority: prio})
	}
	row := store.QueueRow{QueueKey: owner, RangeID: rangeID, Data: wire.EncodeTaskQueueInfo(info), Encoding: wire.EncodingProto3}
	if err := w.CreateQueue(ctx, spec.Table, row); err != nil {
		return fmt.Errorf("seed: create queue %s: %w", name, err)
	}
	res.Queues++
	nextID := int64(1)
	for k := 0; k < spec.Subqueues; k++ {
		target := owner
		if k > 0 {
			tid := wire.QueueID(spec.Namespace, name, spec.TaskType, k)
			target = store.QueueKey{RangeHash: wire.RangeHash(tid), ID: tid}
		}
		ks := kinds(spec, rng)
		batch := make([]store.TaskRow, 0, spec.BatchSize)
		for i, kind := range ks {
			t := wire.AllocatedTaskInfo{
				TaskID: nextID,
				Data: wire.TaskInfo{
					NamespaceID:      spec.Namespace.String(),
					WorkflowID:       fmt.Sprintf("wf-%s-%d", name, i),
					RunID:            "run-0",
					ScheduledEventID: 5,
					CreateTime:       spec.Now.Add(-spec.IdleAge - time.Hour),
				},
			}
			switch kind {
			case expired:
				t.Data.ExpiryTime = spec.Now.Add(-spec.IdleAge - time.Minute)
				res.Expired++
			case noExpiry:
				res.NoExpiry++
			case future:
				t.Data.ExpiryTime = spec.Now.Add(time.Hour)
				res.Future++
			}
			key := store.TaskKey{ID: nextID}
			if spec.Table == store.V2 {
				key.Pass = 1
				t.TaskPass = 1
			}
			nextID++
			batch = append(batch, store.TaskRow{Key: key, Data: wire.EncodeAllocatedTaskInfo(t), Encoding: wire.EncodingProto3})
			if len(batch) == cap(batch) {
				if err := w.AppendTasks(ctx, spec.Table, owner, rangeID, target, batch); err != nil {
					return fmt.Errorf("seed: append tasks to %s: %w", name, err)
				}
				res.Tasks += len(batch)
				batch = batch[:0]
			}
		}
		if len(batch) > 0 {
			if err := w.AppendTasks(ctx, spec.Table, owner, rangeID, target, batch); err != nil {
				return fmt.Errorf("seed: append tasks to %s: %w", name, err)
			}
			res.Tasks += len(batch)
		}
	}
	return nil
}
