package scavenger_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/seed"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

// Every host passes a *sqlstore.DB to Begin.
var _ scavenger.PassDB = (*sqlstore.DB)(nil)

// setupStep returns the step of Begin's error, or "" if it is not a
// *SetupError.
func setupStep(err error) scavenger.SetupStep {
	var se *scavenger.SetupError
	if errors.As(err, &se) {
		return se.Step
	}
	return ""
}

// TestBegin: on every engine, a Pass of Begin holds the lock of its
// partition's range (a whole pass: the full range) until Close: an
// overlapping Begin fails at the lock step with store.ErrLocked, a
// disjoint one does not, and after Close the range is free again. The
// pass runs with the tables the schema check found and the lock it holds.
func TestBegin(t *testing.T) {
	ctx := context.Background()
	whole, first, second := scavenger.Partition{}, scavenger.Partition{Index: 0, Count: 2}, scavenger.Partition{Index: 1, Count: 2}
	for _, tc := range []struct {
		name       string
		held, next scavenger.Partition
		overlap    bool
	}{
		{"whole then whole", whole, whole, true},
		{"whole then part", whole, second, true},
		{"part then whole", first, whole, true},
		{"part then same part", first, first, true},
		{"part then other part", first, second, false},
	} {
		for _, e := range testdb.Engines {
			t.Run(tc.name+"/"+string(e), func(t *testing.T) {
				db := testdb.Open(t, e)
				seedPartitioned(t, db)
				p, err := scavenger.Begin(ctx, db, partitionConfig(tc.held), scavenger.PassOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if cfg := p.Config(); cfg.Lock == nil || !slices.Equal(cfg.Tables, []store.Table{store.V1, store.V2}) {
					t.Fatalf("the pass runs with lock %v and tables %v: want its lock and the tables found, v1 and v2", cfg.Lock, cfg.Tables)
				}
				q, err := scavenger.Begin(ctx, db, partitionConfig(tc.next), scavenger.PassOptions{})
				switch {
				case tc.overlap && (setupStep(err) != scavenger.StepLock || !errors.Is(err, store.ErrLocked)):
					t.Fatalf("a pass of %s beside one of %s: %v (step %q), want the lock step's store.ErrLocked", tc.next, tc.held, err, setupStep(err))
				case !tc.overlap && err != nil:
					t.Fatalf("a pass of %s beside one of %s: %v, want it to run", tc.next, tc.held, err)
				case !tc.overlap:
					if _, err := q.Run(ctx); err != nil {
						t.Fatal(err)
					}
					q.Close()
				}
				if _, err := p.Run(ctx); err != nil {
					t.Fatal(err)
				}
				if err := p.Close(); err != nil {
					t.Fatal(err)
				}
				if err := p.Close(); err != nil {
					t.Fatalf("a second Close: %v, want the first's (nil)", err)
				}
				l, err := db.LockRange(ctx, store.FullRange, false)
				if err != nil {
					t.Fatalf("after Close: %v, want the lock free", err)
				}
				l.Unlock()
			})
		}
	}
}

// TestBeginSchema: Begin over a database without task tables fails at the
// schema step with store.ErrSchema, and leaves the lock free.
func TestBeginSchema(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "empty.db")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	db := testdb.OpenDSN(t, "sqlite:"+path)
	_, err := scavenger.Begin(ctx, db, scavenger.Config{}, scavenger.PassOptions{})
	if setupStep(err) != scavenger.StepSchema || !errors.Is(err, store.ErrSchema) {
		t.Fatalf("Begin over an empty database: %v (step %q), want the schema step's store.ErrSchema", err, setupStep(err))
	}
	l, err := db.LockRange(ctx, store.FullRange, false)
	if err != nil {
		t.Fatalf("after a failed schema check: %v, want the lock released", err)
	}
	l.Unlock()
}

// TestBeginTablesAtRun: with PassOptions.TablesAtRun a nil Config.Tables
// stays nil (the pass finds the tables when it starts); set Tables are
// kept either way.
func TestBeginTablesAtRun(t *testing.T) {
	ctx := context.Background()
	db := newSQLite(t)
	for _, tc := range []struct {
		opts   scavenger.PassOptions
		tables []store.Table
		want   []store.Table
	}{
		{scavenger.PassOptions{}, nil, []store.Table{store.V1, store.V2}},
		{scavenger.PassOptions{TablesAtRun: true}, nil, nil},
		{scavenger.PassOptions{}, []store.Table{store.V2}, []store.Table{store.V2}},
		{scavenger.PassOptions{TablesAtRun: true}, []store.Table{store.V2}, []store.Table{store.V2}},
	} {
		p, err := scavenger.Begin(ctx, db, scavenger.Config{Rules: scavenger.Rules{Tables: tc.tables}}, tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Config().Tables; !slices.Equal(got, tc.want) {
			t.Errorf("%+v, tables %v: the pass has tables %v, want %v", tc.opts, tc.tables, got, tc.want)
		}
		p.Close()
	}
}

// TestBeginDryRun: a dry run takes no lock (its store refuses every
// write): it runs beside a whole pass that holds the lock, and watches
// none.
func TestBeginDryRun(t *testing.T) {
	ctx := context.Background()
	db := newSQLite(t)
	held, err := scavenger.Begin(ctx, db, scavenger.Config{}, scavenger.PassOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	p, err := scavenger.Begin(ctx, db, scavenger.Config{Rules: scavenger.Rules{DryRun: true}}, scavenger.PassOptions{})
	if err != nil {
		t.Fatalf("a dry run beside a held lock: %v, want it to run", err)
	}
	if p.Config().Lock != nil {
		t.Errorf("a dry run watches lock %v, want none", p.Config().Lock)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestBeginResume: Begin asks Checkpoint.Fits of Config.Resume before the
// pass makes a statement: a checkpoint of this database, partition and
// rules is resumed from; one of another database, partition or rules is
// refused at the resume step with ErrCheckpointMismatch, the database
// unchanged and the lock released.
func TestBeginResume(t *testing.T) {
	ctx := context.Background()
	db := newSQLite(t)
	mustSeed(t, db, seed.Spec{Queues: 3, TasksPerQueue: 5, Expired: 1, IdleAge: 72 * time.Hour})
	id, err := db.Identity(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cfg := baseConfig()
	cfg.Tables = []store.Table{store.V1, store.V2} // as Begin finds them: in the digest
	fits := scavenger.Checkpoint{Version: scavenger.CheckpointVersion, Partition: cfg.Partition.String(), Settings: scavenger.SettingsDigest(cfg), Database: id}
	fits.Checksum = fits.Sum() // as a pass writes it: only the spoiled field is at fault
	for _, tc := range []struct {
		name  string
		spoil func(*scavenger.Checkpoint)
	}{
		{"another database", func(cp *scavenger.Checkpoint) { cp.Database = "sqlite:another" }},
		{"another partition", func(cp *scavenger.Checkpoint) { cp.Partition = "1/2" }},
		{"other rules", func(cp *scavenger.Checkpoint) {
			cp.Settings = scavenger.SettingsDigest(scavenger.Config{Rules: scavenger.Rules{PastLiveHead: true}})
		}},
		{"another version", func(cp *scavenger.Checkpoint) { cp.Version++ }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := testdb.Digest(t, db)
			cp := fits
			tc.spoil(&cp)
			cp.Checksum = cp.Sum()
			if err := cp.Fits(cfg, id); !errors.Is(err, scavenger.ErrCheckpointMismatch) {
				t.Fatalf("Fits: %v, want ErrCheckpointMismatch", err)
			}
			c := cfg
			c.Resume = &cp
			_, err := scavenger.Begin(ctx, db, c, scavenger.PassOptions{})
			if setupStep(err) != scavenger.StepResume || !errors.Is(err, scavenger.ErrCheckpointMismatch) {
				t.Fatalf("Begin: %v (step %q), want the resume step's ErrCheckpointMismatch", err, setupStep(err))
			}
			if got := testdb.Digest(t, db); got != before {
				t.Fatal("a refused checkpoint changed the database")
			}
			l, err := db.LockRange(ctx, store.FullRange, false)
			if err != nil {
				t.Fatalf("after a refused checkpoint: %v, want the lock released", err)
			}
			l.Unlock()
		})
	}
	if err := fits.Fits(cfg, id); err != nil {
		t.Fatalf("Fits of the pass's own checkpoint: %v", err)
	}
	c := cfg
	c.Resume = &fits
	p, err := scavenger.Begin(ctx, db, c, scavenger.PassOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if st, err := p.Run(ctx); err != nil || !st.Resumed || st.TasksDeleted != 15 {
		t.Fatalf("a pass resumed from a checkpoint of no positions: %+v, %v: want it resumed, every expired task deleted", st, err)
	}
}

// TestDoors: what docs/library.md promises of the two ways to a pass, on
// every engine. Begin, the documented one, refuses a real pass while
// another store (as another process would) holds the lock, at the lock
// step with store.ErrLocked and nothing deleted, and refuses a database
// without task tables at the schema step with store.ErrSchema, a dry run
// too; a dry run takes no lock. NewUnlocked does neither, on purpose: its
// passes run beside the held lock, a real one deleting, and nothing
// refuses the database without tables before its pass.
func TestDoors(t *testing.T) {
	ctx := context.Background()
	begin := func(db *sqlstore.DB, cfg scavenger.Config) (scavenger.Stats, error) {
		p, err := scavenger.Begin(ctx, db, cfg, scavenger.PassOptions{})
		if err != nil {
			return scavenger.Stats{}, err
		}
		defer p.Close()
		return p.Run(ctx)
	}
	unlocked := func(db *sqlstore.DB, cfg scavenger.Config) (scavenger.Stats, error) {
		return scavenger.NewUnlocked(db, cfg).Run(ctx)
	}
	for _, tc := range []struct {
		name     string
		door     func(*sqlstore.DB, scavenger.Config) (scavenger.Stats, error)
		dryRun   bool
		noTables bool // a database without task tables, else a lock held elsewhere
		step     scavenger.SetupStep
		err      error
		deleted  int64 // tasks deleted, or counted by a dry run
	}{
		{"Begin/locked", begin, false, false, scavenger.StepLock, store.ErrLocked, 0},
		{"Begin/locked/dry run", begin, true, false, "", nil, 15},
		{"Begin/no tables", begin, false, true, scavenger.StepSchema, store.ErrSchema, 0},
		{"Begin/no tables/dry run", begin, true, true, scavenger.StepSchema, store.ErrSchema, 0},
		{"NewUnlocked/locked", unlocked, false, false, "", nil, 15},
		{"NewUnlocked/locked/dry run", unlocked, true, false, "", nil, 15},
		{"NewUnlocked/no tables", unlocked, false, true, "", nil, 0},
		{"NewUnlocked/no tables/dry run", unlocked, true, true, "", nil, 0},
	} {
		for _, e := range testdb.Engines {
			t.Run(tc.name+"/"+string(e), func(t *testing.T) {
				var db *sqlstore.DB
				if tc.noTables {
					dsn := testdb.Empty(t, e)
					var err error
					if db, err = sqlstore.Open(ctx, dsn, sqlstore.Options{Create: true}); err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { db.Close() })
				} else {
					dsn := testdb.DSN(t, e)
					db = testdb.OpenDSN(t, dsn)
					mustSeed(t, db, seed.Spec{Queues: 3, TasksPerQueue: 5, Expired: 1, IdleAge: 72 * time.Hour})
					held, err := testdb.OpenDSN(t, dsn).LockRange(ctx, store.FullRange, false)
					if err != nil {
						t.Fatal(err)
					}
					defer held.Unlock()
				}
				var before string
				if !tc.noTables {
					before = testdb.Digest(t, db)
				}
				cfg := baseConfig()
				cfg.DryRun = tc.dryRun
				st, err := tc.door(db, cfg)
				if tc.err != nil {
					if setupStep(err) != tc.step || !errors.Is(err, tc.err) {
						t.Fatalf("%v (step %q), want the %s step to fail with %v", err, setupStep(err), tc.step, tc.err)
					}
				} else if err != nil || st.Outcome != scavenger.Completed {
					t.Fatalf("%v, outcome %q: want the pass to run and complete", err, st.Outcome)
				}
				if got := max(st.TasksDeleted, st.WouldDeleteTasks); got != tc.deleted {
					t.Errorf("%d tasks deleted (or counted by a dry run), want %d", got, tc.deleted)
				}
				if want := tc.deleted > 0 && !tc.dryRun; !tc.noTables && (testdb.Digest(t, db) != before) != want {
					t.Errorf("the database changed: %v, want %v", !want, want)
				}
			})
		}
	}
}
