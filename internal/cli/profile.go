//go:build !tqs_notemporal

package cli

// The temporal CLI's connection profiles: the TOML file the temporal CLI
// writes (`temporal config set`), read with the Go SDK's envconfig. A
// profile is the lowest layer of the --temporal-* flags, above their
// defaults only: a flag, TQSCAVENGER_*, TEMPORAL_* and the --config file
// each win over it, as the temporal CLI's own flags and variables win over
// its profile.

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/spf13/pflag"
	"go.temporal.io/sdk/contrib/envconfig"

	"github.com/tqscavenger/tqscavenger/internal/readfile"
	"github.com/tqscavenger/tqscavenger/temporalworker"
)

// noEnv is an envconfig.EnvLookup that sees no variable: TEMPORAL_* are
// read by the environment layer (temporalEnv), with TQSCAVENGER_* first,
// so envconfig is given the file and profile they chose.
type noEnv struct{}

func (noEnv) Environ() []string               { return nil }
func (noEnv) LookupEnv(string) (string, bool) { return "", false }

// profileFlags maps each --temporal-* flag a profile can fill to its
// value in the profile ("" and false: not set there).
func profileFlags(p envconfig.ClientConfigProfile) map[string]string {
	m := map[string]string{
		"temporal-address":   p.Address,
		"temporal-namespace": p.Namespace,
		"temporal-api-key":   p.APIKey,
	}
	if t := p.TLS; t != nil {
		m["temporal-tls-cert-path"] = t.ClientCertPath
		m["temporal-tls-key-path"] = t.ClientKeyPath
		m["temporal-tls-ca-path"] = t.ServerCACertPath
		m["temporal-tls-server-name"] = t.ServerName
		if t.DisableHostVerification {
			m["temporal-tls-disable-host-verification"] = "true"
		}
		if !t.Disabled {
			m["temporal-tls"] = "true"
		}
	}
	return m
}

// maxProfileBytes bounds the temporal CLI's profiles file: a few hundred
// bytes a profile, and its TOML is read into maps, at tens of bytes of
// memory a byte, so 256 KiB keeps even a hostile file within a few tens
// of MiB.
const maxProfileBytes = 256 << 10

// applyProfile fills the --temporal-* flags still at their defaults in o
// from the profile --temporal-profile names (default "default") in the
// file --temporal-config-file names (default the temporal CLI's,
// os.UserConfigDir()/temporalio/temporal.toml), and records where each
// came from. A missing default file, or a missing "default" profile, sets
// nothing; a file or profile named and not found is an error. Its errors
// quote nothing of the file (it holds API keys) but line numbers and key
// names.
func (t *temporalFlags) applyProfile(o map[string]origin) error {
	file, named := t.configFile, o["temporal-config-file"].layer != fromDefault
	if file == "" {
		file = envconfig.DefaultConfigFilePath()
	}
	if file == "" {
		return nil
	}
	// Read here, with readfile's policy (a regular file of at most
	// maxProfileBytes), and given to envconfig as data: envconfig's own
	// read is unbounded (/dev/zero until memory runs out) and its open of
	// a FIFO blocks, heeding no signal.
	data, err := readfile.Regular(file, maxProfileBytes)
	switch {
	case errors.Is(err, os.ErrNotExist) && !named:
		return nil
	case err != nil:
		return usagef("%s %v", o["temporal-config-file"].shown("--temporal-config-file"), fileError(file, err))
	}
	var conf envconfig.ClientConfig
	if len(data) > 0 { // envconfig reads the default path for no data
		conf, err = envconfig.LoadClientConfig(envconfig.LoadClientConfigOptions{ConfigFileData: data, EnvLookup: noEnv{}})
		if err != nil {
			return usageError{profileFileError(file, err)}
		}
	}
	name := t.profile
	if name == "" {
		name = envconfig.DefaultConfigFileProfile
	}
	p := conf.Profiles[name]
	if p == nil {
		if o["temporal-profile"].layer == fromDefault && t.profile == "" {
			return nil
		}
		return usagef("%s %q: no such profile in %s (it has: %s)", o["temporal-profile"].shown("--temporal-profile"), name, file, profileNames(conf))
	}
	t.profileName, t.profileFile = name, file
	where := "profile " + name + " in " + file
	for flag, v := range profileFlags(*p) {
		if v == "" || o[flag].layer != fromDefault {
			continue
		}
		if err := t.fs.Set(flag, v); err != nil {
			return usagef("%s: %s: not a valid value", where, flag)
		}
		o[flag] = origin{fromProfile, where}
	}
	if err := checkProfileValues(t.fs, o, where); err != nil {
		return err
	}
	t.applyProfileData(*p, o)
	return nil
}

// profileKeys are the keys of a temporal CLI profile that hold an address
// or a file, with the flag each fills.
var profileKeys = []struct{ flag, key string }{
	{"temporal-address", "address"},
	{"temporal-tls-ca-path", "tls.server_ca_cert_path"},
	{"temporal-tls-cert-path", "tls.client_cert_path"},
	{"temporal-tls-key-path", "tls.client_key_path"},
}

// checkProfileValues refuses the address and the TLS files that the
// profile where gave (o), naming the profile's own key: what the flags'
// checks would refuse, said in the file's words, before anything is
// dialled.
func checkProfileValues(fs *pflag.FlagSet, o map[string]origin, where string) error {
	for _, k := range profileKeys {
		if o[k.flag].layer != fromProfile {
			continue
		}
		v := fs.Lookup(k.flag).Value.String()
		if k.flag == "temporal-address" {
			if err := checkTemporalAddress(k.key+" of "+where, v); err != nil {
				return err
			}
			continue
		}
		if err := readfile.Check(v, temporalworker.MaxTLSFileBytes); err != nil {
			return usagef("%s of %s: %s: name the PEM file, or give --%s", k.key, where, fileError(v, err), k.flag)
		}
	}
	return nil
}

// applyProfileData takes what a profile holds and no flag has: PEM data
// instead of paths (each only where no layer gave the path), TLS turned
// off explicitly, gRPC headers and the :authority.
func (t *temporalFlags) applyProfileData(p envconfig.ClientConfigProfile, o map[string]origin) {
	if tl := p.TLS; tl != nil {
		if o["temporal-tls-cert-path"].layer == fromDefault && o["temporal-tls-key-path"].layer == fromDefault {
			t.cfg.CertPEM, t.cfg.KeyPEM = tl.ClientCertData, tl.ClientKeyData
		}
		if o["temporal-tls-ca-path"].layer == fromDefault {
			t.cfg.CAPEM = tl.ServerCACertData
		}
		t.cfg.NoTLS = tl.Disabled && o["temporal-tls"].layer == fromDefault
	}
	t.cfg.Headers, t.cfg.Authority = p.GRPCMeta, p.Authority
}

// fileError is err, readfile's for file, as "FILE: why": readfile's own
// errors start with the path, an *os.PathError's is said here.
func fileError(file string, err error) string {
	var pathErr *os.PathError
	if errors.As(err, &pathErr) {
		return file + ": " + pathErr.Err.Error()
	}
	return err.Error()
}

// shown is how a message names the setting of o: as the user gave it
// (TEMPORAL_PROFILE, --temporal-profile, a key of the config file), or
// flag if it was not given.
func (o origin) shown(flag string) string {
	if o.name == "" {
		return flag
	}
	return o.name
}

// profileFileError says what is wrong with the profiles file without
// quoting it: TOML's messages may hold part of a value (an API key).
func profileFileError(file string, err error) error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("temporal CLI profiles %s: not valid TOML at line %d (after key %q)", file, pe.Position.Line, pe.LastKey)
	}
	var pathErr *os.PathError
	if errors.As(err, &pathErr) {
		return fmt.Errorf("temporal CLI profiles %s: %w", file, pathErr.Err)
	}
	return fmt.Errorf("temporal CLI profiles %s: not a profiles file (a [profile.NAME] table of address, namespace, api_key, tls…)", file)
}

// profileNames lists the profiles of conf, for a message.
func profileNames(conf envconfig.ClientConfig) string {
	var names []string
	for n := range conf.Profiles {
		names = append(names, n)
	}
	if len(names) == 0 {
		return "none"
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}
