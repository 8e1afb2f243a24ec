package scavenger_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/seed"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
	"github.com/tqscavenger/tqscavenger/wire"
)

// writeGolden rewrites the golden files instead of checking them. They were
// written by the build before the config split (issue 23); rewriting them
// would defeat their purpose, which is to prove that artifacts of that
// build keep working.
var writeGolden = os.Getenv("TQS_WRITE_GOLDEN") != ""

// digestCases are configurations whose settings digests were recorded in
// testdata/settings-digests.json by the build before the config split.
func digestCases() map[string]scavenger.Config {
	ns, _ := wire.ParseNamespaceID("32049b68-7872-4094-8e63-d0dd59896a83")
	type (
		R = scavenger.Rules
		P = scavenger.Pace
	)
	return map[string]scavenger.Config{
		"zero":           {},
		"temporal":       {Rules: R{Compat: scavenger.CompatTemporal}},
		"dry run":        {Rules: R{DryRun: true}},
		"grace 72h":      {Rules: R{Grace: 72 * time.Hour}},
		"short grace":    {Rules: R{Grace: time.Hour, UnsafeShortGrace: true}},
		"opt-in rules":   {Rules: R{PastLiveHead: true, BelowAckLevel: true, Orphans: scavenger.OrphansAll}},
		"no orphans":     {Rules: R{Orphans: scavenger.OrphansNone}},
		"protect none":   {Rules: R{ProtectedPrefixes: []string{}}},
		"protect two":    {Rules: R{ProtectedPrefixes: []string{"b-", "a-"}}},
		"scope":          {Rules: R{Tables: []store.Table{store.V2, store.V1}, Namespaces: []wire.NamespaceID{ns}, QueueGlob: "orders-*"}},
		"pace not in it": {Pace: P{Workers: 9, ListPageSize: 7, TaskBatchSize: 5, TasksPerJob: 50, MaxDeletesPerSecond: 3}, Partition: scavenger.Partition{Index: 1, Count: 2}},
	}
}

// TestSettingsDigestGolden: the settings digest of each configuration is
// the one the build before the config split wrote, so the checkpoints it
// saved are still accepted.
func TestSettingsDigestGolden(t *testing.T) {
	path := filepath.Join("testdata", "settings-digests.json")
	got := map[string]string{}
	for name, c := range digestCases() {
		got[name] = scavenger.SettingsDigest(c)
	}
	if writeGolden {
		b, _ := json.MarshalIndent(got, "", "  ")
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]string
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if len(want) != len(got) {
		t.Errorf("%d golden digests, %d cases", len(want), len(got))
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: digest %s, the golden one is %s", name, got[name], w)
		}
	}
}

// TestCheckpointGoldenAccepted: a checkpoint file written by the build
// before the config split (a dry run of partition 0/2 with PastLiveHead,
// stopped after its first queue page), sealed with its checksum as this
// build writes one, is accepted by a pass of the same settings, and
// refused by one of other settings; unsealed (that build wrote none) it
// is refused. Only its database identity is replaced: a file's identity
// is that of the file.
func TestCheckpointGoldenAccepted(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join("testdata", "checkpoint-before-split.json")
	cfg := func() scavenger.Config {
		c := baseConfig()
		c.DryRun, c.PastLiveHead, c.ListPageSize = true, true, 2
		c.Partition = scavenger.Partition{Index: 0, Count: 2}
		return c
	}
	db := testdb.Open(t, sqlstore.SQLite)
	mustSeed(t, db, seed.Spec{NamePrefix: "golden", Queues: 10, TasksPerQueue: 5, Expired: 0.5, IdleAge: 72 * time.Hour})
	if writeGolden {
		var first *scavenger.Checkpoint
		c := cfg()
		c.CheckpointInterval = time.Nanosecond
		c.Checkpoint = func(_ context.Context, cp scavenger.Checkpoint) error {
			for _, w := range cp.Walks {
				if first == nil && w.After != nil && !w.Done {
					first = &cp
				}
			}
			return nil
		}
		if _, err := scavenger.New(db, c).Run(ctx); err != nil {
			t.Fatal(err)
		}
		if first == nil {
			t.Fatal("no checkpoint with a position")
		}
		b, _ := json.MarshalIndent(first, "", "  ")
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cp scavenger.Checkpoint
	if err := json.Unmarshal(b, &cp); err != nil {
		t.Fatal(err)
	}
	if cp.Database, err = db.Identity(ctx); err != nil {
		t.Fatal(err)
	}
	// The build that wrote it wrote no checksum: as it is, it is refused
	// (a checkpoint is trusted only when it verifies). Sealed, as a pass
	// of this build would have written it, its settings digest is what
	// is tested.
	c := cfg()
	c.Resume = &cp
	if _, err := scavenger.New(db, c).Run(ctx); !errors.Is(err, scavenger.ErrCheckpointUnverified) {
		t.Errorf("the golden checkpoint, which has no checksum: %v, want ErrCheckpointUnverified", err)
	}
	cp.Checksum = cp.Sum()
	c = cfg()
	c.Resume = &cp
	if _, err := scavenger.New(db, c).Run(ctx); err != nil {
		t.Errorf("the golden checkpoint is refused: %v", err)
	}
	c = cfg()
	c.BelowAckLevel = true
	c.Resume = &cp
	if _, err := scavenger.New(db, c).Run(ctx); err == nil {
		t.Error("the golden checkpoint is accepted by a pass of other settings")
	}
}
