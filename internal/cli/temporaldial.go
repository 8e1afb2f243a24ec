//go:build !tqs_notemporal

package cli

// A failed dial of the Temporal frontend, said in an operator's words:
// the address and where it came from (a flag, a variable, the --config
// file, a temporal CLI profile), what went wrong, and what to check. The
// SDK's own text is gRPC's, which for a host name that does not resolve
// is only "no children to pick from".

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"go.temporal.io/api/serviceerror"
)

// temporalDialError is a failed dial: exit status 4 (errTemporalUnavailable)
// whatever the cause, as before; its message is msg, and the SDK's error
// stays in the chain.
type temporalDialError struct {
	msg string
	err error
}

func (e *temporalDialError) Error() string   { return e.msg }
func (e *temporalDialError) Unwrap() []error { return []error{errTemporalUnavailable, e.err} }

// dialError is the error of a failed dial of the frontend at addr (the
// address the client was given): "cannot reach the Temporal frontend
// ADDR (where the address came from): what happened; what to check".
func (t *temporalFlags) dialError(addr string, err error) error {
	why, check := t.dialCause(addr, err)
	return &temporalDialError{
		msg: fmt.Sprintf("cannot reach the Temporal frontend %s (%s): %s; %s", addr, t.addressFrom(), why, check),
		err: err,
	}
}

// addressFrom names where --temporal-address came from, as an operator
// would look for it.
func (t *temporalFlags) addressFrom() string {
	o := t.origins["temporal-address"]
	switch o.layer {
	case fromProfile:
		return "address of " + o.name
	case fromFile:
		return o.name
	case fromFlag, fromEnv:
		return "from " + o.name
	}
	return "the default address"
}

// checkAddress is what to do about an address that leads nowhere, in the
// words of where it came from.
func (t *temporalFlags) checkAddress() string {
	if o := t.origins["temporal-address"]; o.layer == fromProfile {
		return "check the profile's address, or give --temporal-address"
	}
	return "check the address, or give another with --temporal-address"
}

// dialCause says what went wrong in a failed dial of addr, and what to
// check. gRPC's errors are matched by their text: the SDK wraps them in
// its own (serviceerror.Unavailable) without their types.
func (t *temporalFlags) dialCause(addr string, err error) (why, check string) {
	msg := err.Error()
	has := func(s ...string) bool {
		for _, x := range s {
			if strings.Contains(msg, x) {
				return true
			}
		}
		return false
	}
	var deadline *serviceerror.DeadlineExceeded
	var denied *serviceerror.PermissionDenied
	switch {
	case has("no children to pick from", "produced zero addresses", "no such host"):
		// The resolver found no address: gRPC keeps the lookup's error
		// to itself, so the name is looked up again to say why.
		return nameNotResolved(addr), t.checkAddress()
	case has("connection refused"):
		return "connection refused (nothing listens there)", t.checkAddress()
	case has("first record does not look like a TLS handshake"):
		return "the frontend does not speak TLS, and TLS is on (" + t.tlsOnBecause() + ")",
			"check the port, or leave out what turns TLS on"
	case has("x509: certificate signed by unknown authority", "x509: certificate is not trusted"):
		return "its TLS certificate is signed by a CA not trusted here",
			"give the CA with --temporal-tls-ca-path (tls.server_ca_cert_path in a profile)"
	case has("x509: certificate is valid for"):
		return "its TLS certificate " + after(msg, "x509: certificate "),
			"connect by a name the certificate holds, or give --temporal-tls-server-name (tls.server_name in a profile)"
	case has("x509: certificate has expired or is not yet valid"):
		return "its TLS certificate has expired or is not valid yet", "check the frontend's certificate and this machine's clock"
	case has("tls: certificate required", "tls: bad certificate", "tls: unknown certificate authority", "tls: unknown certificate"):
		return "it refused the connection's client certificate, or wants one",
			"give a client certificate it trusts: --temporal-tls-cert-path and --temporal-tls-key-path (tls.client_cert_path and tls.client_key_path in a profile)"
	case has("code = Unauthenticated") || errors.As(err, &denied):
		return "it refused the credentials", "check the API key (--temporal-api-key, api_key in a profile) or the client certificate"
	case !t.cfg.TLS && t.cfg.APIKey == "" && t.cfg.CAFile == "" && len(t.cfg.CAPEM) == 0 &&
		has("error reading server preface", "connection closed before server preface"):
		return "it closed the connection without answering gRPC", "if the frontend takes TLS, turn it on with --temporal-tls; else check the port"
	case errors.As(err, &deadline) || errors.Is(err, context.DeadlineExceeded) || has("context deadline exceeded"):
		return "no answer within " + shortDuration(dialTimeout), "check the address, the port and any firewall between"
	}
	return strings.TrimSpace(gRPCText(msg)), t.checkAddress()
}

// dialTimeout bounds a dial of the frontend.
const dialTimeout = 30 * time.Second

// nameNotResolved says why the host of addr (host:port, or a dns:/// or
// passthrough:/// target) has no address, looking it up again.
func nameNotResolved(addr string) string {
	hp := addr
	if _, rest, ok := strings.Cut(addr, ":///"); ok {
		hp = rest
	}
	host, _, err := net.SplitHostPort(hp)
	if err != nil {
		host = hp
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = net.DefaultResolver.LookupHost(ctx, host)
	var dnsErr *net.DNSError
	switch {
	case err == nil:
		return "the name " + host + " gave the client no address it could use"
	case errors.As(err, &dnsErr) && dnsErr.Err != "":
		return "the name " + host + " does not resolve (" + dnsErr.Err + ")"
	}
	return "the name " + host + " does not resolve"
}

// tlsOnBecause names the setting that turned TLS on, with where it came
// from.
func (t *temporalFlags) tlsOnBecause() string {
	for _, f := range []string{"temporal-tls", "temporal-api-key", "temporal-tls-ca-path", "temporal-tls-cert-path", "temporal-tls-server-name", "temporal-tls-disable-host-verification"} {
		if o := t.origins[f]; o.layer != fromDefault && o.layer != "" {
			if o.layer == fromFlag {
				return o.name
			}
			return "--" + f + " from " + o.name
		}
	}
	if len(t.cfg.CAPEM) > 0 || len(t.cfg.CertPEM) > 0 {
		return "the profile's TLS data"
	}
	return "--temporal-tls"
}

// after is s from the first sep on, sep left out.
func after(s, sep string) string {
	_, rest, _ := strings.Cut(s, sep)
	return rest
}

// gRPCText is the SDK's error without its wrappers: "failed reaching
// server: connection error: desc = "transport: …"" as "…".
func gRPCText(msg string) string {
	for _, p := range []string{"failed reaching server: ", "connection error: desc = ", `"`, "transport: ", "Error while dialing: "} {
		msg = strings.TrimPrefix(msg, p)
	}
	return strings.TrimSuffix(msg, `"`)
}
