//go:build unix

package store

import "syscall"

// oNoFollow makes an open fail on a symbolic link at the path.
const oNoFollow = syscall.O_NOFOLLOW
