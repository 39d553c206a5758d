//go:build unix && !aix

package receipt

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// openLock opens the lock file path, creating it if needed.
func openLock(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
}

// lockFile takes an exclusive flock(2) on f, waiting for it as long as it
// takes. The lock belongs to f's open file description: another openLock
// of the same path, in this process or another, waits for it. The kernel
// releases it if the process dies.
func lockFile(f *os.File) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// unlockFile releases the lock that lockFile took.
func unlockFile(f *os.File) error {
	return unix.Flock(int(f.Fd()), unix.LOCK_UN)
}
