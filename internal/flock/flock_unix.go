//go:build unix && !aix

package flock

import (
	"errors"

	"golang.org/x/sys/unix"
)

const (
	lockEx = unix.LOCK_EX
	lockNB = unix.LOCK_NB
	lockUn = unix.LOCK_UN

	noFollow = unix.O_NOFOLLOW
)

var errWouldBlock = unix.EWOULDBLOCK

func supported(string) error { return nil }

// flock calls flock(2), again if a signal interrupts it.
func (l *File) flock(how int) error {
	for {
		err := unix.Flock(int(l.f.Fd()), how)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
