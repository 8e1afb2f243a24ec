//go:build unix

package bench

import (
	"fmt"
	"os"
	"syscall"
)

// fileID names the file at path as /proc/locks does: its device as
// "major:minor" in hex (Linux's encoding of st_dev), and its inode.
func fileID(path string) (dev string, ino uint64, err error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", 0, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", 0, fmt.Errorf("%s: no device and inode", path)
	}
	d := uint64(st.Dev)
	major := (d>>8)&0xfff | (d>>32)&^0xfff
	minor := d&0xff | (d>>12)&^0xff
	return fmt.Sprintf("%02x:%02x", major, minor), uint64(st.Ino), nil
}
