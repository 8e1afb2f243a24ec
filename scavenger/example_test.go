package scavenger_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/seed"
	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// A dry run through the one door, as docs/library.md shows it, over a
// SQLite file made here with three queues of five expired tasks each: it
// counts what a pass would delete, and deletes nothing.
func ExampleBegin() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "tqscavenger-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := sqlstore.Open(ctx, "sqlite:"+filepath.Join(dir, "tasks.db"), sqlstore.Options{Create: true})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if err := db.Setup(ctx); err != nil {
		log.Fatal(err)
	}
	if _, err := seed.Write(ctx, db, seed.Spec{Queues: 3, TasksPerQueue: 5, Expired: 1, IdleAge: 72 * time.Hour}); err != nil {
		log.Fatal(err)
	}

	cfg := scavenger.Config{Rules: scavenger.Rules{DryRun: true}, Hooks: scavenger.Hooks{Logger: slog.New(slog.DiscardHandler)}}
	p, err := scavenger.Begin(ctx, db, cfg, scavenger.PassOptions{})
	if err != nil {
		log.Fatal(err) // a *scavenger.SetupError: store.ErrLocked, store.ErrSchema, …
	}
	defer p.Close()
	st, err := p.Run(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(st.Outcome, st.WouldDeleteTasks, "tasks would be deleted")
	// Output: completed 15 tasks would be deleted
}
