//go:build unix && !aix

package flock

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Lock takes an exclusive lock on path, creating the file (mode 0600) if
// needed, waiting as long as another holds it. The lock is held until the
// returned file is closed.
func Lock(path string) (*os.File, error) {
	return lock(path, unix.LOCK_EX)
}

// TryLock takes an exclusive lock on path like Lock, but fails at once
// with ErrLocked if another open file holds it.
func TryLock(path string) (*os.File, error) {
	return lock(path, unix.LOCK_EX|unix.LOCK_NB)
}

func lock(path string, how int) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err = unix.Flock(int(f.Fd()), how)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("lock %s: %w", path, ErrLocked)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return f, nil
}
