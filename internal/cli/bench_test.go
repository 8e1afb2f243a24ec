package cli

import (
	"slices"
	"strings"
	"testing"
)

// TestPassFlags: --live-extra takes run's "What to delete" and "Pace and
// safety" flags only, and never echoes a refused value: the table prints
// the flags, and a DSN or password must not reach it.
func TestPassFlags(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []string
		refused string // in the error, if refused
	}{
		{in: "--task-batch-size 100 --yield-to-load", want: []string{"--task-batch-size", "100", "--yield-to-load"}},
		{in: "--workers=1 --max-deletes-per-second 500", want: []string{"--workers=1", "--max-deletes-per-second", "500"}},
		{in: "--past-live-head --orphans none", want: []string{"--past-live-head", "--orphans", "none"}},
		{in: "", refused: "no flags"},
		{in: "--db postgres://u:hunter2@h/db", refused: "--db: only"},
		{in: "--password=hunter2", refused: "--password: only"},
		{in: "--output json", refused: "--output: only"},
		{in: "workers 2", refused: `"workers" is not a flag`},
	} {
		got, err := passFlags(tc.in)
		switch {
		case tc.refused != "":
			if err == nil || !strings.Contains(err.Error(), tc.refused) || strings.Contains(err.Error(), "hunter2") {
				t.Errorf("%q: %v, want an error with %q and no password", tc.in, err, tc.refused)
			}
		case err != nil || !slices.Equal(got, tc.want):
			t.Errorf("%q: %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}
