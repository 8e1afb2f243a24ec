// Package redact is the one place that masks secrets in what tqscavenger
// prints: a DSN or any URL (a Temporal metrics endpoint, a Temporal
// address), a setting's value, and free text such as an error message
// that quotes what the user typed. Every output goes through it: the
// errors on stderr, the log, the status page, `config`.
//
// What is a secret:
//
//   - a URL's password; for a URL that is not a database's, its whole
//     user info (http://TOKEN@host carries a token as the user name);
//   - a query parameter, or a name=value pair in free text, whose name
//     holds one of SecretWords (token, access_token, api_key, apikey,
//     password, sslpassword, _auth_pass, secret, sig, signature,
//     X-Amz-Credential, session…);
//   - a query parameter's value that itself holds user:password@ or a
//     URL, and a URL's fragment;
//   - everything after the scheme of a URL whose text does not parse as
//     its parts say, which is the case of a password holding an
//     unescaped @, /, ?, # or %: more than one @, an @ outside the user
//     info, a host that is no host name. The parser's split of such a
//     string is not the user's, so no part of it can be trusted to be
//     free of the password: it is shown as its scheme only
//     ("postgres://xxxxx").
package redact

import (
	"net"
	"net/url"
	"regexp"
	"strings"
)

// Mask replaces a secret.
const Mask = "xxxxx"

// SecretWords are the parts of a parameter or key name that mark its
// value as a secret, matched case-insensitively anywhere in the name:
// pass (password, sslpassword, passwd, _auth_pass), pwd, secret, token
// (access_token, X-Amz-Security-Token), key after a prefix (api_key,
// apikey; sslkey, a path, is masked too), sig (sig, signature, X-Amz-Signature), auth
// (authorization), cred (credential, X-Amz-Credential), session.
// A bare "key" is not one: free text says "key=value" of a form.
var SecretWords = []string{"pass", "pwd", "secret", "token", "[a-z0-9_.-]key", "sig", "auth", "cred", "session"}

var secretName = regexp.MustCompile(`(?i)(` + strings.Join(SecretWords, "|") + `)`)

// SecretName reports whether a parameter or key named name holds a
// secret (SecretWords).
func SecretName(name string) bool { return secretName.MatchString(name) }

// secretPairs matches the name=value pairs of a secret name, in a libpq
// key=value string or free text, the value quoted or not.
var secretPairs = regexp.MustCompile(`(?i)\b([a-z_.-]*(?:` + strings.Join(SecretWords, "|") + `)[a-z_.-]*\s*=\s*)('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[^\s&;,]*)`)

// schemeForm matches a URL scheme.
var schemeForm = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*):`)

// dbSchemes are the schemes of databases: their user name is shown (it
// helps to say which user was refused); any other URL's is masked too.
var dbSchemes = map[string]bool{"postgres": true, "postgresql": true, "mysql": true, "mariadb": true, "sqlite": true, "sqlite3": true, "file": true}

// hostName matches what a host may be: a name or IPv4 address, or an IPv6
// literal in brackets (a zone escaped as %25), and a port.
var hostName = regexp.MustCompile(`^([A-Za-z0-9._~-]*|\[[0-9A-Fa-f:.]+(%25[A-Za-z0-9._~-]+)?\])(:[0-9]*)?$`)

// Pairs masks the values of the name=value pairs of secret names in s.
func Pairs(s string) string { return secretPairs.ReplaceAllString(s, "${1}"+Mask) }

// URL masks the secrets of a DSN or URL string (see the package doc).
// Strings that are no URL with a host, such as "mysql:u:pw@h/db" or
// go-sql-driver's "u:pw@tcp(h)/db", have everything between the scheme
// (or the start) and their one @ masked; with more than one @, all of it.
func URL(s string) string {
	s = Pairs(s)
	scheme := ""
	if m := schemeForm.FindStringSubmatch(s); m != nil {
		scheme = m[1]
	}
	ats := strings.Count(s, "@")
	u, err := url.Parse(s)
	if err == nil && (u.User != nil || u.Host != "") {
		userAts := 0
		if u.User != nil {
			userAts = 1
		}
		if ats == userAts && hostName.MatchString(u.Host) {
			return parsed(u)
		}
		return schemeOnly(scheme)
	}
	if i := strings.Index(s, "://"); i >= 0 && (scheme != "" || i == 0) && (err != nil || ats > 0) {
		// A URL that does not parse, or whose @ is not its user info's:
		// a password with a character it should have escaped.
		return schemeOnly(scheme)
	}
	if ats == 0 {
		return s // no user info (a file path, sqlite:PATH)
	}
	j := strings.LastIndexByte(s, '@')
	if !strings.Contains(s[:j], ":") {
		return s // no user:password@ (a file path may hold an @)
	}
	start := 0
	if dbSchemes[strings.ToLower(scheme)] {
		start = len(scheme) + 1 // mysql:u:pw@h: what follows the scheme
	}
	if ats > 1 {
		return s[:start] + Mask
	}
	return s[:start] + Mask + s[j:]
}

// schemeOnly is a URL of scheme shown as its scheme only.
func schemeOnly(scheme string) string {
	if scheme == "" {
		return Mask
	}
	return strings.ToLower(scheme) + "://" + Mask
}

// Value masks the secrets of u, a URL built from parts (a Temporal
// config's connectAddr, user and password) or parsed by URL's rules.
func Value(u *url.URL) string {
	if !hostName.MatchString(u.Host) || strings.Contains(u.Path, "@") || strings.Contains(u.Opaque, "@") {
		// Parts that held a password where none belongs (user:pw@ in a
		// connectAddr): nothing after the scheme is safe to show.
		return schemeOnly(u.Scheme)
	}
	return parsed(u)
}

// parsed formats u with its secrets masked.
func parsed(u *url.URL) string {
	c := *u
	if c.User != nil {
		_, hasPW := c.User.Password()
		switch {
		case !dbSchemes[strings.ToLower(c.Scheme)]:
			c.User = url.User(Mask)
		case hasPW:
			c.User = url.UserPassword(c.User.Username(), Mask)
		}
	}
	if c.RawQuery != "" {
		q := c.Query()
		masked := false
		for name, vs := range q {
			for i, v := range vs {
				if SecretName(name) || holdsCredentials(v) {
					vs[i] = Mask
					masked = true
				}
			}
		}
		if masked {
			c.RawQuery = q.Encode()
		}
	}
	if c.Fragment != "" {
		c.Fragment, c.RawFragment = Mask, ""
	}
	return c.String()
}

// credentialsShape matches a user:password@ anywhere.
var credentialsShape = regexp.MustCompile(`:[^@]*@`)

// holdsCredentials reports whether v holds a user:password@ or a URL.
func holdsCredentials(v string) bool {
	return credentialsShape.MatchString(v) || strings.Contains(v, "://")
}

// Text masks every secret in a free text, such as an error message that
// quotes a command line argument: each word that holds an @ or a :// (a
// URL, a mistyped one, go-sql-driver's form) as URL masks it, and every
// name=value pair of a secret name. A last line of defence for messages
// about input that did not parse, whose shape is unknown.
func Text(s string) string {
	s = Pairs(s)
	return word.ReplaceAllStringFunc(s, func(w string) string {
		if !strings.Contains(w, "@") && !strings.Contains(w, "://") {
			return w
		}
		if strings.Contains(w, "//user:pass@") {
			return w // the forms' own example, in a hint
		}
		// Quotes and punctuation around a word are the message's, not
		// the URL's: pgx quotes a DSN it cannot parse in backquotes.
		core := strings.TrimLeft(w, "\"'(<`")
		lead := w[:len(w)-len(core)]
		trimmed := strings.TrimRight(core, "\"')>,;:.`")
		return lead + URL(trimmed) + core[len(trimmed):]
	})
}

// word matches a word: no white space.
var word = regexp.MustCompile(`\S+`)

// HostPort reports whether s is a host:port and nothing more: no user
// info, path or white space (so that it may be shown).
func HostPort(s string) bool {
	host, port, err := net.SplitHostPort(s)
	if err != nil || host == "" || port == "" {
		return false
	}
	return hostName.MatchString(net.JoinHostPort(host, port))
}
