package temporalconfig

// Values a template took from the environment are masked in every error
// about the file: a variable may hold a secret (a password, a key) that
// the template writes where a setting of another type was expected, and
// YAML's and the connection's errors quote values. Each value is shown as
// the variable's name, $NAME, which says where to look without showing
// it.

import (
	"cmp"
	"os"
	"regexp"
	"slices"
	"strings"
)

// envRead matches the variables a template reads by name: .Env.NAME and
// index .Env "NAME".
var envRead = regexp.MustCompile(`\.Env\.([A-Za-z_][A-Za-z0-9_]*)|index\s+\$?\.Env\s+"([A-Za-z_][A-Za-z0-9_]*)"`)

// secretName is a variable whose name says it holds a secret: its value is
// masked however short.
var secretName = regexp.MustCompile(`(?i)pass|pwd|secret|token|key|credential|auth`)

// minMasked is the shortest value masked of a variable whose name does
// not say secret: shorter ones ("1", "tcp") would mask parts of every
// message, and are no secrets.
const minMasked = 4

// envValue is a variable the template read, and its value.
type envValue struct{ name, value string }

// readVars returns the set variables the template b reads whose values
// are masked, longest value first (so that a value inside another is
// masked as part of the longer one).
func readVars(b []byte) []envValue {
	var out []envValue
	seen := map[string]bool{}
	for _, m := range envRead.FindAllSubmatch(b, -1) {
		name := string(m[1]) + string(m[2])
		v, ok := os.LookupEnv(name)
		if !ok || v == "" || seen[name] || (len(v) < minMasked && !secretName.MatchString(name)) {
			continue
		}
		seen[name] = true
		out = append(out, envValue{name, v})
	}
	slices.SortFunc(out, func(a, b envValue) int { return cmp.Compare(len(b.value), len(a.value)) })
	return out
}

// maskEnv replaces in s each value of vars by $NAME, and the start of a
// long one that YAML's type errors quote (`abcdefg...`).
func maskEnv(s string, vars []envValue) string {
	for _, v := range vars {
		if len(v.value) > 10 {
			s = strings.ReplaceAll(s, "`"+v.value[:7]+"...`", "`$"+v.name+"`")
		}
		s = strings.ReplaceAll(s, v.value, "$"+v.name)
	}
	return s
}

// maskedError is an error whose message has the environment's values
// masked; it wraps the original, so errors.Is still tells it apart.
type maskedError struct {
	msg string
	err error
}

func (e *maskedError) Error() string { return e.msg }
func (e *maskedError) Unwrap() error { return e.err }

// masked returns err with the values of vars masked in its message.
func masked(err error, vars []envValue) error {
	if err == nil || len(vars) == 0 {
		return err
	}
	msg := maskEnv(err.Error(), vars)
	if msg == err.Error() {
		return err
	}
	return &maskedError{msg, err}
}

// MaskError masks, in an error about c (its datastore's settings, the
// connection made of them), the values its template took from the
// environment.
func (c *Config) MaskError(err error) error { return masked(err, c.env) }
