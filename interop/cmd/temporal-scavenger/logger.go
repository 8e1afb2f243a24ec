package main

// This file owns Temporal's log lines: a log.Logger that writes one plain
// line per call on stderr (no stack traces, which Temporal's zap logger
// adds to every error line) and keeps count of the errors, so that what
// Temporal only logs can fail the command and be named in its error.

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"

	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// Log levels, in order.
const (
	levelDebug = iota
	levelInfo
	levelWarn
	levelError
)

var levelNames = map[string]int{"debug": levelDebug, "info": levelInfo, "warn": levelWarn, "error": levelError}

// output is a writer shared by several loggers, one line at a time.
type output struct {
	mu sync.Mutex
	w  io.Writer
}

// lineLogger is a log.Logger writing lines at or above its level to out,
// prefixed with its name; it counts the lines at level error and keeps
// the first.
type lineLogger struct {
	out   *output
	name  string
	level int

	mu     sync.Mutex
	errors int64
	first  string
}

var _ log.Logger = (*lineLogger)(nil)

func newLineLogger(out *output, name string, level int) *lineLogger {
	return &lineLogger{out: out, name: name, level: level}
}

// line formats msg and its tags as msg key=value …, secrets masked.
func line(msg string, tags []tag.Tag) string {
	var b strings.Builder
	b.WriteString(msg)
	for _, t := range tags {
		fmt.Fprintf(&b, " %s=%v", t.Key(), t.Value())
	}
	return sqlstore.RedactText(b.String())
}

func (l *lineLogger) log(level int, name, msg string, tags []tag.Tag) {
	text := line(msg, tags)
	if level >= levelError {
		l.mu.Lock()
		l.errors++
		if l.first == "" {
			l.first = text
		}
		l.mu.Unlock()
	}
	if level < l.level {
		return
	}
	l.out.mu.Lock()
	defer l.out.mu.Unlock()
	fmt.Fprintf(l.out.w, "%s %s %s: %s\n", time.Now().UTC().Format(time.RFC3339Nano), name, l.name, text)
}

// errorCount returns how many error lines were logged and the first.
func (l *lineLogger) errorCount() (int64, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.errors, l.first
}

func (l *lineLogger) Debug(msg string, tags ...tag.Tag) { l.log(levelDebug, "debug", msg, tags) }
func (l *lineLogger) Info(msg string, tags ...tag.Tag)  { l.log(levelInfo, "info", msg, tags) }
func (l *lineLogger) Warn(msg string, tags ...tag.Tag)  { l.log(levelWarn, "warn", msg, tags) }
func (l *lineLogger) Error(msg string, tags ...tag.Tag) { l.log(levelError, "error", msg, tags) }

// DPanic is an error, as in zap's production mode; Panic panics and
// Fatal exits, as Temporal's callers expect of them.
func (l *lineLogger) DPanic(msg string, tags ...tag.Tag) { l.log(levelError, "dpanic", msg, tags) }

func (l *lineLogger) Panic(msg string, tags ...tag.Tag) {
	l.log(levelError, "panic", msg, tags)
	panic(line(msg, tags))
}

func (l *lineLogger) Fatal(msg string, tags ...tag.Tag) {
	l.log(levelError, "fatal", msg, tags)
	os.Exit(1)
}
