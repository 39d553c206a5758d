// Package flock takes advisory whole-file locks with flock(2), the locks
// bankdoor's processes coordinate through: held by an open file, released
// when it is unlocked or closed or its process dies (the kernel drops
// them on exit, SIGKILL included).
//
// A lock belongs to an open file description: two opens of one path
// conflict even within one process, so a lock serialises goroutines
// holding different Files as well as processes. Locks are advisory: they
// bind only programs that take them. Only Unix systems are supported;
// elsewhere Open returns an error wrapping errors.ErrUnsupported.
package flock

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// ErrLocked is returned by TryLock when another open file holds the lock.
var ErrLocked = errors.New("locked by another process")

// A File is an open lock file.
type File struct {
	f *os.File
}

// Open opens the lock file path, creating it (mode 0600) if needed. It
// takes no lock. A symbolic link at path is refused in the open itself,
// so a link cannot make it create or lock a file elsewhere.
func Open(path string) (*File, error) {
	if err := supported(path); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|noFollow, 0o600)
	if fi, lerr := os.Lstat(path); err != nil && lerr == nil && fi.Mode()&os.ModeSymlink != 0 {
		return nil, fmt.Errorf("lock file %s is a symbolic link, which is not followed; remove it", path)
	}
	if err != nil {
		return nil, err
	}
	return &File{f}, nil
}

// Lock takes an exclusive lock, waiting as long as another holds it.
func (l *File) Lock() error {
	if err := l.flock(lockEx); err != nil {
		return fmt.Errorf("lock %s: %w", l.f.Name(), err)
	}
	return nil
}

// TryLock takes an exclusive lock if no other open file holds it, and
// fails at once with an error wrapping ErrLocked if one does.
func (l *File) TryLock() error {
	err := l.flock(lockEx | lockNB)
	if errors.Is(err, errWouldBlock) {
		err = ErrLocked
	}
	if err != nil {
		return fmt.Errorf("lock %s: %w", l.f.Name(), err)
	}
	return nil
}

// Unlock releases the lock.
func (l *File) Unlock() error { return l.flock(lockUn) }

// Close closes the file, releasing its lock.
func (l *File) Close() error { return l.f.Close() }

// LockWait opens path and takes its lock, waiting at most wait for
// another holder to release it; close the File to release it. When wait
// is over it fails with an error wrapping ErrLocked that names path and,
// where the system lists locks (Linux's /proc/locks), the processes
// holding it. The wait it gave up goes on in the background on its own
// open file, which is closed the moment it gets the lock.
func LockWait(path string, wait time.Duration) (*File, error) {
	l, err := Open(path)
	if err != nil {
		return nil, err
	}
	if err := l.TryLock(); !errors.Is(err, ErrLocked) {
		if err != nil {
			l.Close()
			return nil, err
		}
		return l, nil
	}
	got := make(chan error, 1)
	go func() { got <- l.Lock() }()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case err := <-got:
		if err != nil {
			l.Close()
			return nil, err
		}
		return l, nil
	case <-timer.C:
		go func() {
			<-got
			l.Close()
		}()
		by := l.holders()
		if by != "" {
			by = ", held by " + by
		}
		return nil, fmt.Errorf("lock %s: %w%s; gave up after %v", path, ErrLocked, by, wait)
	}
}

// Holders names the processes holding a lock on the file at path, as
// "pid 123 (bankdoor)", where the system lists locks (Linux's
// /proc/locks); otherwise, or if it lists none, it returns "".
func Holders(path string) string {
	f, err := os.OpenFile(path, os.O_RDONLY|noFollow, 0)
	if err != nil {
		return ""
	}
	defer f.Close()
	return (&File{f}).holders()
}

// TryLock opens path and takes its lock without waiting; close the File
// to release it.
func TryLock(path string) (*File, error) {
	l, err := Open(path)
	if err != nil {
		return nil, err
	}
	if err := l.TryLock(); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}
