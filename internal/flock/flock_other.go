//go:build !unix || aix

package flock

import (
	"errors"
	"fmt"
	"runtime"
)

const (
	lockEx = iota
	lockNB
	lockUn

	noFollow = 0
)

var errWouldBlock = errors.New("would block")

func supported(path string) error {
	return fmt.Errorf("cannot lock %s: file locks (flock(2)) are supported only on Unix, not on %s: %w", path, runtime.GOOS, errors.ErrUnsupported)
}

func (l *File) flock(int) error { return errors.ErrUnsupported }
