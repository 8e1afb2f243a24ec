// This file owns what a store tells about its SQLite file's journal.

package sqlstore

import (
	"context"
	"strings"
)

// JournalMode returns the SQLite file's journal mode as SQLite names it
// ("wal", "delete", "truncate", "persist", …), and "" on other engines.
// The store never changes the journal mode of a file it did not create:
// in a rollback journal every commit costs fsyncs (four with
// journal_mode=delete and synchronous=FULL), which a pass may want to
// spend on fewer, larger statements (see scavenger.Config.ForJournal).
func (s *DB) JournalMode(ctx context.Context) (string, error) {
	if s.d.engine != SQLite {
		return "", nil
	}
	ctx, cancel := s.withStartup(ctx)
	defer cancel()
	var mode string
	if err := s.db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return "", s.wrap(ctx, "read the journal mode", err)
	}
	return strings.ToLower(mode), nil
}
