//go:build !linux

package flock

// holders is "": only Linux lists who holds a lock (/proc/locks).
func (l *File) holders() string { return "" }
