package cli

// What the Temporal commands (worker.go, schedule.go) share with the rest
// of the command, built with or without the tqs_notemporal tag: their exit
// status, and the temporal CLI's environment variables of their flags,
// read in the environment layer (envLookup).

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// errTemporalUnavailable: the Temporal frontend could not be reached
// (exit status 4, retry later).
var errTemporalUnavailable = errors.New("temporal unavailable")

func sqlOptions(stmtTO time.Duration, maxConns int) sqlstore.Options {
	return sqlstore.Options{StatementTimeout: stmtTO, MaxConns: maxConns}
}

// temporalEnv are the temporal CLI's environment variables of each
// --temporal-* flag, read when TQSCAVENGER_* does not set it: first the
// names of Temporal's client environment configuration, then the CLI's
// older ones. They are the environment layer, as SQL_* are: a flag wins
// over them, and they win over the --config file.
var temporalEnv = map[string][]string{
	"temporal-profile":                       {"TEMPORAL_PROFILE"},
	"temporal-config-file":                   {"TEMPORAL_CONFIG_FILE"},
	"temporal-address":                       {"TEMPORAL_ADDRESS"},
	"temporal-namespace":                     {"TEMPORAL_NAMESPACE"},
	"temporal-api-key":                       {"TEMPORAL_API_KEY"},
	"temporal-tls":                           {"TEMPORAL_TLS"},
	"temporal-tls-cert-path":                 {"TEMPORAL_TLS_CLIENT_CERT_PATH", "TEMPORAL_TLS_CERT"},
	"temporal-tls-key-path":                  {"TEMPORAL_TLS_CLIENT_KEY_PATH", "TEMPORAL_TLS_KEY"},
	"temporal-tls-ca-path":                   {"TEMPORAL_TLS_SERVER_CA_CERT_PATH", "TEMPORAL_TLS_CA"},
	"temporal-tls-server-name":               {"TEMPORAL_TLS_SERVER_NAME"},
	"temporal-tls-disable-host-verification": {"TEMPORAL_TLS_DISABLE_HOST_VERIFICATION"},
}

func init() { secretFlags["temporal-api-key"] = true }

// temporalEnvLookup is envLookup for a flag with the temporal CLI's
// variables vars: TQSCAVENGER_* (variable, value, ok) if set, else the
// first of vars set and not empty. Two of vars that disagree are an error.
func temporalEnvLookup(variable, value string, ok bool, vars []string) (string, string, bool, error) {
	if ok {
		return variable, value, ok, nil
	}
	var from, val string
	for _, v := range vars {
		s, set := os.LookupEnv(v)
		switch {
		case !set || s == "":
		case from == "":
			from, val = v, s
		case s != val:
			return "", "", false, fmt.Errorf("%s and %s both set, to different values: keep one", from, v)
		}
	}
	if from == "" {
		return variable, "", false, nil
	}
	return from, val, true, nil
}
