package redact_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/tqscavenger/tqscavenger/internal/redact"
)

// pw is the secret in every input here; no output may hold it, nor any
// part of it of four characters or more.
const pw = "Kq7@xZ/9vLm2"

// leaks reports whether out holds pw or a run of four of its characters.
func leaks(out, secret string) bool {
	for i := 0; i+4 <= len(secret); i++ {
		if strings.Contains(out, secret[i:i+4]) {
			return true
		}
	}
	return false
}

// TestURL: issue 39's finding 6: a password holding @ and then / leaked
// past the mask (postgres://scav:xxxxx@xZ/9vLm2@db.internal…), and an
// http URL's token parameters and user info were shown.
func TestURL(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		// Issue 39's: more than one @, on both engines.
		{"postgres://scav:Kq7@xZ/9vLm2@db.internal:5432/temporal", "postgres://xxxxx"},
		{"mysql://scav:Kq7@xZ/9vLm2@db.internal:3306/temporal", "mysql://xxxxx"},
		// An @ outside the user info: a password with / ? or # in it.
		{"postgres://scav:123/Kq7@xZ9vLm2@db/x", "postgres://xxxxx"},
		{"postgres://scav:123/9vLm2Kq7@db/x", "postgres://xxxxx"},
		{"postgres://scav:1#Kq7xZ9vLm2@db/x", "postgres://xxxxx"},
		{"postgres://scav:1?Kq7xZ9vLm2@db/x", "postgres://xxxxx"},
		{"postgres://scav:Kq7/xZ9vLm2@db/x", "postgres://xxxxx"}, // does not parse
		// A host that is no host name (a URL built from a connectAddr
		// holding user:password@, escaped).
		{"postgres://xxxxx@[flt_pw:Kq7xZ9vLm2%40127.0.0.1:5432]:5432/t", "postgres://xxxxx"},
		// Database URLs keep their user name.
		{"postgres://u:Kq7xZ9vLm2@h/db", "postgres://u:xxxxx@h/db"},
		{"mysql://u:" + url.QueryEscape(pw) + "@h:3306/db?tls=true", "mysql://u:xxxxx@h:3306/db?tls=true"},
		{"postgres://u@h/db?sslpassword=Kq7xZ9vLm2&sslmode=require", "postgres://u@h/db?sslmode=require&sslpassword=xxxxx"},
		// Any other URL: the whole user info, and token-like parameters.
		{"http://u:Kq7xZ9vLm2@host:9090/metrics?token=Kq7xZ9vLm2", "http://xxxxx@host:9090/metrics?token=xxxxx"},
		{"https://Kq7xZ9vLm2@host/metrics", "https://xxxxx@host/metrics"},
		{"https://host/m?access_token=Kq7xZ9vLm2&api_key=Kq7xZ9vLm2&apikey=Kq7xZ9vLm2&sig=Kq7xZ9vLm2&X-Amz-Credential=Kq7xZ9vLm2&x=1",
			"https://host/m?X-Amz-Credential=xxxxx&access_token=xxxxx&api_key=xxxxx&apikey=xxxxx&sig=xxxxx&x=1"},
		{"https://host/m?next=http://u:Kq7xZ9vLm2%40h2/", "https://host/m?next=xxxxx"},
		{"https://host/m?next=http://u:Kq7xZ9vLm2@h2/", "https://xxxxx"},
		{"https://host/m#Kq7xZ9vLm2", "https://host/m#xxxxx"},
		// Forms without a host.
		{"u:Kq7xZ9vLm2@tcp(db:3306)/temporal", "xxxxx@tcp(db:3306)/temporal"},
		{"u:Kq7@xZ9vLm2@tcp(db:3306)/temporal", "xxxxx"},
		{"mysql:u:Kq7xZ9vLm2@h/db", "mysql:xxxxx@h/db"},
		{"host=db password='Kq7 xZ9vLm2' dbname=t", "host=db password=xxxxx dbname=t"},
		// Nothing secret: as it is.
		{"sqlite:/tmp/t.db", "sqlite:/tmp/t.db"},
		{"/data/backup@2026.db", "/data/backup@2026.db"},
		{"http://host:9090/metrics", "http://host:9090/metrics"},
		{"postgres://[::1]:5432/db", "postgres://[::1]:5432/db"},
	} {
		t.Run(c.in, func(t *testing.T) {
			got := redact.URL(c.in)
			if got != c.want {
				t.Errorf("URL(%q) = %q, want %q", c.in, got, c.want)
			}
			if leaks(got, pw) || leaks(got, "Kq7xZ9vLm2") {
				t.Errorf("URL(%q) = %q: part of the secret", c.in, got)
			}
		})
	}
}

// TestText: a free text masks each URL in it, however quoted, and
// secret name=value pairs.
func TestText(t *testing.T) {
	for _, in := range []string{
		`bad database DSN: "postgres://scav:Kq7@xZ/9vLm2@db.internal:5432/temporal": names no database`,
		`endpoint (http://u:Kq7xZ9vLm2@h/m?token=Kq7xZ9vLm2), dropped`,
		`invalid argument "--temporal-api-key=Kq7xZ9vLm2"`,
		`connect_timeout=5 sslpassword="Kq7 xZ9vLm2"`,
		`lookup flt_pw:Kq7xZ9vLm2@127.0.0.1:5432: no such host`,
	} {
		if got := redact.Text(in); leaks(got, pw) || leaks(got, "Kq7xZ9vLm2") || leaks(got, "xZ9vLm2") {
			t.Errorf("Text(%q) = %q: part of the secret", in, got)
		}
	}
	// What is not a secret stays readable.
	for _, in := range []string{"use postgres://user:pass@host:port/database", "queue orders@eu kept", "connect_timeout=5 sslmode=disable"} {
		if got := redact.Text(in); got != in {
			t.Errorf("Text(%q) = %q, want it unchanged", in, got)
		}
	}
	// pgx quotes a DSN it cannot parse in backquotes: the quotes are the
	// message's (issue 42 finding 8: the URL and its opening quote went,
	// its closing one stayed).
	in := "cannot parse `postgres://scav:Kq7xZ9vLm2@db:5432/t?sslmode=bogus`: failed to configure TLS (sslmode is invalid)"
	want := "cannot parse `postgres://scav:xxxxx@db:5432/t?sslmode=bogus`: failed to configure TLS (sslmode is invalid)"
	if got := redact.Text(in); got != want {
		t.Errorf("Text(%q)\n = %q\nwant %q", in, got, want)
	}
}

// TestValue: a URL built from parts shows nothing after its scheme when a
// part held user info.
func TestValue(t *testing.T) {
	u := &url.URL{Scheme: "postgres", User: url.UserPassword("u", "p"), Host: "flt_pw:Kq7xZ9vLm2@127.0.0.1:5432", Path: "/t"}
	if got := redact.Value(u); got != "postgres://xxxxx" {
		t.Errorf("Value = %q, want postgres://xxxxx", got)
	}
	u = &url.URL{Scheme: "postgres", User: url.UserPassword("u", "Kq7xZ9vLm2"), Host: "127.0.0.1:5432", Path: "/t", RawQuery: "sslmode=disable"}
	if got := redact.Value(u); got != "postgres://u:xxxxx@127.0.0.1:5432/t?sslmode=disable" {
		t.Errorf("Value = %q", got)
	}
}
