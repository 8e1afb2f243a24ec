// This file owns TLS: a store's TLS settings as data (Options.TLS), the
// tls.Config they make for each engine's driver, and what a failed
// handshake means.

package sqlstore

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql/driver"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TLS is how a store connects to PostgreSQL or MySQL over TLS, given as
// data instead of DSN parameters (see Options.TLS). A certificate or key
// is given either as a PEM file or as data: base64 of the PEM, the form
// of the caData, certData and keyData of Temporal's TLS settings (PEM
// text itself is accepted too), not both.
type TLS struct {
	// CAFile or CAData holds the CA certificates (PEM) the server's
	// certificate must be signed by. Neither means the system's roots.
	CAFile, CAData string

	// CertFile and KeyFile, or CertData and KeyData, are the client's
	// certificate and private key, for a server that asks for one
	// (mutual TLS). The certificate is sent whenever the server asks,
	// whichever CAs the server says it accepts.
	CertFile, CertData string
	KeyFile, KeyData   string

	// ServerName is the name the server's certificate must hold, and the
	// name sent to the server (SNI). Empty means the host connected to.
	ServerName string

	// Verify is what is checked of the server's certificate. The zero
	// value checks everything.
	Verify TLSVerify
}

// TLSVerify says what is checked of a server's certificate.
type TLSVerify int

const (
	// VerifyFull checks that the server's certificate is signed by the CA
	// and holds the server's name (TLS.ServerName, or the host): libpq's
	// sslmode=verify-full.
	VerifyFull TLSVerify = iota
	// VerifyCA checks that the server's certificate is signed by the CA,
	// whatever name it holds: libpq's sslmode=verify-ca.
	VerifyCA
	// VerifyNone checks nothing: the connection is encrypted, but any
	// server that answers is believed (libpq's sslmode=require without a
	// root certificate, MySQL's tls=skip-verify).
	VerifyNone
)

// String names v as the settings that ask for it.
func (v TLSVerify) String() string {
	switch v {
	case VerifyFull:
		return "verify-full"
	case VerifyCA:
		return "verify-ca"
	case VerifyNone:
		return "none"
	}
	return fmt.Sprintf("TLSVerify(%d)", int(v))
}

// ErrTLS is wrapped by the errors of Open, OpenDSN and Connector when
// TLS cannot work as asked: TLS settings that cannot be used (a file that
// cannot be read, a key that does not match its certificate, TLS on
// SQLite, TLS both in Options.TLS and in the DSN), or, with
// ErrUnavailable and ErrRefused and in a *TLSError, a handshake that
// failed on the certificates. Retrying does not help either.
var ErrTLS = errors.New("TLS")

// TLSReason says why a TLS handshake failed.
type TLSReason string

// The reasons of a TLSError.
const (
	TLSUnknownAuthority   TLSReason = "the server's certificate is not signed by a trusted CA"
	TLSWrongName          TLSReason = "the server's certificate is not valid for the server's name"
	TLSBadCertificate     TLSReason = "the server's certificate is not valid"
	TLSClientCertRequired TLSReason = "the server requires a client certificate, and none was given"
	TLSClientCertRefused  TLSReason = "the server refused the client certificate"
	TLSNotOffered         TLSReason = "the server does not offer TLS"
)

// TLSError is a first connection that failed on TLS: the server's
// certificate did not verify, the server refused the client's (or wanted
// one), or the server does not speak TLS. Open's error wraps it, with
// ErrUnavailable and ErrRefused; it wraps ErrTLS and the driver's error.
type TLSError struct {
	Reason TLSReason
	detail string // the driver's error, one line, without passwords
	err    error
}

func (e *TLSError) Error() string {
	return "TLS: " + string(e.Reason) + " (" + e.detail + ")"
}

func (e *TLSError) Unwrap() []error { return []error{ErrTLS, e.err} }

// tlsFailure returns the TLSError that err, the failure of a first
// connection, is, or nil if it is none.
func tlsFailure(err error) *TLSError {
	var (
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		pe       *pgconn.PgError
		op       *net.OpError
	)
	reason := TLSReason("")
	switch {
	case errors.As(err, &unknown):
		reason = TLSUnknownAuthority
	case errors.As(err, &hostname):
		reason = TLSWrongName
	case errors.As(err, &invalid):
		reason = TLSBadCertificate
	case errors.As(err, &pe) && pe.Code == "28000" && strings.Contains(pe.Message, "requires a valid client certificate"):
		reason = TLSClientCertRequired
	case errors.As(err, &pe) && pe.Code == "28000" && strings.HasPrefix(pe.Message, "certificate "):
		// "certificate authentication failed for user", "certificate
		// validation (clientcert=verify-full) failed for user": the
		// certificate is not the user's.
		reason = TLSClientCertRefused
	case errors.As(err, &op) && op.Op == "remote error":
		// An alert from the server: it refused the client's certificate
		// (bad certificate, unknown certificate authority, expired), or
		// wanted one (certificate required).
		if strings.Contains(op.Err.Error(), "certificate required") {
			reason = TLSClientCertRequired
		} else {
			reason = TLSClientCertRefused
		}
	case errors.Is(err, errClosedAfterCert):
		reason = TLSClientCertRefused
	case errors.Is(err, mysql.ErrNoTLS), strings.Contains(err.Error(), "server refused TLS connection"):
		reason = TLSNotOffered
	default:
		return nil
	}
	return &TLSError{Reason: reason, err: err}
}

// tlsConfig is TLS with its files read and decoded, ready to make the
// tls.Config of a connection to a host.
type tlsConfig struct {
	t     TLS
	roots *x509.CertPool // nil: the system's
	cert  *tls.Certificate
	// sentCert is set when a server asked for the client certificate and
	// got it (see tlsConnector).
	sentCert atomic.Bool
}

// load reads and checks the certificates and key of t.
func (t *TLS) load() (*tlsConfig, error) {
	c := &tlsConfig{t: *t}
	ca, err := pemOf("CA", t.CAFile, t.CAData)
	if err != nil {
		return nil, err
	}
	if ca != nil {
		c.roots = x509.NewCertPool()
		if !c.roots.AppendCertsFromPEM(ca) {
			return nil, fmt.Errorf("%w: the CA %s holds no PEM certificate", ErrTLS, source(t.CAFile))
		}
	}
	cert, err := pemOf("client certificate", t.CertFile, t.CertData)
	if err != nil {
		return nil, err
	}
	key, err := pemOf("client key", t.KeyFile, t.KeyData)
	if err != nil {
		return nil, err
	}
	switch {
	case cert != nil && key != nil:
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("%w: client certificate %s and key %s: %v", ErrTLS, source(t.CertFile), source(t.KeyFile), err)
		}
		c.cert = &pair
	case cert != nil:
		return nil, fmt.Errorf("%w: a client certificate without its key", ErrTLS)
	case key != nil:
		return nil, fmt.Errorf("%w: a client key without its certificate", ErrTLS)
	}
	switch t.Verify {
	case VerifyFull, VerifyCA, VerifyNone:
	default:
		return nil, fmt.Errorf("%w: unknown verification %v", ErrTLS, t.Verify)
	}
	return c, nil
}

// pemOf returns the PEM of the file or the data (base64 of the PEM, or
// the PEM itself), nil for neither.
func pemOf(what, file, data string) ([]byte, error) {
	switch {
	case file != "" && data != "":
		return nil, fmt.Errorf("%w: the %s given both as a file and as data: give one", ErrTLS, what)
	case file != "":
		return readTLSFile(what, file)
	case data != "":
		if strings.HasPrefix(strings.TrimSpace(data), "-----BEGIN") {
			return []byte(data), nil
		}
		b, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(data), ""))
		if err != nil {
			// Never the data itself: it may be a private key.
			return nil, fmt.Errorf("%w: the %s data is neither base64 nor PEM", ErrTLS, what)
		}
		return b, nil
	}
	return nil, nil
}

// MaxTLSFileBytes bounds a TLS file (a CA bundle, a client certificate or
// key): four times the system's whole CA bundle (about 220 KB), so that a
// file named by mistake (a disk image, /dev/zero) is refused, not read
// into memory.
const MaxTLSFileBytes = 1 << 20

// readTLSFile reads the TLS file of path: a regular file (not a device,
// FIFO or directory, which can be read without end or block) of at most
// MaxTLSFileBytes. Its errors name the path, never the content, which may
// be a private key.
func readTLSFile(what, path string) ([]byte, error) {
	f, err := openTLSFile(what, path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxTLSFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: read the %s %s: %v", ErrTLS, what, path, err)
	}
	if len(b) > MaxTLSFileBytes {
		return nil, fmt.Errorf("%w: the %s %s is larger than %d bytes: name the PEM file", ErrTLS, what, path, MaxTLSFileBytes)
	}
	return b, nil
}

// openTLSFile opens the TLS file of path if it is a regular file of at
// most MaxTLSFileBytes (see readTLSFile).
func openTLSFile(what, path string) (*os.File, error) {
	// Checked before the open too, which would block on a FIFO.
	if err := tlsFileOK(what, path, os.Stat); err != nil {
		return nil, err
	}
	// Opened non-blocking: a FIFO swapped in after the check above is
	// then refused below, not waited on (an open of a FIFO without a
	// writer blocks, deaf to SIGTERM).
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: read the %s: %v", ErrTLS, what, err)
	}
	if err := tlsFileOK(what, path, func(string) (os.FileInfo, error) { return f.Stat() }); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// tlsFileOK refuses a TLS file that stat says is no regular file or is
// larger than MaxTLSFileBytes.
func tlsFileOK(what, path string, stat func(string) (os.FileInfo, error)) error {
	fi, err := stat(path)
	switch {
	case err != nil:
		return fmt.Errorf("%w: read the %s: %v", ErrTLS, what, err)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%w: the %s %s is not a regular file (%s): name the PEM file", ErrTLS, what, path, fi.Mode().Type())
	case fi.Size() > MaxTLSFileBytes:
		return fmt.Errorf("%w: the %s %s is %d bytes, more than the %d allowed: name the PEM file", ErrTLS, what, path, fi.Size(), MaxTLSFileBytes)
	}
	return nil
}

// checkPostgresTLSFiles applies tlsFileOK to the files that a PostgreSQL
// DSN's sslrootcert, sslcert and sslkey name, before pgx reads them
// whole.
func checkPostgresTLSFiles(d DSN) error {
	q := d.URL.Query()
	for _, p := range []struct{ param, what string }{{"sslrootcert", "CA"}, {"sslcert", "client certificate"}, {"sslkey", "client key"}} {
		path := q.Get(p.param)
		if path == "" || (p.param == "sslrootcert" && path == "system") {
			continue
		}
		if err := tlsFileOK(p.what+" ("+p.param+")", path, os.Stat); err != nil {
			return err
		}
	}
	return nil
}

// source names where a certificate came from, for errors.
func source(file string) string {
	if file != "" {
		return file
	}
	return "(data)"
}

// config returns the tls.Config of a connection to host.
func (c *tlsConfig) config(host string) *tls.Config {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: c.roots, ServerName: c.t.ServerName}
	if cfg.ServerName == "" {
		cfg.ServerName = host
	}
	switch c.t.Verify {
	case VerifyCA:
		roots := c.roots
		cfg.InsecureSkipVerify = true // the name; the chain is checked below
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("tls: the server sent no certificate")
			}
			inter := x509.NewCertPool()
			for _, ic := range cs.PeerCertificates[1:] {
				inter.AddCert(ic)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
			if err != nil {
				return &tls.CertificateVerificationError{UnverifiedCertificates: cs.PeerCertificates, Err: err}
			}
			return nil
		}
	case VerifyNone:
		cfg.InsecureSkipVerify = true
	}
	if c.cert != nil {
		// Certificates would send it only if its issuer is among the CAs
		// the server lists; a server that lists none, or others, should
		// see it and say what is wrong with it.
		cert := c.cert
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			c.sentCert.Store(true)
			return cert, nil
		}
	}
	return cfg
}

// postgresTLSParams are the DSN parameters that set up TLS on PostgreSQL.
var postgresTLSParams = []string{"sslmode", "sslrootcert", "sslcert", "sslkey", "sslpassword", "sslsni", "sslnegotiation"}

// usePostgresTLS makes every connection attempt of cfg, parsed from d,
// use t: one attempt per host of the DSN, each over TLS, none in plain
// text (pgx's default sslmode=prefer would fall back to one). Wrap the
// connector made from cfg with the returned function.
func usePostgresTLS(cfg *pgx.ConnConfig, d DSN, t *TLS) (wrap func(driver.Connector) driver.Connector, _ error) {
	q := d.URL.Query()
	for _, p := range postgresTLSParams {
		if q.Has(p) {
			return nil, fmt.Errorf("%w: %s sets TLS with %s and TLS settings are given too: keep one", ErrTLS, d, p)
		}
	}
	c, err := t.load()
	if err != nil {
		return nil, err
	}
	type hostPort struct {
		host string
		port uint16
	}
	hosts := []hostPort{{cfg.Host, cfg.Port}}
	for _, fb := range cfg.Fallbacks {
		if hp := (hostPort{fb.Host, fb.Port}); hp != hosts[len(hosts)-1] {
			hosts = append(hosts, hp)
		}
	}
	cfg.Fallbacks = nil
	for i, hp := range hosts {
		if strings.HasPrefix(hp.host, "/") {
			return nil, fmt.Errorf("%w: %s connects through a Unix socket, which has no TLS", ErrTLS, d)
		}
		if i == 0 {
			cfg.Host, cfg.Port, cfg.TLSConfig = hp.host, hp.port, c.config(hp.host)
			continue
		}
		cfg.Fallbacks = append(cfg.Fallbacks, &pgconn.FallbackConfig{Host: hp.host, Port: hp.port, TLSConfig: c.config(hp.host)})
	}
	return func(conn driver.Connector) driver.Connector { return &tlsConnector{Connector: conn, tc: c} }, nil
}

// useMySQLTLS sets up c, the configuration of d, to use t. Wrap the
// connector made from c with the returned function.
func useMySQLTLS(c *mysql.Config, d DSN, t *TLS) (wrap func(driver.Connector) driver.Connector, _ error) {
	if d.URL.Query().Has("tls") {
		return nil, fmt.Errorf("%w: %s sets TLS with tls= and TLS settings are given too: keep one", ErrTLS, d)
	}
	if c.Net != "tcp" {
		return nil, fmt.Errorf("%w: %s connects through a Unix socket, which has no TLS", ErrTLS, d)
	}
	tc, err := t.load()
	if err != nil {
		return nil, err
	}
	host, _, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadDSN, d, err)
	}
	c.TLS = tc.config(host)
	c.TLSConfig = ""
	c.AllowFallbackToPlaintext = false
	log := &mysqlLog{next: c.Logger}
	c.Logger = log
	return func(conn driver.Connector) driver.Connector { return &tlsConnector{Connector: conn, tc: tc, log: log} }, nil
}

// tlsConnector wraps a connector whose connections use tc, and tells
// why a connection broke while it was set up. With TLS 1.3 the server
// checks the client's certificate after the client's side of the
// handshake is done: its refusal (an alert, then the connection closed)
// arrives when the client reads or writes next, and if the closing beats
// the alert, the driver sees only a connection reset or an EOF. The
// server asked for the certificate and got it, so that is the likely
// reason, and the error says so. MySQL's driver, besides, returns only
// ErrInvalidConn or driver.ErrBadConn for a connection that broke, and
// logs why.
type tlsConnector struct {
	driver.Connector
	tc  *tlsConfig
	log *mysqlLog // MySQL's; nil on PostgreSQL
}

// errClosedAfterCert is the reason a tlsConnector gives a connection
// closed once the server had the client certificate.
var errClosedAfterCert = errors.New("the server closed the connection once it had the client certificate")

func (c *tlsConnector) Connect(ctx context.Context) (driver.Conn, error) {
	c.tc.sentCert.Store(false)
	if c.log != nil {
		c.log.take()
	}
	conn, err := c.Connector.Connect(ctx)
	if err == nil {
		return conn, nil
	}
	if c.log != nil {
		if cause := c.log.take(); cause != nil && !errors.Is(err, cause) {
			err = &causedError{err: err, cause: cause}
		}
	}
	if tlsFailure(err) == nil && c.tc.sentCert.Load() && ctx.Err() == nil && closedConn(err) {
		err = &causedError{err: err, cause: errClosedAfterCert}
	}
	return nil, err
}

// closedConn reports whether err says the server closed the connection.
func closedConn(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// mysqlLog is a go-sql-driver/mysql Logger that keeps the last error the
// driver logged, and passes everything on to next.
type mysqlLog struct {
	next mysql.Logger
	mu   sync.Mutex
	last error
}

func (l *mysqlLog) Print(v ...any) {
	for _, x := range v {
		if err, ok := x.(error); ok {
			l.mu.Lock()
			l.last = err
			l.mu.Unlock()
		}
	}
	if l.next != nil {
		l.next.Print(v...)
	}
}

// take returns the last error logged, and forgets it.
func (l *mysqlLog) take() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	err := l.last
	l.last = nil
	return err
}

// causedError is err, with the cause the driver logged but did not
// return.
type causedError struct{ err, cause error }

func (e *causedError) Error() string   { return e.err.Error() + ": " + e.cause.Error() }
func (e *causedError) Unwrap() []error { return []error{e.err, e.cause} }

// tlsHint is what a refused MySQL login can mean when TLS is on without
// a client certificate: a user created with REQUIRE X509 (or SUBJECT,
// ISSUER) is refused like a wrong password.
func tlsHint(err error, t *TLS) string {
	if t == nil || t.CertFile != "" || t.CertData != "" {
		return ""
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.Number == 1045 {
		return " (or the user requires a client certificate, and none was given)"
	}
	return ""
}
