//go:build !unix

package receipt

import (
	"fmt"
	"os"
	"runtime"
)

func lock(path string) (*os.File, error) {
	return nil, fmt.Errorf("cannot lock %s: receipt directories are supported only on Unix, not %s", path, runtime.GOOS)
}
