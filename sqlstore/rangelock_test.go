//go:build unix

package sqlstore_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"syscall"
	"testing"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

// part is the I-th of N ranges, as scavenger.Partition.Range computes it
// (sqlstore does not import scavenger).
func part(i, n int) store.HashRange {
	const space = uint64(1) << 32
	return store.HashRange{Lo: uint32(uint64(i) * space / uint64(n)), Hi: uint32(uint64(i+1)*space/uint64(n) - 1)}
}

// TestCover: a range's cells are aligned powers of two, ascending, and
// their union is exactly the range; the ancestors strictly contain cells.
func TestCover(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ranges := []store.HashRange{store.FullRange, {Lo: 0, Hi: 0}, {Lo: math.MaxUint32, Hi: math.MaxUint32}, part(1, 3), part(6, 7)}
	for i := 0; i < 2000; i++ {
		a, b := rng.Uint32(), rng.Uint32()
		ranges = append(ranges, store.HashRange{Lo: min(a, b), Hi: max(a, b)})
	}
	for _, r := range ranges {
		cells := sqlstore.Cover(r)
		next := uint64(r.Lo)
		for _, c := range cells {
			size := uint64(c.Hi) - uint64(c.Lo) + 1
			if uint64(c.Lo) != next || size&(size-1) != 0 || uint64(c.Lo)%size != 0 {
				t.Fatalf("cover of %s: cell %s is not the aligned cell at %d", r, c, next)
			}
			next = uint64(c.Hi) + 1
		}
		if next != uint64(r.Hi)+1 || len(cells) > 62 {
			t.Fatalf("cover of %s ends at %d with %d cells", r, next, len(cells))
		}
		for _, a := range sqlstore.Ancestors(r) {
			inside := false
			for _, c := range cells {
				if a.Lo <= c.Lo && c.Hi <= a.Hi && a != c {
					inside = true
				}
				if a == c {
					t.Fatalf("%s: ancestor %s is a cell", r, a)
				}
			}
			if !inside {
				t.Fatalf("%s: ancestor %s contains no cell", r, a)
			}
		}
	}
}

// TestRangeLocks: on every engine, a range lock excludes every range that
// overlaps it, whatever the partition counts (0/4 and 0/8, a full pass and
// any partition, random pairs of I/N with N up to 64), and no range that
// does not; disjoint partitions are held at once; each held lock passes
// its check.
func TestRangeLocks(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e sqlstore.Engine, a *sqlstore.DB) {
		var b *sqlstore.DB
		if e == sqlstore.SQLite {
			b = testdb.OpenDSN(t, a.DSN().String())
		} else {
			b = testdb.OpenDSN(t, a.DSN().URL.String())
		}
		type pair struct{ held, try store.HashRange }
		pairs := []pair{
			{part(0, 4), part(0, 8)},
			{part(0, 8), part(0, 4)},
			{part(0, 4), part(1, 8)},
			{part(0, 4), part(2, 8)},
			{part(0, 3), part(1, 3)},
			{part(1, 3), part(0, 7)},
			{part(1, 3), part(3, 7)},
			{store.FullRange, part(5, 7)},
			{part(5, 7), store.FullRange},
			{part(63, 64), store.FullRange},
			{store.HashRange{Lo: 0, Hi: 0}, part(0, 64)},
			{store.HashRange{Lo: math.MaxUint32, Hi: math.MaxUint32}, part(63, 64)},
			{store.HashRange{Lo: math.MaxUint32, Hi: math.MaxUint32}, part(62, 64)},
		}
		rng := rand.New(rand.NewPCG(3, 4))
		for i := 0; i < 25; i++ {
			n1, n2 := 1+rng.IntN(64), 1+rng.IntN(64)
			pairs = append(pairs, pair{part(rng.IntN(n1), n1), part(rng.IntN(n2), n2)})
		}
		for _, p := range pairs {
			held, err := a.LockRange(ctx, p.held, false)
			if err != nil {
				t.Fatalf("lock %s: %v", p.held, err)
			}
			if err := held.Check(ctx); err != nil {
				t.Fatalf("check %s: %v", p.held, err)
			}
			l, err := b.LockRange(ctx, p.try, false)
			switch overlap := p.held.Overlaps(p.try); {
			case overlap && !errors.Is(err, store.ErrLocked):
				t.Errorf("%s held, %s (overlapping) was taken: %v", p.held, p.try, err)
			case !overlap && err != nil:
				t.Errorf("%s held, %s (disjoint) was refused: %v", p.held, p.try, err)
			}
			if err == nil {
				if err := l.Check(ctx); err != nil {
					t.Errorf("check %s beside %s: %v", p.try, p.held, err)
				}
				l.Unlock()
			}
			if err := held.Check(ctx); err != nil {
				t.Fatalf("check %s after %s was tried: %v", p.held, p.try, err)
			}
			if err := held.Unlock(); err != nil {
				t.Fatal(err)
			}
		}
		// All the partitions of a non-power-of-two N at once, from two
		// handles; then none of them can be had again, nor the whole.
		var locks []store.Lock
		for i := 0; i < 7; i++ {
			st := a
			if i%2 == 1 {
				st = b
			}
			l, err := st.LockRange(ctx, part(i, 7), false)
			if err != nil {
				t.Fatalf("partition %d/7 beside the others: %v", i, err)
			}
			locks = append(locks, l)
		}
		if _, err := a.Lock(ctx, false); !errors.Is(err, store.ErrLocked) {
			t.Errorf("whole pass beside 7 partitions: %v, want ErrLocked", err)
		}
		for i, l := range locks {
			if err := l.Check(ctx); err != nil {
				t.Errorf("check %d/7: %v", i, err)
			}
			l.Unlock()
		}
	})
}

// TestRangeLockOldWholePass: the whole-pass lock as versions before
// partitions take it (plain SQL here, or a flock on SQLite) excludes a
// partition's lock; and a partition's lock excludes it where the engine
// can (PostgreSQL, SQLite), or loses its lock at the next check (MySQL,
// whose GET_LOCK has no shared mode).
func TestRangeLockOldWholePass(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e sqlstore.Engine, db *sqlstore.DB) {
		var take, release func() bool
		switch e {
		case sqlstore.SQLite:
			var f *os.File
			take = func() bool {
				var err error
				if f, err = os.OpenFile(db.DSN().Path+".tqscavenger.lock", os.O_RDWR|os.O_CREATE, 0o666); err != nil {
					t.Fatal(err)
				}
				if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
					f.Close()
					return false
				}
				return true
			}
			release = func() bool { return f.Close() == nil }
		default:
			conn, err := testdb.SQL(t, db).Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { conn.Close() })
			one := func(q string, args ...any) bool {
				var ok bool
				if err := conn.QueryRowContext(ctx, q, args...).Scan(&ok); err != nil {
					t.Fatal(err)
				}
				return ok
			}
			if e == sqlstore.Postgres {
				const key = "('x' || substr(md5('tqscavenger.' || current_schema()), 1, 16))::bit(64)::bigint"
				take = func() bool { return one("SELECT pg_try_advisory_lock(" + key + ")") }
				release = func() bool { return one("SELECT pg_advisory_unlock(" + key + ")") }
			} else {
				name := sqlstore.MySQLLockName(db.DSN().Database())
				take = func() bool { return one("SELECT COALESCE(GET_LOCK(?, 0), 0) = 1", name) }
				release = func() bool { return one("SELECT COALESCE(RELEASE_LOCK(?), 0) = 1", name) }
			}
		}
		if !take() {
			t.Fatal("the old whole-pass lock is not free")
		}
		if _, err := db.LockRange(ctx, part(2, 5), false); !errors.Is(err, store.ErrLocked) {
			t.Errorf("partition beside an old whole pass: %v, want ErrLocked", err)
		}
		if !release() {
			t.Fatal("release the old whole-pass lock")
		}
		l, err := db.LockRange(ctx, part(2, 5), false)
		if err != nil {
			t.Fatalf("partition after the old whole pass: %v", err)
		}
		defer l.Unlock()
		got := take()
		switch {
		case e == sqlstore.MySQL:
			if !got {
				t.Fatal("MySQL: the old whole-pass lock was not free beside a partition")
			}
			if err := l.Check(ctx); !errors.Is(err, store.ErrLockLost) {
				t.Errorf("MySQL: the partition's check beside an old whole pass: %v, want ErrLockLost", err)
			}
			release()
		case got:
			t.Errorf("%s: an old whole pass took its lock beside a partition", e)
			release()
		}
	})
}
