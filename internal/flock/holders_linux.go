package flock

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// holders names the processes that /proc/locks lists as holding a lock on
// l's file, as "pid 123 (bankdoor)", or "" if it lists none.
// /proc/locks names a lock's file by "MAJOR:MINOR:INODE" and its holder by
// pid, as seen from the lock owner's pid namespace.
func (l *File) holders() string {
	fi, err := l.f.Stat()
	st, ok := fi.Sys().(*syscall.Stat_t)
	if err != nil || !ok {
		return ""
	}
	dev := uint64(st.Dev) // its type differs by architecture
	file := fmt.Sprintf("%02x:%02x:%d", unix.Major(dev), unix.Minor(dev), st.Ino)
	locks, err := os.Open("/proc/locks")
	if err != nil {
		return ""
	}
	defer locks.Close()
	var who []string
	sc := bufio.NewScanner(io.LimitReader(locks, 1<<20))
	for sc.Scan() {
		// "1: FLOCK  ADVISORY  WRITE 1234 fe:00:9985738 0 EOF"; a waiter has "->" after "1:".
		f := strings.Fields(sc.Text())
		if len(f) < 6 || f[1] == "->" || f[5] != file {
			continue
		}
		if pid, err := strconv.Atoi(f[4]); err == nil && pid > 0 {
			who = append(who, fmt.Sprintf("pid %d%s", pid, command(pid)))
		}
	}
	return strings.Join(who, ", ")
}

// command returns " (NAME)", the command name of process pid, or "".
func command(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return ""
	}
	return " (" + strings.TrimSpace(string(b)) + ")"
}
