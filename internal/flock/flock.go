// Package flock takes advisory whole-file locks with flock(2), the locks
// bankdoor's processes coordinate through: held by an open file, released
// when it is closed or its process dies (the kernel drops them on exit,
// SIGKILL included), never inherited by a process that only opens the
// same path.
//
// Two opens of one path conflict even within one process, so a lock
// serialises goroutines holding different *os.File values as well as
// processes. Locks are advisory: they bind only programs that take them.
// Only Unix systems are supported; elsewhere every call returns an error.
package flock

import "errors"

// ErrLocked is returned by TryLock when another open file holds the lock.
var ErrLocked = errors.New("locked by another process")
