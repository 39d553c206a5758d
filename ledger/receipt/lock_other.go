//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package receipt

import (
	"fmt"
	"os"
	"runtime"
)

func lock(path string) (*os.File, error) {
	return nil, fmt.Errorf("cannot lock %s: receipt directories are supported only where flock(2) is, not on %s", path, runtime.GOOS)
}
