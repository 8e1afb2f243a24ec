package temporalworker

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"

	"github.com/tqscavenger/tqscavenger/internal/readfile"
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
	// CertPEM, KeyPEM and CAPEM are the same as PEM data (a temporal CLI
	// profile's *_data), used where the file fields are empty.
	CertPEM, KeyPEM, CAPEM []byte
	// NoTLS turns TLS off even with an APIKey (a profile's tls.disabled).
	NoTLS bool
	// Headers are gRPC metadata sent with every call (a profile's
	// grpc_meta); Authority the :authority header (default the address).
	Headers   map[string]string
	Authority string
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
	if len(c.Headers) > 0 {
		o.HeadersProvider = fixedHeaders(c.Headers)
	}
	o.ConnectionOptions.Authority = c.Authority
	useTLS := c.TLS || c.APIKey != "" || c.CertFile != "" || c.KeyFile != "" || c.CAFile != "" || c.ServerName != "" || c.DisableHostVerification ||
		len(c.CertPEM) > 0 || len(c.KeyPEM) > 0 || len(c.CAPEM) > 0
	if c.NoTLS && !c.TLS {
		o.ConnectionOptions.TLSDisabled = true
		return o, nil
	}
	if !useTLS {
		return o, nil
	}
	t := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.ServerName, InsecureSkipVerify: c.DisableHostVerification}
	cert, err := c.clientCert()
	if err != nil {
		return o, err
	}
	if cert != nil {
		t.Certificates = []tls.Certificate{*cert}
	}
	pool, err := c.caPool()
	if err != nil {
		return o, err
	}
	t.RootCAs = pool
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

// clientCert is the client certificate of mutual TLS, from the files or
// the PEM data, or nil for none. Its errors never quote the key.
func (c ClientConfig) clientCert() (*tls.Certificate, error) {
	switch {
	case (c.CertFile == "") != (c.KeyFile == ""):
		return nil, fmt.Errorf("temporal TLS: a client certificate needs its key, and a key its certificate")
	case c.CertFile != "":
		cert, err := readTLSFile("client certificate", c.CertFile)
		if err != nil {
			return nil, err
		}
		key, err := readTLSFile("client key", c.KeyFile)
		if err != nil {
			return nil, err
		}
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			// crypto/tls's errors name what is missing, never a byte of
			// the key.
			return nil, fmt.Errorf("temporal TLS client certificate %s and key %s: %w", c.CertFile, c.KeyFile, err)
		}
		return &pair, nil
	case (len(c.CertPEM) == 0) != (len(c.KeyPEM) == 0):
		return nil, fmt.Errorf("temporal TLS: a client certificate's data needs its key's, and a key's its certificate's")
	case len(c.CertPEM) > 0:
		pair, err := tls.X509KeyPair(c.CertPEM, c.KeyPEM)
		if err != nil {
			return nil, fmt.Errorf("temporal TLS client certificate data: not a PEM certificate and its key")
		}
		return &pair, nil
	}
	return nil, nil
}

// caPool is the pool of CAs the frontend's certificate must be signed by,
// from the file or the PEM data; nil: the system's.
func (c ClientConfig) caPool() (*x509.CertPool, error) {
	pem, from := c.CAPEM, "data"
	if c.CAFile != "" {
		b, err := readTLSFile("CA", c.CAFile)
		if err != nil {
			return nil, err
		}
		pem, from = b, c.CAFile
	}
	if len(pem) == 0 {
		return nil, nil
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("temporal TLS CA %s: no PEM certificate in it", from)
	}
	return pool, nil
}

// MaxTLSFileBytes bounds a Temporal TLS file (a CA bundle, a client
// certificate or key), as sqlstore.MaxTLSFileBytes bounds the database's:
// four times the system's whole CA bundle, so that a file named by
// mistake (a disk image, /dev/zero) is refused, not read into memory.
const MaxTLSFileBytes = 1 << 20

// readTLSFile reads the TLS file what of path with readfile's policy: a
// regular file (a device is read without end, a FIFO's open blocks and
// heeds no signal) of at most MaxTLSFileBytes. Its errors name the path,
// never the content, which may be a private key.
func readTLSFile(what, path string) ([]byte, error) {
	b, err := readfile.Regular(path, MaxTLSFileBytes)
	if err != nil {
		return nil, fmt.Errorf("temporal TLS %s: %w", what, err)
	}
	return b, nil
}

// fixedHeaders sends the same gRPC metadata with every call.
type fixedHeaders map[string]string

func (h fixedHeaders) GetHeaders(context.Context) (map[string]string, error) { return h, nil }
