//go:build !linux

// This file owns the proof that a SQLite file has no other user outside
// Linux: there is none.

package sqlstore

// aloneOnFile fails to prove that the file at path has no other user: only
// Linux lists every process's locks.
func aloneOnFile(path string) (bool, string, error) {
	return false, "only Linux lists every process's locks", nil
}
