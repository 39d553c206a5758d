//go:build !unix || aix

package receipt

import (
	"errors"
	"fmt"
	"os"
	"runtime"
)

// openLock fails: the Writer's cross-process protocol rests on flock(2).
func openLock(string) (*os.File, error) {
	return nil, fmt.Errorf("receipts directories can be written only on Unix (the lock is flock(2)), not on %s: %w",
		runtime.GOOS, errors.ErrUnsupported)
}

func lockFile(*os.File) error { return errors.ErrUnsupported }

func unlockFile(*os.File) error { return errors.ErrUnsupported }
