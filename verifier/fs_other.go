//go:build unix && !linux

package verifier

// oNoATime is 0: the system has no open flag that leaves a file's access
// time as it is.
const oNoATime = 0

// readsWhole is false: files are read on until a read returns nothing.
func readsWhole(int) bool { return false }
