package temporalconfig

// What a template may build, not only what it writes: a template's
// variables are never written, so a cap on the output alone let a chain
// of printf variables, each ten times the last, take a command to 2 GB
// and out of memory (issue 39's finding 5). Every function that makes a
// new string is wrapped here: it is refused before it runs if what it
// could make exceeds what the template has left of maxBuiltBytes (printf
// is bounded from its format: widths, precisions and verbs, before fmt
// builds anything), and what it made is then charged. The functions that
// make nothing new (default, index, slice, len, eq, and, …) cost no
// budget; a command takes at most maxArgs arguments, so that each of them
// does a bounded amount of work, and the template's evaluation stops at
// maxEvalTime, checked at each function call and each write.
//
// With the file and the output bounded at MaxFileBytes, a template's
// evaluation holds at most MaxFileBytes of source, its parse tree (about
// a hundred bytes a byte of source), maxBuiltBytes of values and
// MaxFileBytes of output: a few tens of MiB, whatever it does.

import (
	"fmt"
	"reflect"
	"strings"
	"text/template"
	"time"
	"unicode/utf8"
)

// maxBuiltBytes bounds the bytes a template's functions make, in all:
// Temporal's templates make a few dozen (lower, print of a host and a
// port).
const maxBuiltBytes = 256 << 10

// maxArgs bounds the arguments of one command of a template: Temporal's
// take three at most.
const maxArgs = 64

// maxEvalTime bounds a template's evaluation; a var for the test of it.
var maxEvalTime = 2 * time.Second

// boundError is a template refused for what it would build or how long
// it runs: its message holds no value of the template's, so it is shown
// (text/template's own errors may quote one, and are not).
type boundError string

func (e boundError) Error() string { return string(e) }

// errBuilt is the error of a template that would build more than
// maxBuiltBytes.
var errBuilt = boundError(fmt.Sprintf("its functions would build more than %d bytes (print, printf, lower, … make new strings; Temporal's templates build a few dozen bytes)", maxBuiltBytes))

// budget is what a template's evaluation has left.
type budget struct {
	left     int
	deadline time.Time
}

func newBudget() *budget {
	return &budget{left: maxBuiltBytes, deadline: time.Now().Add(maxEvalTime)}
}

// check fails past the deadline.
func (b *budget) check() error {
	if !time.Now().Before(b.deadline) {
		return boundError(fmt.Sprintf("it took more than %v to expand", maxEvalTime))
	}
	return nil
}

// room fails if n more bytes would pass the bound, or past the deadline.
func (b *budget) room(n int) error {
	if err := b.check(); err != nil {
		return err
	}
	if n < 0 || n > b.left {
		return errBuilt
	}
	return nil
}

// charge takes the string s, made, from the budget: the result of a
// function whose room was checked with a bound on it.
func (b *budget) charge(s string) (string, error) {
	if len(s) > b.left {
		return "", errBuilt
	}
	b.left -= len(s)
	return s, nil
}

// funcs is the template's function map: default and the functions that
// make strings (the template language's own print, printf, println,
// html, js and urlquery overridden), each bounded.
func (b *budget) funcs() template.FuncMap {
	// wrap bounds f, whose result is at most grow times its arguments'
	// text and a little more.
	wrap := func(grow int, f func(...any) string) func(...any) (string, error) {
		return func(args ...any) (string, error) {
			n, err := argsBytes(args)
			if err != nil {
				return "", err
			}
			if err := b.room(grow*n + len(args) + 1); err != nil {
				return "", err
			}
			return b.charge(f(args...))
		}
	}
	return template.FuncMap{
		"default": func(args ...any) (string, error) {
			if err := b.check(); err != nil {
				return "", err
			}
			return defaultValue(args...) // a value it was given: nothing new
		},
		// A letter's other case is at most a byte longer (ȿ, 2 bytes: Ȿ, 3).
		"lower": func(s string) (string, error) {
			if err := b.room(2 * len(s)); err != nil {
				return "", err
			}
			return b.charge(strings.ToLower(s))
		},
		"upper": func(s string) (string, error) {
			if err := b.room(2 * len(s)); err != nil {
				return "", err
			}
			return b.charge(strings.ToUpper(s))
		},
		"print":   wrap(1, fmt.Sprint),
		"println": wrap(1, fmt.Sprintln),
		// The escapers turn a byte into at most 6 ('<' is \u003C in js).
		"html":     wrap(6, template.HTMLEscaper),
		"js":       wrap(6, template.JSEscaper),
		"urlquery": wrap(6, template.URLQueryEscaper),
		"printf": func(format string, args ...any) (string, error) {
			n, err := printfBound(format, args)
			if err != nil {
				return "", err
			}
			if err := b.room(n); err != nil {
				return "", err
			}
			return b.charge(fmt.Sprintf(format, args...))
		},
	}
}

// argBytes bounds the text fmt makes of an argument (%v): a string's or
// a byte slice's length, a scalar's few bytes. Nothing else is a value a
// template may print: the environment whole is refused before it runs.
func argBytes(a any) (int, error) {
	if a == nil {
		return len("<nil>"), nil
	}
	v := reflect.ValueOf(a)
	switch v.Kind() {
	case reflect.String:
		return v.Len(), nil
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return 4 * v.Len(), nil // [1 2 3]: up to 4 bytes a byte
		}
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return 64, nil
	}
	return 0, boundError(fmt.Sprintf("a value of type %s cannot be printed by a template", v.Type()))
}

// argsBytes is the sum of argBytes.
func argsBytes(args []any) (int, error) {
	n := 0
	for _, a := range args {
		m, err := argBytes(a)
		if err != nil {
			return 0, err
		}
		n += m
	}
	return n, nil
}

// maxWidth bounds a printf width or precision: fmt itself refuses those
// over a million, and a config needs none.
const maxWidth = 1024

// printfBound bounds the length of fmt.Sprintf(format, args...) before it
// is built: the format's own bytes, and for each verb its width, its
// precision, the longest argument it may print (an argument index can
// print one many times) four times over (%q turns a byte into \x00, %x
// into two) and 400 bytes (the longest float64 in %f, 309 digits; a bad
// verb's %!v(type=…)); then each argument once more, for fmt's
// %!(EXTRA …) of those no verb used.
func printfBound(format string, args []any) (int, error) {
	longest, all := 0, 0
	for _, a := range args {
		n, err := argBytes(a)
		if err != nil {
			return 0, err
		}
		longest, all = max(longest, n), all+n
	}
	total := len(format) + 4*all + 64*len(args)
	for i := 0; i < len(format); {
		if format[i] != '%' {
			i++
			continue
		}
		i++
		for i < len(format) && strings.IndexByte("+-# 0", format[i]) >= 0 {
			i++
		}
		wp := 0
		for part := 0; part < 2 && i < len(format); part++ {
			if part == 1 {
				if format[i] != '.' {
					break
				}
				i++
			}
			if i < len(format) && format[i] == '[' { // an argument index
				for i < len(format) && format[i] != ']' {
					i++
				}
				i++
			}
			if i < len(format) && format[i] == '*' {
				return 0, boundError("printf: a width or precision taken from an argument (*) is not supported")
			}
			n := 0
			for i < len(format) && format[i] >= '0' && format[i] <= '9' {
				n = n*10 + int(format[i]-'0')
				if n > maxWidth {
					return 0, boundError(fmt.Sprintf("printf: a width or precision over %d is not supported", maxWidth))
				}
				i++
			}
			wp += n
		}
		if i < len(format) && format[i] == '[' {
			for i < len(format) && format[i] != ']' {
				i++
			}
			i++
		}
		if i < len(format) {
			_, size := utf8.DecodeRuneInString(format[i:])
			i += size
		}
		total += wp + 4*longest + 400
	}
	return total, nil
}
