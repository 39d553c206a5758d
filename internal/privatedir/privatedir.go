// Package privatedir makes the per-user cache directories the test
// harnesses keep their downloads in (internal/debpkg, internal/npmproject):
// a directory another user could write to would let that user swap the
// programs the tests run.
package privatedir

import (
	"fmt"
	"os"
)

// Make creates dir with mode 0700 if it does not exist, and checks that
// it is a directory, not a symbolic link, that only its owner may write
// to.
func Make(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() || fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s is %v, not a directory only its owner may write to; remove it", dir, fi.Mode())
	}
	return nil
}
