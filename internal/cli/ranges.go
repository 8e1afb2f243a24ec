package cli

// The ranges of the numeric flags, checked once every layer is applied
// and before any work: no number is negative, NaN or infinite, and those
// that size memory or time have a cap, read from the flag (capOf): set by
// a pass setting's row (passSettings) or, for a flag outside it, by
// capFlag where it is registered. The caps are the library's, where it
// has one: scavenger.Config.Validate and sqlstore.Options.Validate check
// the same values again for embedders. 0 keeps its documented meaning.

import (
	"math"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// maxHistory caps serve's --history: records held in memory.
const maxHistory = 10_000

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
		case capOf(f) > 0 && n > capOf(f):
			err = usagef("%s %s: at most %s (0: the default)", where, v, strconv.FormatFloat(capOf(f), 'f', -1, 64))
		}
	})
	return err
}
