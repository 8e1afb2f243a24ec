package cli

// The ranges of the numeric flags, checked once every layer is applied
// and before any work: no number is negative, NaN or infinite, and those
// that size memory or time have a cap (the library's, where it has one:
// scavenger.Config.Validate and sqlstore.Options.Validate check the same
// values again for embedders). 0 keeps its documented meaning.

import (
	"math"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// maxHistory caps serve's --history: records held in memory.
const maxHistory = 10_000

// flagCaps are the most each numeric flag takes.
var flagCaps = map[string]float64{
	"workers":                   scavenger.MaxWorkers,
	"list-page-size":            scavenger.MaxListPageSize,
	"task-batch-size":           scavenger.MaxTaskBatchSize,
	"tasks-per-job":             scavenger.MaxTasksPerJob,
	"max-deferred":              scavenger.MaxMaxDeferred,
	"max-deletes-per-second":    scavenger.MaxRate,
	"max-statements-per-second": scavenger.MaxRate,
	"yield-factor":              scavenger.MaxYieldFactor,
	"max-conns":                 sqlstore.MaxMaxConns,
	"live-conns":                sqlstore.MaxMaxConns,
	"max-partitions":            scavenger.MaxWorkers,
	"partitions":                scavenger.MaxWorkers,
	"history":                   maxHistory,
	"port":                      65535,
}

// checkRanges refuses a numeric flag of fs, after layer, that is
// negative, not a number, infinite or over its cap, naming where it was
// set (o).
func checkRanges(fs *pflag.FlagSet, o map[string]origin) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if err != nil || aliasOf(f) != "" {
			return
		}
		switch f.Value.Type() {
		case "int", "int64", "int32", "uint", "float64", "duration":
		default:
			return
		}
		where := o[f.Name].name
		if where == "" {
			where = "--" + f.Name
		}
		v := f.Value.String()
		if strings.HasPrefix(v, "-") {
			err = usagef("%s %s: must not be negative", where, v)
			return
		}
		if f.Value.Type() == "duration" {
			return
		}
		n, perr := strconv.ParseFloat(v, 64)
		switch {
		case perr != nil && !strings.Contains(v, "Inf"):
			return // not ours to judge: the flag's own Set took it
		case math.IsNaN(n) || math.IsInf(n, 0) || strings.Contains(v, "Inf"):
			err = usagef("%s %s: not a number", where, v)
		case flagCaps[f.Name] > 0 && n > flagCaps[f.Name]:
			err = usagef("%s %s: at most %s (0: the default)", where, v, strconv.FormatFloat(flagCaps[f.Name], 'f', -1, 64))
		}
	})
	return err
}
