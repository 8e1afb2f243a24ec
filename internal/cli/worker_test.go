//go:build !tqs_notemporal

package cli

import (
	"flag"
	"io"
	"strings"
	"testing"
)

// TestTemporalFlagsFromEnv: the temporal CLI's variables fill the
// --temporal-* flags that nothing else set, the newer name before the
// older, and two that disagree are an error that shows no secret.
func TestTemporalFlagsFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		args    []string
		want    func(tf temporalFlags) string // "" when right
		wantErr string
	}{
		{"address and namespace", map[string]string{"TEMPORAL_ADDRESS": "fe:7233", "TEMPORAL_NAMESPACE": "ops"}, nil,
			func(tf temporalFlags) string {
				if tf.cfg.Address != "fe:7233" || tf.cfg.Namespace != "ops" {
					return tf.cfg.Address + " " + tf.cfg.Namespace
				}
				return ""
			}, ""},
		{"a flag wins", map[string]string{"TEMPORAL_ADDRESS": "fe:7233"}, []string{"--temporal-address", "other:7233"},
			func(tf temporalFlags) string {
				if tf.cfg.Address != "other:7233" {
					return tf.cfg.Address
				}
				return ""
			}, ""},
		{"older names", map[string]string{"TEMPORAL_TLS_CERT": "/c.pem", "TEMPORAL_TLS_KEY": "/k.pem", "TEMPORAL_TLS_CA": "/ca.pem", "TEMPORAL_TLS_DISABLE_HOST_VERIFICATION": "true"}, nil,
			func(tf temporalFlags) string {
				if tf.cfg.CertFile != "/c.pem" || tf.cfg.KeyFile != "/k.pem" || tf.cfg.CAFile != "/ca.pem" || !tf.cfg.DisableHostVerification {
					return "tls not from the environment"
				}
				return ""
			}, ""},
		{"names that disagree", map[string]string{"TEMPORAL_TLS_CLIENT_CERT_PATH": "/a.pem", "TEMPORAL_TLS_CERT": "/b.pem"}, nil, nil, "both set"},
		{"bad boolean", map[string]string{"TEMPORAL_TLS": "maybe", "TEMPORAL_API_KEY": "s3cret"}, nil, nil, "TEMPORAL_TLS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			var tf temporalFlags
			tf.register(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			err := tf.fromEnv(fs)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "s3cret") {
					t.Fatalf("error %v, want one naming %q and no secret", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if msg := tc.want(tf); msg != "" {
				t.Errorf("got %s", msg)
			}
			if tc.env["TEMPORAL_API_KEY"] == "" && tf.cfg.APIKey != "" {
				t.Error("an API key from nowhere")
			}
		})
	}
}
