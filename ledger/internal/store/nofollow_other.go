//go:build !unix

package store

// oNoFollow is 0 where the system has no O_NOFOLLOW (Windows, where making
// a symbolic link needs a privilege): links at the path are followed there.
const oNoFollow = 0
