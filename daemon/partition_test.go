package daemon_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/daemon"
	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/seed"
	"github.com/tqscavenger/tqscavenger/wire"
)

// TestPartitionPassLock: a daemon of partition 1/4 skips its pass while an
// overlapping range (1/8 is not; 2/8 is) is held elsewhere, runs beside a
// disjoint one, and scavenges only its range.
func TestPartitionPassLock(t *testing.T) {
	db := seeded(t, seed.Spec{Queues: 40, TasksPerQueue: 5, Expired: 1})
	other := testdb.OpenDSN(t, "sqlite:"+db.DSN().Path)
	p := scavenger.Partition{Index: 1, Count: 4}
	overlapping, err := other.LockRange(context.Background(), scavenger.Partition{Index: 2, Count: 8}.Range(), false)
	if err != nil {
		t.Fatal(err)
	}
	disjoint, err := other.LockRange(context.Background(), scavenger.Partition{Index: 0, Count: 4}.Range(), false)
	if err != nil {
		t.Fatal(err)
	}
	defer disjoint.Unlock()
	clock := newFakeClock()
	d := newDaemon(t, daemon.Config{DB: db, RunAtStart: true, Clock: clock, Scavenger: scavenger.Config{Partition: p}})
	start(t, d)
	clock.waitTimers(t, 1)
	if ps := d.Passes(); len(ps) != 1 || ps[0].Outcome != daemon.Skipped {
		t.Fatalf("with an overlapping range held: %+v", ps)
	}
	overlapping.Unlock()
	clock.Advance(time.Hour)
	clock.waitTimers(t, 1)
	ps := d.Passes()
	if len(ps) != 2 || ps[1].Outcome != daemon.Completed {
		t.Fatalf("beside a disjoint range: %+v", ps)
	}
	in := 0
	for q := 0; q < 40; q++ {
		id := wire.QueueID(seed.DefaultNamespace, fmt.Sprintf("seed-%d", q), wire.TaskTypeActivity, 0)
		if p.Range().Contains(wire.RangeHash(id)) {
			in++
		}
	}
	if got := ps[1].Stats.QueuesDeleted; got != int64(in) || in == 0 || in == 40 {
		t.Errorf("the pass deleted %d queues, %d of the 40 lie in %s", got, in, p)
	}
}

// TestPartitionReloaded: a reload that changes the partition applies from
// the next pass, and that pass locks the new partition's range: held
// elsewhere, the pass is skipped; free, it scavenges that range alone.
func TestPartitionReloaded(t *testing.T) {
	db := seeded(t, seed.Spec{Queues: 40, TasksPerQueue: 5, Expired: 1})
	other := testdb.OpenDSN(t, "sqlite:"+db.DSN().Path)
	first, next := scavenger.Partition{Index: 1, Count: 4}, scavenger.Partition{Index: 0, Count: 4}
	held, err := other.LockRange(context.Background(), next.Range(), false)
	if err != nil {
		t.Fatal(err)
	}
	clock := newFakeClock()
	d := newDaemon(t, daemon.Config{DB: db, RunAtStart: true, Clock: clock, Scavenger: scavenger.Config{Partition: first}})
	start(t, d)
	clock.waitTimers(t, 1)
	if ps := d.Passes(); len(ps) != 1 || ps[0].Outcome != daemon.Completed {
		t.Fatalf("partition %s beside %s held: %+v", first, next, ps)
	}
	// A new interval, so that the next pass is seen planned again.
	if err := d.Reconfigure(daemon.Reconfig{Scavenger: scavenger.Config{Partition: next}, Schedule: mustEvery(t, 30*time.Minute)}); err != nil {
		t.Fatal(err)
	}
	at := clock.Now()
	waitFor(t, "the next pass planned again", func() bool { return d.Status().Next.Equal(at.Add(30 * time.Minute)) })
	clock.waitTimers(t, 1)
	clock.Advance(30 * time.Minute)
	clock.waitTimers(t, 1)
	if ps := d.Passes(); len(ps) != 2 || ps[1].Outcome != daemon.Skipped {
		t.Fatalf("reloaded to %s, held elsewhere: %+v", next, ps)
	}
	held.Unlock()
	clock.Advance(30 * time.Minute)
	clock.waitTimers(t, 1)
	ps := d.Passes()
	if len(ps) != 3 || ps[2].Outcome != daemon.Completed {
		t.Fatalf("reloaded to %s, free: %+v", next, ps)
	}
	in := 0
	for q := 0; q < 40; q++ {
		id := wire.QueueID(seed.DefaultNamespace, fmt.Sprintf("seed-%d", q), wire.TaskTypeActivity, 0)
		if next.Range().Contains(wire.RangeHash(id)) {
			in++
		}
	}
	if got := ps[2].Stats.QueuesDeleted; got != int64(in) || in == 0 {
		t.Errorf("the pass deleted %d queues, %d of the 40 lie in %s", got, in, next)
	}
}
