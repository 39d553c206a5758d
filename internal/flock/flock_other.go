//go:build !unix || aix

package flock

import (
	"fmt"
	"os"
	"runtime"
)

// Lock is not supported on this system.
func Lock(path string) (*os.File, error) { return nil, unsupported(path) }

// TryLock is not supported on this system.
func TryLock(path string) (*os.File, error) { return nil, unsupported(path) }

func unsupported(path string) error {
	return fmt.Errorf("cannot lock %s: file locks are supported only on Unix, not on %s", path, runtime.GOOS)
}
