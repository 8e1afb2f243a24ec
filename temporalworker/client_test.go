package temporalworker

import (
	"context"
	"os"
	"testing"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
)

// TestClientOptionsProfileData: what only a temporal CLI profile gives
// (PEM data instead of files, TLS turned off beside an API key, gRPC
// headers, :authority) reaches the SDK's client options.
func TestClientOptionsProfileData(t *testing.T) {
	certs, err := testdb.NewCerts(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	read := func(path string) []byte {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	o, err := ClientConfig{CertPEM: read(certs.ClientCert), KeyPEM: read(certs.ClientKey), CAPEM: read(certs.CA),
		Headers: map[string]string{"x-team": "infra"}, Authority: "fe.example"}.Options(nil)
	if err != nil {
		t.Fatal(err)
	}
	tl := o.ConnectionOptions.TLS
	if tl == nil || len(tl.Certificates) != 1 || tl.RootCAs == nil || o.ConnectionOptions.Authority != "fe.example" {
		t.Fatalf("PEM data: TLS %v, authority %q; want the client certificate, the CA pool and the authority", tl, o.ConnectionOptions.Authority)
	}
	if o.HeadersProvider == nil {
		t.Fatal("no headers provider for the profile's grpc_meta")
	}
	h, err := o.HeadersProvider.GetHeaders(context.Background())
	if err != nil || h["x-team"] != "infra" {
		t.Errorf("headers %v, %v", h, err)
	}
	o, err = ClientConfig{APIKey: "k", NoTLS: true}.Options(nil)
	if err != nil || o.ConnectionOptions.TLS != nil || !o.ConnectionOptions.TLSDisabled || o.Credentials == nil {
		t.Errorf("API key with TLS off: TLS %v, disabled %t, credentials %v, err %v", o.ConnectionOptions.TLS, o.ConnectionOptions.TLSDisabled, o.Credentials, err)
	}
	if _, err := (ClientConfig{CertPEM: read(certs.ClientCert)}).Options(nil); err == nil {
		t.Error("a certificate's data without its key's: no error")
	}
}
