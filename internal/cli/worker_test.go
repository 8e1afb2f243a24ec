//go:build !tqs_notemporal

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTemporalFlagsFromEnv: the temporal CLI's variables fill the
// --temporal-* flags in the environment layer: a flag and TQSCAVENGER_*
// win over them, they win over the config file, the newer name is read
// before the older, and two that disagree are an error that shows no
// secret.
func TestTemporalFlagsFromEnv(t *testing.T) {
	// The TLS files must exist: the flags' check reads them as regular
	// files of a bounded size before anything else.
	dir := t.TempDir()
	pem := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("-"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cert, key, ca := pem("c.pem"), pem("k.pem"), pem("ca.pem")
	for _, tc := range []struct {
		name    string
		env     map[string]string
		file    string
		args    []string
		want    func(tf temporalFlags) string // "" when right
		from    map[string]string             // flag: where its value came from
		wantErr string
	}{
		{"address and namespace", map[string]string{"TEMPORAL_ADDRESS": "fe:7233", "TEMPORAL_NAMESPACE": "ops"}, "", nil,
			func(tf temporalFlags) string {
				if tf.cfg.Address != "fe:7233" || tf.cfg.Namespace != "ops" {
					return tf.cfg.Address + " " + tf.cfg.Namespace
				}
				return ""
			}, map[string]string{"temporal-address": "TEMPORAL_ADDRESS", "temporal-namespace": "TEMPORAL_NAMESPACE"}, ""},
		{"a flag wins", map[string]string{"TEMPORAL_ADDRESS": "fe:7233"}, "", []string{"--temporal-address", "other:7233"},
			func(tf temporalFlags) string {
				if tf.cfg.Address != "other:7233" {
					return tf.cfg.Address
				}
				return ""
			}, map[string]string{"temporal-address": "--temporal-address"}, ""},
		{"TQSCAVENGER_* wins", map[string]string{"TEMPORAL_ADDRESS": "fe:7233", "TQSCAVENGER_TEMPORAL_ADDRESS": "tqs:7233"}, "", nil,
			func(tf temporalFlags) string {
				if tf.cfg.Address != "tqs:7233" {
					return tf.cfg.Address
				}
				return ""
			}, map[string]string{"temporal-address": "TQSCAVENGER_TEMPORAL_ADDRESS"}, ""},
		{"over the file", map[string]string{"TEMPORAL_ADDRESS": "fe:7233"}, "temporal-address: file:7233\ntemporal-namespace: fromfile\n", nil,
			func(tf temporalFlags) string {
				if tf.cfg.Address != "fe:7233" || tf.cfg.Namespace != "fromfile" {
					return tf.cfg.Address + " " + tf.cfg.Namespace
				}
				return ""
			}, map[string]string{"temporal-address": "TEMPORAL_ADDRESS"}, ""},
		{"older names", map[string]string{"TEMPORAL_TLS_CERT": cert, "TEMPORAL_TLS_KEY": key, "TEMPORAL_TLS_CA": ca, "TEMPORAL_TLS_DISABLE_HOST_VERIFICATION": "true"}, "", nil,
			func(tf temporalFlags) string {
				if tf.cfg.CertFile != cert || tf.cfg.KeyFile != key || tf.cfg.CAFile != ca || !tf.cfg.DisableHostVerification {
					return "tls not from the environment"
				}
				return ""
			}, map[string]string{"temporal-tls-cert-path": "TEMPORAL_TLS_CERT"}, ""},
		{"names that disagree", map[string]string{"TEMPORAL_TLS_CLIENT_CERT_PATH": "/a.pem", "TEMPORAL_TLS_CERT": "/b.pem"}, "", nil, nil, nil, "both set"},
		{"bad boolean", map[string]string{"TEMPORAL_TLS": "maybe", "TEMPORAL_API_KEY": "s3cret"}, "", nil, nil, nil, "TEMPORAL_TLS"},
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
			if tc.file != "" {
				args = append(args, "--config", writeFile(t, tc.file))
			}
			if err := fs.Parse(args); err != nil {
				t.Fatal(err)
			}
			o, err := layer(fs)
			if err == nil {
				err = tf.check(o)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "s3cret") || exitStatus(err) != ExitUsage {
					t.Fatalf("error %v, want a usage error naming %q and no secret", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if msg := tc.want(tf); msg != "" {
				t.Errorf("got %s", msg)
			}
			for flag, from := range tc.from {
				if o[flag].name != from {
					t.Errorf("--%s from %q, want %q", flag, o[flag].name, from)
				}
			}
			if tc.env["TEMPORAL_API_KEY"] == "" && tf.cfg.APIKey != "" {
				t.Error("an API key from nowhere")
			}
		})
	}
}
