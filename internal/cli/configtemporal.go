//go:build !tqs_notemporal

package cli

// What `config worker` and `config schedule` check of the Temporal
// client's settings: what worker and schedule check before they dial.

import "github.com/spf13/pflag"

func init() { checkTemporalShown = checkTemporalFlags }

// checkTemporalFlags applies the temporal CLI profile to the --temporal-*
// flags of fs that no layer set (o) and checks them (temporalFlags.check);
// fs then holds the profile's values, and o says they came from it.
func checkTemporalFlags(fs *pflag.FlagSet, o map[string]origin) error {
	var tf temporalFlags
	m, err := mirror(fs, o, func(g *flagGroups) { tf.register(g.Temporal) })
	if err != nil {
		return err
	}
	if err := tf.check(o); err != nil {
		return err
	}
	copyBack(m, fs)
	return nil
}
