//go:build !tqs_notemporal

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// twoProfiles is a temporal CLI profiles file as `temporal config set`
// writes it, with two profiles.
const twoProfiles = `[profile.default]
address = "localhost:7233"
namespace = "dev"

[profile.prod]
address = "prod.tmprl.example:7233"
namespace = "ops"
api_key = "sekret-api-key-123"

[profile.prod.tls]
server_name = "fe.tmprl.example"

[profile.prod.grpc_meta]
x-team = "infra"
`

// TestTemporalProfiles: the temporal CLI's profiles fill the --temporal-*
// settings that no other layer sets: the default profile of the file
// TEMPORAL_CONFIG_FILE names, another one by --temporal-profile or
// TEMPORAL_PROFILE; a flag, TEMPORAL_* and the --config file each win
// over it. A profile or file named and not there, and a file that is not
// TOML, are usage errors that quote no secret; with no file at the
// default path nothing is read. The API key a profile gives is masked
// in the settings shown.
func TestTemporalProfiles(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "temporal.toml")
	if err := os.WriteFile(file, []byte(twoProfiles), 0o600); err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(dir, "broken.toml")
	if err := os.WriteFile(broken, []byte("[profile.prod]\naddress = \"a:1\"\napi_key = \"sekret-api-key-123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	from := "profile prod in " + file
	for _, tc := range []struct {
		name    string
		env     map[string]string
		yaml    string
		args    []string
		addr    string // want --temporal-address
		ns      string
		origins map[string]string // flag: where from
		wantErr string
	}{
		{"default profile", map[string]string{"TEMPORAL_CONFIG_FILE": file}, "", nil, "localhost:7233", "dev",
			map[string]string{"temporal-namespace": "profile default in " + file}, ""},
		{"--temporal-profile", nil, "", []string{"--temporal-config-file", file, "--temporal-profile", "prod"}, "prod.tmprl.example:7233", "ops",
			map[string]string{"temporal-address": from, "temporal-api-key": from, "temporal-tls-server-name": from}, ""},
		{"TEMPORAL_PROFILE", map[string]string{"TEMPORAL_CONFIG_FILE": file, "TEMPORAL_PROFILE": "prod"}, "", nil, "prod.tmprl.example:7233", "ops",
			map[string]string{"temporal-address": from}, ""},
		{"TEMPORAL_* and --config win", map[string]string{"TEMPORAL_CONFIG_FILE": file, "TEMPORAL_PROFILE": "prod", "TEMPORAL_ADDRESS": "env:7233"},
			"temporal-namespace: fromyaml\n", nil, "env:7233", "fromyaml",
			map[string]string{"temporal-address": "TEMPORAL_ADDRESS", "temporal-api-key": from}, ""},
		{"a flag wins", map[string]string{"TEMPORAL_CONFIG_FILE": file, "TEMPORAL_PROFILE": "prod"}, "", []string{"--temporal-namespace", "flagged"},
			"prod.tmprl.example:7233", "flagged", map[string]string{"temporal-namespace": "--temporal-namespace"}, ""},
		{"no file at the default path", nil, "", nil, "localhost:7233", "default", map[string]string{"temporal-address": ""}, ""},
		{"unknown profile", map[string]string{"TEMPORAL_CONFIG_FILE": file}, "", []string{"--temporal-profile", "staging"}, "", "", nil, "default, prod"},
		{"unknown profile by variable", map[string]string{"TEMPORAL_CONFIG_FILE": file, "TEMPORAL_PROFILE": "staging"}, "", nil, "", "", nil, "TEMPORAL_PROFILE"},
		{"missing file named", map[string]string{"TEMPORAL_CONFIG_FILE": filepath.Join(dir, "nope.toml")}, "", nil, "", "", nil, "TEMPORAL_CONFIG_FILE"},
		{"not TOML", map[string]string{"TEMPORAL_CONFIG_FILE": broken, "TEMPORAL_PROFILE": "prod"}, "", nil, "", "", nil, "line 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			clearTemporalEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			fs := newFlagSet("worker")
			var tf temporalFlags
			tf.register(fs)
			configFlag(fs)
			args := tc.args
			if tc.yaml != "" {
				args = append(args, "--config", writeFile(t, tc.yaml))
			}
			if err := fs.Parse(args); err != nil {
				t.Fatal(err)
			}
			o, err := layer(fs)
			if err == nil {
				err = tf.check(o)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "sekret") || exitStatus(err) != ExitUsage {
					t.Fatalf("error %v, want a usage error naming %q and no secret", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := tf.cfg.Address
			if got == "" {
				got = "localhost:7233"
			}
			if got != tc.addr || tf.cfg.Namespace != tc.ns {
				t.Errorf("address %q namespace %q, want %q %q", got, tf.cfg.Namespace, tc.addr, tc.ns)
			}
			for flag, want := range tc.origins {
				if o[flag].name != want {
					t.Errorf("--%s from %q, want %q", flag, o[flag].name, want)
				}
			}
			if o["temporal-api-key"].layer == fromProfile {
				if tf.cfg.APIKey != "sekret-api-key-123" || !tf.cfg.TLS || tf.cfg.Headers["x-team"] != "infra" {
					t.Errorf("prod profile: api key set %t, TLS %t, headers %v", tf.cfg.APIKey != "", tf.cfg.TLS, tf.cfg.Headers)
				}
				for _, s := range effectiveSettings(fs, o) {
					if strings.Contains(s.Value, "sekret") {
						t.Errorf("setting %s shows the profile's API key", s.Name)
					}
				}
			}
		})
	}
}
