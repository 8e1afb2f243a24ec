package cli

// --output text|json: what run, report and schema check write on stdout.
// Logs go to stderr whatever it says, so that stdout stays one document.

import (
	"encoding/json"
	"io"

	"github.com/spf13/pflag"
)

// outputFlag registers --output in fs.
func outputFlag(fs *pflag.FlagSet, p *string, usage string) {
	fs.StringVarP(p, "output", "o", "text", usage)
}

// checkOutput refuses an --output other than text or json.
func checkOutput(v string) error {
	switch v {
	case "text", "json":
		return nil
	}
	return usagef("--output %q: use text or json", v)
}

// writeJSON writes v to w as indented JSON, for scripts.
func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
