package testdb

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Certs are the certificates and keys of the TLS tests, made by the test
// itself, as PEM files in Dir.
type Certs struct {
	Dir string

	// CA signs the servers' certificate and the client's; OtherCA signs
	// only Stranger.
	CA, OtherCA string

	// ServerCert and ServerKey are the servers' certificate, for the
	// names localhost and 127.0.0.1, signed by CA.
	ServerCert, ServerKey string

	// ClientCert and ClientKey are a client certificate for the user
	// MTLSUser (its common name), signed by CA.
	ClientCert, ClientKey string

	// StrangerCert and StrangerKey are a client certificate for MTLSUser
	// signed by OtherCA, which the servers do not trust.
	StrangerCert, StrangerKey string
}

// MTLSUser is the user of the TLS servers that logs in with a client
// certificate only.
const MTLSUser = "tqs_mtls"

// NewCerts makes the certificates of the TLS tests in dir.
func NewCerts(dir string) (*Certs, error) {
	c := &Certs{Dir: dir}
	now := time.Now()
	ca, caKey, err := newCert(dir, "ca", &x509.Certificate{
		Subject:               pkix.Name{CommonName: "tqscavenger test CA"},
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(30 * 24 * time.Hour),
	}, nil, nil)
	if err != nil {
		return nil, err
	}
	other, otherKey, err := newCert(dir, "other-ca", &x509.Certificate{
		Subject:               pkix.Name{CommonName: "another CA"},
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(30 * 24 * time.Hour),
	}, nil, nil)
	if err != nil {
		return nil, err
	}
	leaf := func(name, cn string, usage x509.ExtKeyUsage, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) error {
		tmpl := &x509.Certificate{
			Subject:     pkix.Name{CommonName: cn},
			KeyUsage:    x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{usage},
			NotBefore:   now.Add(-time.Hour),
			NotAfter:    now.Add(30 * 24 * time.Hour),
		}
		if usage == x509.ExtKeyUsageServerAuth {
			tmpl.DNSNames = []string{"localhost"}
			tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
		}
		_, _, err := newCert(dir, name, tmpl, parent, parentKey)
		return err
	}
	for _, l := range []struct {
		name, cn      string
		usage         x509.ExtKeyUsage
		parent        *x509.Certificate
		parentKey     *ecdsa.PrivateKey
		cert, keyFile *string
	}{
		{"server", "localhost", x509.ExtKeyUsageServerAuth, ca, caKey, &c.ServerCert, &c.ServerKey},
		{"client", MTLSUser, x509.ExtKeyUsageClientAuth, ca, caKey, &c.ClientCert, &c.ClientKey},
		{"stranger", MTLSUser, x509.ExtKeyUsageClientAuth, other, otherKey, &c.StrangerCert, &c.StrangerKey},
	} {
		if err := leaf(l.name, l.cn, l.usage, l.parent, l.parentKey); err != nil {
			return nil, err
		}
		*l.cert, *l.keyFile = filepath.Join(dir, l.name+".crt"), filepath.Join(dir, l.name+".key")
	}
	c.CA, c.OtherCA = filepath.Join(dir, "ca.crt"), filepath.Join(dir, "other-ca.crt")
	return c, nil
}

var serial int64

// newCert makes a certificate from tmpl, signed by parent (self-signed
// if nil), and writes it and its key to dir as NAME.crt and NAME.key.
func newCert(dir, name string, tmpl, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial++
	tmpl.SerialNumber = big.NewInt(time.Now().UnixNano() + serial)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, nil, fmt.Errorf("certificate %s: %w", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, err
	}
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, name+".crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, name+".key"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		return nil, nil, err
	}
	return cert, key, nil
}
