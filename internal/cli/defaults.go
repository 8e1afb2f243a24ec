package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// The defaults shown in help are read from the configuration a pass runs
// with (scavenger.Config.WithDefaults), never written out by hand, so help,
// `config` and the pass cannot disagree.
var (
	defaults       = scavenger.Config{}.WithDefaults()
	temporalConfig = scavenger.Config{Rules: scavenger.Rules{Compat: scavenger.CompatTemporal}}.WithDefaults()
	storeDefaults  = sqlstore.Options{}.WithDefaults()
)

// byMode formats a knob's default in tqscavenger's mode and, where it
// differs, in Temporal's: "(default 4; 32 with --compat=temporal)".
func byMode[T comparable](ours, temporal T) string {
	if ours == temporal {
		return "(default " + showValue(ours) + ")"
	}
	return "(default " + showValue(ours) + "; " + showValue(temporal) + " with --compat=temporal)"
}

// showValue formats a default as a user would type it.
func showValue(v any) string {
	if d, ok := v.(time.Duration); ok {
		return shortDuration(d)
	}
	return fmt.Sprint(v)
}

// shortDuration formats d without zero units: 48h, 1m30s, 250ms, not
// 48h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
