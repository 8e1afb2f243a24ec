//go:build !unix

package bench

import "errors"

// fileID needs a Unix file's device and inode: none here.
func fileID(string) (string, uint64, error) {
	return "", 0, errors.New("no file device and inode on this system")
}
