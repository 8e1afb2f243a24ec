//go:build linux

package sqlstore

import (
	"bufio"
	"strings"
	"testing"
)

// TestShmAlone: /proc/locks as the proof reads it. The file is alone only
// when this process holds a lock on it and nobody else holds or waits for
// one; an open file description's lock (pid -1) is somebody else's.
func TestShmAlone(t *testing.T) {
	const id, self = "fe:00:4242", 100
	for _, c := range []struct {
		name, locks string
		alone       bool
		why         string
	}{
		{"only ours", "1: POSIX  ADVISORY  READ 100 fe:00:4242 128 128\n2: POSIX  ADVISORY  WRITE 7 fe:00:99 0 EOF\n", true, ""},
		{"another's beside ours", "1: POSIX  ADVISORY  READ 100 fe:00:4242 128 128\n2: POSIX  ADVISORY  READ 7 fe:00:4242 128 128\n", false, "another process"},
		{"another's waiting on ours", "1: POSIX  ADVISORY  WRITE 100 fe:00:4242 120 120\n1: -> POSIX  ADVISORY  WRITE 7 fe:00:4242 120 120\n", false, "another process"},
		{"an open file description's", "1: POSIX  ADVISORY  READ 100 fe:00:4242 128 128\n2: OFDLCK ADVISORY  READ -1 fe:00:4242 128 128\n", false, "another process"},
		{"another inode on another device", "1: POSIX  ADVISORY  READ 100 fe:00:4242 128 128\n2: POSIX  ADVISORY  READ 7 fe:01:4242 128 128\n", true, ""},
		{"none of ours", "2: POSIX  ADVISORY  WRITE 7 fe:00:99 0 EOF\n", false, "no lock"},
		{"empty", "", false, "no lock"},
		{"garbage", "not /proc/locks\n\n1:\n", false, "no lock"},
	} {
		t.Run(c.name, func(t *testing.T) {
			alone, why, err := shmAlone(bufio.NewScanner(strings.NewReader(c.locks)), id, self)
			if err != nil || alone != c.alone || !strings.Contains(why, c.why) {
				t.Errorf("shmAlone = %v, %q, %v; want %v, %q", alone, why, err, c.alone, c.why)
			}
		})
	}
}

// TestLockFileID: a device number as /proc/locks prints it, major and
// minor in hex (Linux's new_encode_dev layout).
func TestLockFileID(t *testing.T) {
	for _, c := range []struct {
		dev, ino uint64
		want     string
	}{
		{0xfe00, 395600, "fe:00:395600"},
		{0x0801, 7, "08:01:7"},
		{0x12310345, 1, "103:12345:1"},
	} {
		if got := lockFileID(c.dev, c.ino); got != c.want {
			t.Errorf("lockFileID(%#x, %d) = %s, want %s", c.dev, c.ino, got, c.want)
		}
	}
}
