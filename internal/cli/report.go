package cli

import (
	"context"
	"time"

	"github.com/tqscavenger/tqscavenger/report"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

func reportFlags(g *flagGroups) runFunc {
	var (
		cf                  connFlags
		now, tables, output string
		asJSON, modes       bool
		unsafeGrace         bool
		grace               time.Duration
		sf                  scavengeFlags // the closed-workflow rule's flags alone
	)
	cf.register(g.Conn)
	g.Count.BoolVar(&modes, "modes", true, "add what each scavenger mode would delete (dry runs)")
	g.Count.StringVar(&now, "now", "", "pretend the time is this RFC 3339 instant")
	durationVar(g.Count, &grace, "grace", 0, "idle time that makes a queue deletable (default "+shortDuration(defaults.Grace)+")")
	g.Count.StringVar(&tables, "tables", "all", "table versions: v1, v2 or all")
	sf.registerClosed(g.Count)
	g.Count.BoolVar(&unsafeGrace, "unsafe-short-grace", false, "allow a --grace under "+shortDuration(scavenger.MinGrace)+" in the mode dry runs, as run's: only for a copy of a database no Temporal server uses")
	outputFlag(g.Output, &output, "text (tables) or json")
	g.Output.BoolVar(&asJSON, "json", false, "same as --output json")
	configFlag(g.Other)
	return func(ctx context.Context, inv *invocation) error {
		if asJSON {
			if inv.origins["output"].layer != fromDefault && output != "json" {
				return usagef("--json and --output %s: keep one", output)
			}
			output = "json"
		}
		if err := checkOutput(output); err != nil {
			return err
		}
		o := report.Options{Grace: grace, UnsafeShortGrace: unsafeGrace, Modes: modes}
		if err := sf.closed.report(&o); err != nil {
			return err
		}
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
		if err := (scavenger.Config{Rules: scavenger.Rules{Grace: grace, UnsafeShortGrace: unsafeGrace}}).Validate(); err != nil {
			return usageError{err} // a grace under the minimum, without --unsafe-short-grace
		}
		db, info, err := cf.openChecked(ctx, inv, storeOptionsReadOnly(), stderrWarn(inv.env, "report"))
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
		if output == "json" {
			return r.WriteJSON(inv.stdout)
		}
		return r.WriteText(inv.stdout)
	}
}

// storeOptionsReadOnly are the options of commands that only read.
func storeOptionsReadOnly() sqlstore.Options { return sqlstore.Options{} }
