//go:build unix

package temporalworker

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/tqscavenger/tqscavenger/internal/readfile"
)

// TestClientFilesBounded: the TLS files a ClientConfig names are read
// with readfile's policy, whoever built the config (the command checks
// them first; this is the read itself): a FIFO is refused without its
// open blocking, a device or a file over MaxTLSFileBytes without being
// read whole.
func TestClientFilesBounded(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.pem")
	os.WriteFile(big, nil, 0o600)
	os.Truncate(big, MaxTLSFileBytes+1)
	small := filepath.Join(dir, "cert.pem")
	os.WriteFile(small, []byte("not PEM, never reached"), 0o600)
	for _, c := range []struct {
		name string
		cfg  ClientConfig
		want error
	}{
		{"CA fifo", ClientConfig{CAFile: fifo}, readfile.ErrNotRegular},
		{"CA device", ClientConfig{CAFile: "/dev/zero"}, readfile.ErrNotRegular},
		{"CA too large", ClientConfig{CAFile: big}, readfile.ErrTooLarge},
		{"cert fifo", ClientConfig{CertFile: fifo, KeyFile: big}, readfile.ErrNotRegular},
		{"cert too large", ClientConfig{CertFile: big, KeyFile: small}, readfile.ErrTooLarge},
		{"key device", ClientConfig{CertFile: small, KeyFile: "/dev/zero"}, readfile.ErrNotRegular},
		{"key fifo", ClientConfig{CertFile: small, KeyFile: fifo}, readfile.ErrNotRegular},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := c.cfg.Options(nil); !errors.Is(err, c.want) {
				t.Errorf("Options = %v, want %v", err, c.want)
			}
		})
	}
}
