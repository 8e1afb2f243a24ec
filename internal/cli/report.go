package cli

import (
	"context"
	"time"

	"github.com/tqscavenger/tqscavenger/report"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

func reportCmd(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "report", "--db DSN [--json]")
	var (
		cf            connFlags
		now, tables   string
		asJSON, modes bool
		grace         time.Duration
	)
	cf.register(fs)
	fs.BoolVar(&asJSON, "json", false, "write JSON instead of tables")
	fs.BoolVar(&modes, "modes", true, "add what each scavenger mode would delete (dry runs)")
	fs.StringVar(&now, "now", "", "pretend the time is this RFC 3339 instant")
	fs.DurationVar(&grace, "grace", 0, "idle time that makes a queue deletable (default 48h)")
	fs.StringVar(&tables, "tables", "all", "table versions: v1, v2 or all")
	if err := parse(fs, args); err != nil {
		return err
	}
	o := report.Options{Grace: grace, Modes: modes}
	if now != "" {
		t, err := time.Parse(time.RFC3339Nano, now)
		if err != nil {
			return usagef("--now %q: use RFC 3339, e.g. 2026-11-30T12:00:00Z", now)
		}
		o.Now = t
	}
	if grace < 0 {
		return usagef("--grace %s: must not be negative", grace)
	}
	db, info, err := cf.openChecked(ctx, fs, args, storeOptionsReadOnly(), stderrWarn(e, "report"))
	if err != nil {
		return err
	}
	defer db.Close()
	switch tables {
	case "all":
		o.Tables = info.Tables
	case "v1":
		o.Tables = []store.Table{store.V1}
	case "v2":
		o.Tables = []store.Table{store.V2}
	default:
		return usagef("--tables %q: use v1, v2 or all", tables)
	}
	r, err := report.Take(ctx, db, o)
	if err != nil {
		return err
	}
	if asJSON {
		return r.WriteJSON(e.stdout)
	}
	return r.WriteText(e.stdout)
}

// storeOptionsReadOnly are the options of commands that only read.
func storeOptionsReadOnly() sqlstore.Options { return sqlstore.Options{} }
