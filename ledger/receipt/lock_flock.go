//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package receipt

import (
	"errors"
	"os"
	"syscall"
)

// lock takes an exclusive flock(2) on path, creating the file if needed.
// The lock is held until the returned file is closed, and is released by
// the kernel if the process dies. (syscall.Flock is the same system call
// as golang.org/x/sys/unix.Flock.)
func lock(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, ErrLocked
		}
		return nil, err
	}
	return f, nil
}
