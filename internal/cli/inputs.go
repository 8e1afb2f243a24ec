package cli

// Inputs checked before any work, whatever the command (issue 39's
// finding 8): a value that would be ignored, an output file a pass would
// find unwritable only at its end, a serve interval that makes passes run
// back to back, a Temporal address or API key no client can use, and
// serve's --listen and TLS settings, which `config` checks as serve does.
// Each is bad input: exit status 2, before the database or Temporal is
// touched.

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/tqscavenger/tqscavenger/internal/connect"
	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// notEmpty are the flags that limit what a pass covers, or protect: given
// empty, each would be read as not given at all (the pass covers every
// namespace or queue; nothing is protected), the opposite of what the
// user meant by giving it.
var notEmpty = map[string]string{
	"namespace": "name a namespace (by name or id), or leave --namespace out for every namespace",
	"queue":     "give a glob such as orders-*, or leave --queue out for every queue",
	"protect":   `give a prefix, or "none" to protect nothing`,
}

// checkInputs refuses, after layer, a flag of fs of notEmpty given empty
// on the command line, and a --stats-json that cannot be written. In a
// --config file "" is the default, as `config` writes it (an empty
// variable is no variable).
func checkInputs(fs *pflag.FlagSet, o map[string]origin) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		hint, ok := notEmpty[f.Name]
		if err != nil || !ok || o[f.Name].layer != fromFlag {
			return
		}
		if strings.Trim(f.Value.String(), ", \t") == "" {
			err = usagef("%s given empty: %s", o[f.Name].name, hint)
		}
	})
	if err != nil {
		return err
	}
	if f := fs.Lookup("stats-json"); f != nil && f.Value.String() != "" {
		return checkOutputFile(o["stats-json"].name, f.Value.String())
	}
	return nil
}

// checkOutputFile checks that the file at path, which a command writes
// at its end, can be written: an existing regular file opened for writing
// (not truncated), or, for a new one, a file created and removed beside
// it. A pass that ran for hours must not end with exit 1 for a typo in
// the path, its counts lost while the file it could not write would have
// said "completed". A device or pipe (/dev/stdout) is taken as it is.
func checkOutputFile(flag, path string) error {
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.IsDir():
		return usagef("%s %s: a directory: name a file", flag, path)
	case err == nil && !fi.Mode().IsRegular():
		return nil // a device or a pipe: opening it could block
	case err == nil:
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return usagef("%s %s: cannot be written (%v): the pass's counts would be lost at its end", flag, path, errors.Unwrap(err))
		}
		return f.Close()
	case !errors.Is(err, os.ErrNotExist):
		return usagef("%s %s: %v", flag, path, errors.Unwrap(err))
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".probe*")
	if err != nil {
		return usagef("%s %s: its directory cannot hold it (%v): the pass's counts would be lost at its end", flag, path, errors.Unwrap(err))
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}

// MinEvery is the shortest time between serve's passes (--every, or a
// cron schedule's next two times) without --unsafe-short-interval. A
// pass over a large database takes minutes, so that a shorter interval
// (1ns, or 1s meant as 1h) runs passes back to back; Temporal's own
// scavenger runs every 12 hours.
const MinEvery = time.Minute

// checkInterval refuses an interval under MinEvery, unless allowed.
func checkInterval(interval time.Duration, allow bool) error {
	if interval < MinEvery && !allow {
		return usagef("--every/--cron: passes %s apart: under %s, passes would run back to back (pass --unsafe-short-interval for a test or a lab)", interval, MinEvery)
	}
	return nil
}

// checkListen checks serve's --listen as net.Listen will take it, without
// listening: `config` runs while serve may hold the port.
func checkListen(addr string) error {
	if addr == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef("--listen %q: %v (want host:port, e.g. 127.0.0.1:9464, or \"\" for no page)", addr, err)
	}
	if strings.ContainsAny(host, " \t/@") {
		return usagef("--listen %q: the host is not a host name or address", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		if _, err := net.LookupPort("tcp", port); err != nil {
			return usagef("--listen %q: port %q: use 0 to 65535", addr, port)
		}
	}
	return nil
}

// checkTLS checks the database's TLS settings of t as opening it will,
// reading the certificate files but connecting to nothing: a store's
// connector is built and dropped.
func checkTLS(t connect.Target) error {
	if t.TLS == nil && t.DSN.Engine != sqlstore.Postgres {
		return nil // SQLite without TLS; MySQL's tls= is checked at open
	}
	if t.DSN.Engine == sqlstore.SQLite {
		return usagef("TLS: SQLite is a file: it has no TLS")
	}
	if _, err := sqlstore.Connector(t.DSN, t.Options(sqlstore.Options{})); err != nil &&
		(errors.Is(err, sqlstore.ErrTLS) || errors.Is(err, sqlstore.ErrBadDSN)) {
		return usageError{err}
	}
	return nil
}

// checkTemporalAddress refuses a --temporal-address no Temporal client
// can dial: it is host:port, or a gRPC target (dns:///host:port,
// passthrough:///host:port, unix:PATH). The SDK would report it as the
// frontend unreachable (exit 4, retry later), which retrying will not
// change. Not quoted: it may hold credentials.
func checkTemporalAddress(where, addr string) error {
	if addr == "" {
		return nil // the default
	}
	if scheme, rest, ok := strings.Cut(addr, ":"); ok {
		switch scheme {
		case "dns", "passthrough":
			if hp, ok := strings.CutPrefix(rest, "///"); ok && hostPort(hp) {
				return nil
			}
			return usagef("%s: a %s target is %s:///host:port", where, scheme, scheme)
		case "unix", "unix-abstract":
			if strings.TrimLeft(rest, "/") != "" && !strings.ContainsAny(rest, " \t\n") {
				return nil
			}
		}
	}
	if !hostPort(addr) {
		return usagef("%s is not host:port (e.g. temporal.example.com:7233, port 1 to 65535) nor a gRPC target such as dns:///host:port (the value is not shown: it may hold a secret)", where)
	}
	return nil
}

// hostPort reports whether s is host:port with a host name or address
// and a port from 1 to 65535.
func hostPort(s string) bool {
	host, port, err := net.SplitHostPort(s)
	if err != nil || host == "" || strings.ContainsAny(host, " \t\n/@?#:%") && net.ParseIP(host) == nil {
		return false
	}
	n, err := strconv.Atoi(port)
	return err == nil && n >= 1 && n <= 65535
}

// checkAPIKey refuses an API key a gRPC header cannot carry: only
// printable ASCII may be sent, and the SDK fails the first call instead
// (reported as the frontend unreachable). Its position is named, never
// the key.
func checkAPIKey(where, key string) error {
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x20 || c > 0x7e {
			return usagef("%s holds a character a gRPC header cannot carry (byte %d of %d: a control character, a newline or non-ASCII): check how the key was copied", where, i+1, len(key))
		}
	}
	if strings.TrimSpace(key) != key {
		return usagef("%s begins or ends with white space: check how the key was copied", where)
	}
	return nil
}

// describeOrigin names where flag name's value came from, for errors.
func describeOrigin(o map[string]origin, name string) string {
	if w := o[name].name; w != "" {
		return w
	}
	return fmt.Sprintf("--%s", name)
}
