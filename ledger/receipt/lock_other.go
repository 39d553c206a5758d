//go:build !unix || aix

package receipt

import (
	"fmt"
	"os"
	"runtime"
)

func lock(path string) (*os.File, error) {
	return nil, fmt.Errorf("cannot lock %s: receipt directories are supported only on Unix, not on %s", path, runtime.GOOS)
}
