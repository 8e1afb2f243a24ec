package temporalworker

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
)

// ClientConfig is how a worker or the schedule command reaches the
// Temporal frontend: the temporal CLI's client options.
type ClientConfig struct {
	// Address is the frontend's host:port. Default localhost:7233.
	Address string
	// Namespace is the Temporal namespace of the workflow. Default
	// "default".
	Namespace string
	// APIKey authenticates to the frontend; it turns TLS on unless TLS
	// is explicitly off.
	APIKey string
	// TLS turns TLS on (implied by the other TLS fields and APIKey).
	TLS bool
	// CertFile and KeyFile are a client certificate for mutual TLS;
	// CAFile the CA the server's certificate must be signed by (default
	// the system's); ServerName the name it must hold (default the host).
	CertFile, KeyFile, CAFile, ServerName string
	// DisableHostVerification checks the server's certificate against the
	// CA but not its name.
	DisableHostVerification bool
}

// DefaultAddress and DefaultNamespace are the temporal CLI's defaults.
const (
	DefaultAddress   = "localhost:7233"
	DefaultNamespace = "default"
	// DefaultTaskQueue is the worker's task queue.
	DefaultTaskQueue = "tqscavenger"
)

// Options returns the SDK client options of c, its files read.
func (c ClientConfig) Options(logger *slog.Logger) (client.Options, error) {
	o := client.Options{HostPort: c.Address, Namespace: c.Namespace}
	if o.HostPort == "" {
		o.HostPort = DefaultAddress
	}
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if logger != nil {
		o.Logger = log.NewStructuredLogger(logger)
	}
	if c.APIKey != "" {
		o.Credentials = client.NewAPIKeyStaticCredentials(c.APIKey)
	}
	useTLS := c.TLS || c.APIKey != "" || c.CertFile != "" || c.KeyFile != "" || c.CAFile != "" || c.ServerName != "" || c.DisableHostVerification
	if !useTLS {
		return o, nil
	}
	t := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.ServerName, InsecureSkipVerify: c.DisableHostVerification}
	if (c.CertFile == "") != (c.KeyFile == "") {
		return o, fmt.Errorf("temporal TLS: a client certificate needs its key, and a key its certificate")
	}
	if c.CertFile != "" {
		pair, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return o, fmt.Errorf("temporal TLS client certificate: %w", err)
		}
		t.Certificates = []tls.Certificate{pair}
	}
	var pool *x509.CertPool
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return o, fmt.Errorf("temporal TLS CA: %w", err)
		}
		pool = x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return o, fmt.Errorf("temporal TLS CA %s: no PEM certificate in it", c.CAFile)
		}
		t.RootCAs = pool
	}
	if c.DisableHostVerification {
		// Verify the chain against the CA, not the name: what the
		// temporal CLI's --tls-disable-host-verification does.
		t.VerifyPeerCertificate = verifyChainOnly(pool)
	}
	o.ConnectionOptions.TLS = t
	return o, nil
}

// verifyChainOnly checks a server's certificate chain against roots (nil:
// the system's) without checking its name.
func verifyChainOnly(roots *x509.CertPool) func([][]byte, [][]*x509.Certificate) error {
	return func(raw [][]byte, _ [][]*x509.Certificate) error {
		if len(raw) == 0 {
			return fmt.Errorf("temporal TLS: the server sent no certificate")
		}
		certs := make([]*x509.Certificate, len(raw))
		for i, b := range raw {
			c, err := x509.ParseCertificate(b)
			if err != nil {
				return fmt.Errorf("temporal TLS: server certificate: %w", err)
			}
			certs[i] = c
		}
		inter := x509.NewCertPool()
		for _, c := range certs[1:] {
			inter.AddCert(c)
		}
		_, err := certs[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
		return err
	}
}
