package temporalworker

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.uber.org/goleak"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/seed"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// now is every test's pinned clock.
var now = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// seeded returns a SQLite store with queues of both table versions:
// expired and live tasks mixed, several subqueues, and idle empty-to-be
// queues, their range_hashes spread over the whole space. The same call
// writes the same rows.
func seeded(t *testing.T) *sqlstore.DB {
	t.Helper()
	db := testdb.Open(t, sqlstore.SQLite)
	for _, s := range []seed.Spec{
		{NamePrefix: "mixed", Queues: 40, TasksPerQueue: 30, Expired: 0.5, Layout: seed.Shuffled, Seed: 1, IdleAge: time.Hour},
		{NamePrefix: "idle", Queues: 20, TasksPerQueue: 10, Expired: 1, IdleAge: 72 * time.Hour},
		{Table: store.V2, NamePrefix: "fair", Queues: 20, TasksPerQueue: 20, Subqueues: 2, Expired: 0.5, Layout: seed.Shuffled, Seed: 2, IdleAge: time.Hour},
	} {
		s.Now = now
		if _, err := seed.Write(context.Background(), db, s); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// newDatabase returns the database of a worker connected to db: db
// itself, as `tqscavenger worker` passes it.
func newDatabase(t *testing.T, db *sqlstore.DB) *sqlstore.DB {
	return db
}

// identity returns d's identity.
func identity(t *testing.T, d scavenger.PassDB) string {
	t.Helper()
	id, err := d.Identity(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// describe returns a pass description for d with the pinned clock.
func describe(t *testing.T, d scavenger.PassDB, n int) PassDescription {
	return PassDescription{DatabaseIdentity: identity(t, d), Partitions: n, Now: now, Rules: scavenger.Rules{PastLiveHead: true}}
}

// cleanPass makes one full pass, as `run` does, over a fresh copy of the
// seeded data, and returns its stats and the digest it leaves.
func cleanPass(t *testing.T, d PassDescription) (scavenger.Stats, string) {
	t.Helper()
	db := seeded(t)
	cfg, err := d.Config(0)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger = quiet()
	cfg.Partition = scavenger.Partition{} // the whole space, as `run`
	st, err := scavenger.New(db, cfg).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st, digest(t, db)
}

// digest hashes every row of db's task tables (testdb.Digest).
func digest(t *testing.T, db *sqlstore.DB) string { return testdb.Digest(t, db) }

// newEnv returns a workflow test environment with the pass workflow and
// the activities of acts registered.
func newEnv(t *testing.T, acts *Activities) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(quiet()))
	env := s.NewTestWorkflowEnvironment()
	env.SetTestTimeout(2 * time.Minute)
	// The machine may be loaded: the workflow's own code is quick, and a
	// slow scheduler is not a deadlock.
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute})
	Register(env, acts)
	return env
}
