// This file owns the locks of parts of the range_hash space (partitions):
// which named locks a range takes on each engine, so that overlapping
// ranges exclude each other whatever their partition counts, disjoint
// ones run at once, and every range excludes the whole-pass lock.
//
// The server engines lock the range's dyadic cover: the fewest aligned
// power-of-two cells (at most 62) whose union is exactly the range. Two
// ranges overlap exactly when a cell of one contains or equals a cell of
// the other. So a range takes each of its cells exclusively and each
// strict ancestor of them (the cells containing them) as an intention:
// two holders of one cell conflict; a holder of a cell and a holder of a
// cell inside it conflict through the intention the inner one holds on
// the outer; intentions never conflict with each other, so disjoint ranges
// never meet. This is hierarchical (intention) locking, exact for any mix
// of ranges.
//
//   - PostgreSQL: an exclusive advisory lock per cell, a shared one per
//     intention, and the whole-pass key of every version in shared mode,
//     so that a whole pass (exclusive on it) excludes every range; all are
//     tried without waiting, and a range that cannot have them all drops
//     its session.
//   - MySQL: GET_LOCK has no shared mode. An intention is one of
//     mysqlIntentSlots named slots of its cell (any free one); a cell is
//     taken only if every slot of its intentions is free and no ancestor
//     cell is held. The check and the take of a range happen while holding
//     an acquisition lock, so that no two ranges are taken at once. A range
//     that is not the whole space checks that the whole-pass lock of older
//     versions is free when it is taken and at every lock check (a whole
//     pass takes that lock and the root cell).
//   - SQLite: byte-range locks on a lock file (see lockSQLiteRange).

package sqlstore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tqscavenger/tqscavenger/store"
)

// cell is the aligned range [index·2^level, (index+1)·2^level − 1] of the
// range_hash space; level 32 is the whole space.
type cell struct {
	level uint8
	index uint64
}

func (c cell) String() string { return fmt.Sprintf("%d.%d", c.level, c.index) }

// cover returns the dyadic cover of r, in ascending order.
func cover(r store.HashRange) []cell {
	lo, hi := uint64(r.Lo), uint64(r.Hi)
	var out []cell
	for lo <= hi {
		level := uint8(0)
		for level < 32 && lo%(1<<(level+1)) == 0 && lo+(1<<(level+1))-1 <= hi {
			level++
		}
		out = append(out, cell{level: level, index: lo >> level})
		lo += 1 << level
	}
	return out
}

// ancestors returns the distinct cells that strictly contain a cell of
// cells, ascending by level then index.
func ancestors(cells []cell) []cell {
	seen := map[cell]bool{}
	var out []cell
	for l := uint8(1); l <= 32; l++ {
		for _, c := range cells {
			if c.level >= l {
				continue
			}
			a := cell{level: l, index: c.index >> (l - c.level)}
			if !seen[a] {
				seen[a] = true
				out = append(out, a)
			}
		}
	}
	return out
}

// lockSession opens the connection a server lock lives on: a pool of its
// own of one connection, outside the store's.
func (s *DB) lockSession(ctx context.Context) (*sql.DB, *sql.Conn, error) {
	pool := sql.OpenDB(s.connector)
	pool.SetMaxOpenConns(1)
	conn, err := pool.Conn(ctx)
	if err != nil {
		pool.Close()
		return nil, nil, s.wrap(ctx, "lock", err)
	}
	return pool, conn, nil
}

// postgresCellKey is the advisory lock key of the cell named by $1 in the
// schema of the tables.
const postgresCellKey = "('x' || substr(md5('" + lockName + ".range.' || current_schema() || '.' || n), 1, 16))::bit(64)::bigint"

// postgresHeld counts the advisory locks the session holds.
const postgresHeld = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid = pg_backend_pid()" +
	" AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"

func (s *DB) lockPostgresRange(ctx context.Context, r store.HashRange) (_ store.Lock, err error) {
	ctx, cancel := s.withStartup(ctx)
	defer cancel()
	pool, conn, err := s.lockSession(ctx)
	if err != nil {
		return nil, err
	}
	held := false
	defer func() {
		if !held {
			// A refused attempt may hold some of its cells: give them back
			// before returning. Closing the connection ends the session
			// and its locks too, but only once the server has noticed, and
			// a pass trying right after was refused meanwhile by a session
			// nobody holds (CI at b1b568c, TestRangeLocks under load).
			rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
			conn.ExecContext(rctx, "SELECT pg_advisory_unlock_all()") // on error the session's end frees them
			rcancel()
			discard(conn) // the session and every lock it got go
			pool.Close()
		}
	}()
	cells := cover(r)
	var names []string
	var excl []bool
	for _, c := range cells {
		names, excl = append(names, c.String()), append(excl, true)
	}
	for _, a := range ancestors(cells) {
		names, excl = append(names, a.String()), append(excl, false)
	}
	var got bool
	if err := conn.QueryRowContext(ctx, "SELECT pg_try_advisory_lock_shared("+postgresLockKey+")").Scan(&got); err != nil {
		return nil, s.wrap(ctx, "lock", err)
	}
	if !got {
		return nil, fmt.Errorf("%w on %s: a whole pass holds the lock", store.ErrLocked, s.dsn)
	}
	if err := conn.QueryRowContext(ctx, "SELECT bool_and(CASE WHEN x THEN pg_try_advisory_lock("+postgresCellKey+") ELSE pg_try_advisory_lock_shared("+postgresCellKey+") END)"+
		" FROM unnest($1::text[], $2::boolean[]) AS u(n, x)", names, excl).Scan(&got); err != nil {
		return nil, s.wrap(ctx, "lock", err)
	}
	if !got {
		return nil, fmt.Errorf("%w on %s: a pass over a range overlapping %s holds it", store.ErrLocked, s.dsn, r)
	}
	var n int64
	if err := conn.QueryRowContext(ctx, postgresHeld).Scan(&n); err != nil {
		return nil, s.wrap(ctx, "lock", err)
	}
	held = true
	return &serverLock{
		pool: pool, conn: conn,
		check:     "SELECT (" + postgresHeld + ") = $1",
		checkArgs: []any{n},
		release:   "SELECT pg_advisory_unlock_all()",
		lostWhy:   "the lock's session no longer holds all of its range's locks",
	}, nil
}

// mysqlIntentSlots is how many passes may hold ranges inside one cell at
// once on MySQL (the intentions of a cell are its slots): the most
// partitions that run at once on one database.
const mysqlIntentSlots = 64

// mysqlRangeName names a lock of the range scheme of database db, within
// MySQL's 64 characters.
func mysqlRangeName(db, what string) string {
	name := lockName + "." + db + "." + what
	if len(name) > 64 {
		sum := sha256.Sum256([]byte(db))
		name = lockName + "." + hex.EncodeToString(sum[:])[:24] + "." + what
	}
	return name
}

// lockMySQLRange takes r's locks on MySQL, where GET_LOCK has only
// exclusive named locks. Each part of its design answers a case:
//
//   - Intentions as slots: partitions 0/4 and 1/4 both lie inside cell
//     31.0 (and the root), and must run at once, so their intentions on
//     it must not conflict; an exclusive name per intention would make
//     them. Each takes a free one of the cell's mysqlIntentSlots names,
//     and a range that wants the cell itself (a whole pass, or 0/2) finds
//     it taken only if one of those slots is held.
//   - Cells, not fixed buckets: partitions of any N must mix (0/3 beside
//     1/4 overlap; 0/3 beside 1/3 do not); a fixed grid of buckets would
//     make disjoint ranges share the bucket their boundary falls in.
//   - The acquisition lock: MySQL cannot check and take many names in one
//     atomic step, so a whole pass checking the slots while a partition
//     takes one (and checks that the root is free) could both go ahead.
//     Every range checks and takes under one short-lived named lock.
//   - The old name: a whole pass of an older tqscavenger takes only
//     mysqlLockName, so every range checks it is free, when taken and at
//     every lock check; a whole pass of this version takes it too.
//
// A failed attempt releases at once what it took: a dropped session's
// locks go only when the server notices.
func (s *DB) lockMySQLRange(ctx context.Context, r store.HashRange) (store.Lock, error) {
	ctx, cancel := s.withStartup(ctx)
	defer cancel()
	pool, conn, err := s.lockSession(ctx)
	if err != nil {
		return nil, err
	}
	m := mysqlRangeLock{s: s, conn: conn, db: s.dsn.Database(), r: r}
	l, err := m.take(ctx)
	if err != nil {
		conn.ExecContext(ctx, "DO RELEASE_ALL_LOCKS()")
		discard(conn)
		pool.Close()
		return nil, err
	}
	l.pool, l.conn = pool, conn
	return l, nil
}

// mysqlRangeLock is one attempt at taking a range's locks on MySQL, on
// the lock's own session.
type mysqlRangeLock struct {
	s    *DB
	conn *sql.Conn
	db   string // the database, whose name the lock names carry
	r    store.HashRange
}

// take takes the range's locks under the acquisition lock, and returns
// the lock that checks them.
func (m mysqlRangeLock) take(ctx context.Context) (*serverLock, error) {
	mutex := mysqlRangeName(m.db, "acquire")
	if ok, err := m.query(ctx, "SELECT COALESCE(GET_LOCK(?, 10), 0) = 1", mutex); err != nil || !ok {
		return nil, m.refused(err, "%w on %s: the range locks' acquisition lock stayed busy for 10s")
	}
	old := mysqlLockName(m.db)
	if ok, err := m.query(ctx, "SELECT COALESCE(IS_FREE_LOCK(?), 0) = 1", old); err != nil || !ok {
		if m.r.Full() {
			return nil, m.refused(err, "%w on %s")
		}
		return nil, m.refused(err, "%w on %s: a whole pass holds the lock")
	}
	cells := cover(m.r)
	anc := ancestors(cells)
	if err := m.free(ctx, cells, anc); err != nil {
		return nil, err
	}
	// A whole pass takes the whole-pass lock too, only now that no range
	// holds a lock (a range's check would see it taken and stop its pass).
	var take []string
	if m.r.Full() {
		take = append(take, old)
	}
	slots, err := m.slots(ctx, anc)
	if err != nil {
		return nil, err
	}
	take = append(take, slots...)
	for _, c := range cells {
		take = append(take, mysqlRangeName(m.db, "x."+c.String()))
	}
	takeSum, takeArgs := mysqlSum("COALESCE(GET_LOCK(%s, 0), 0)", take)
	if ok, err := m.query(ctx, "SELECT "+takeSum+" = ?", append(takeArgs, len(take))...); err != nil || !ok {
		return nil, m.overlapped(err)
	}
	if _, err := m.conn.ExecContext(ctx, "SELECT RELEASE_LOCK(?)", mutex); err != nil {
		return nil, m.s.wrap(ctx, "lock", err)
	}
	return m.lock(take, old), nil
}

// free fails unless the range is free to take: no slot of an intention on
// one of its cells held (a range inside it), no ancestor cell held (a
// range around it). The names go as a JSON array: an expression over
// thousands of arguments overruns the server's stack.
func (m mysqlRangeLock) free(ctx context.Context, cells, anc []cell) error {
	var free []string
	for _, c := range cells {
		for k := 0; k < mysqlIntentSlots; k++ {
			free = append(free, mysqlRangeName(m.db, fmt.Sprintf("i.%s#%d", c, k)))
		}
	}
	for _, a := range anc {
		free = append(free, mysqlRangeName(m.db, "x."+a.String()))
	}
	freeSum, freeArgs := mysqlSum("COALESCE(IS_FREE_LOCK(%s), 0)", free)
	if ok, err := m.query(ctx, "SELECT "+freeSum+" = ?", append(freeArgs, len(free))...); err != nil || !ok {
		return m.overlapped(err)
	}
	return nil
}

// slots returns an intention slot per ancestor: the first free one of
// each.
func (m mysqlRangeLock) slots(ctx context.Context, anc []cell) ([]string, error) {
	var take []string
	for _, a := range anc {
		var slots []string
		for k := 0; k < mysqlIntentSlots; k++ {
			slots = append(slots, mysqlRangeName(m.db, fmt.Sprintf("i.%s#%d", a, k)))
		}
		var slot string
		err := m.conn.QueryRowContext(ctx, "SELECT j.n FROM "+mysqlNames+" WHERE COALESCE(IS_FREE_LOCK(j.n), 0) ORDER BY j.k LIMIT 1", jsonNames(slots)).Scan(&slot)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("%w on %s: %d passes already hold ranges inside cell %s", store.ErrLocked, m.s.dsn, mysqlIntentSlots, a)
		}
		if err != nil {
			return nil, m.s.wrap(ctx, "lock", err)
		}
		take = append(take, slot)
	}
	return take, nil
}

// lock returns the lock of the names mine, whose check is that every one
// is still this session's and (for a part of the space) that no older
// version's whole pass, whose lock is old, started meanwhile.
func (m mysqlRangeLock) lock(mine []string, old string) *serverLock {
	heldSum, checkArgs := mysqlSum("COALESCE(IS_USED_LOCK(%s) = CONNECTION_ID(), 0)", mine)
	check := "SELECT " + heldSum + " = ?"
	checkArgs = append(checkArgs, len(mine))
	why := "the lock's session no longer holds all of its range's locks"
	if !m.r.Full() {
		check += " AND COALESCE(IS_FREE_LOCK(?), 0) = 1"
		checkArgs = append(checkArgs, old)
		why += ", or a whole pass of an older tqscavenger took its lock"
	}
	return &serverLock{check: check, checkArgs: checkArgs, release: "SELECT RELEASE_ALL_LOCKS()", lostWhy: why}
}

// query returns the boolean query answers on the lock's session.
func (m mysqlRangeLock) query(ctx context.Context, query string, args ...any) (bool, error) {
	var ok bool
	if err := m.conn.QueryRowContext(ctx, query, args...).Scan(&ok); err != nil {
		return false, m.s.wrap(ctx, "lock", err)
	}
	return ok, nil
}

// refused returns err, the statement's, or else the refusal of format
// (whose verbs are store.ErrLocked and the DSN).
func (m mysqlRangeLock) refused(err error, format string) error {
	if err != nil {
		return err
	}
	return fmt.Errorf(format, store.ErrLocked, m.s.dsn)
}

// overlapped returns err, the statement's, or else the refusal for a
// range overlapping one held.
func (m mysqlRangeLock) overlapped(err error) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("%w on %s: a pass over a range overlapping %s holds it", store.ErrLocked, m.s.dsn, m.r)
}

// mysqlNames is a table of the lock names in the JSON array argument,
// with their order k.
const mysqlNames = "JSON_TABLE(?, '$[*]' COLUMNS (k FOR ORDINALITY, n VARCHAR(64) PATH '$')) j"

// mysqlSum returns an expression that sums term (a format with one %s for
// a lock name) over names, and its arguments: a plain sum for a few names
// (what a whole pass needs, on any MySQL), else a sum over a JSON_TABLE of
// the names (MySQL 8, MariaDB 10.6), as a sum of thousands of terms
// overruns the server's stack.
func mysqlSum(term string, names []string) (string, []any) {
	if len(names) <= 128 {
		terms := make([]string, len(names))
		args := make([]any, len(names))
		for i, n := range names {
			terms[i], args[i] = fmt.Sprintf(term, "?"), n
		}
		if len(terms) == 0 {
			return "0", nil
		}
		return "(" + strings.Join(terms, " + ") + ")", args
	}
	return "(SELECT SUM(" + fmt.Sprintf(term, "j.n") + ") FROM " + mysqlNames + ")", []any{jsonNames(names)}
}

// jsonNames encodes names as a JSON array.
func jsonNames[T any](names []T) string {
	b, _ := json.Marshal(names)
	return string(b)
}
