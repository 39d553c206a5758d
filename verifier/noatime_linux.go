package verifier

import "golang.org/x/sys/unix"

// oNoATime is the open flag that leaves a file's access time as it is.
const oNoATime = unix.O_NOATIME
