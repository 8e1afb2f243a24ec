// Package docscheck checks the documentation's links. Its test, run by
// `go test ./...`, parses README.md and docs/*.md at the module's root and
// fails on a relative link to a file that does not exist, or to a #anchor
// that no heading of the target makes by GitHub's rules (the heading's
// text in lower case, punctuation dropped, spaces as '-', a repeated
// heading's anchor suffixed -1, -2, …). Links with a scheme (https:,
// mailto:) are not fetched. Standard library only; nothing imports it.
package docscheck
