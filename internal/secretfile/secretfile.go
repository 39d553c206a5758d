// Package secretfile reads files that hold secrets: private keys, bearer
// tokens, passwords. It is the one place bankdoor decides whether such a
// file may be read.
//
// # Rules
//
// A secret file is opened once and the opened file itself is checked
// (fstat), so the file checked is the file read. It must be a regular file
// (a symbolic link is followed: what is checked is the file it names, the
// file read, as OpenSSH does and as Kubernetes secret volumes need), and on
// Unix its mode must grant nothing to group or others (0600 or 0400). On
// Windows the mode bits carry only the read-only attribute, never who may
// read the file; the check of the mode is skipped there and the file's ACL
// decides.
//
// # Token Files
//
// A token file holds one "NAME TOKEN" line per bearer token, fields
// separated by spaces or tabs; blank lines and lines whose first non-blank
// character is "#" are skipped. NAME is 1 to 64 of a-z, 0-9, _ and -,
// starting with a letter or digit; it names the caller in logs (and, for
// the gateway, the agent's key and receipts directories). TOKEN is at least
// 32 characters of the RFC 6750 b64token alphabet (A-Z a-z 0-9 - . _ ~ + /
// and trailing =), such as "openssl rand -hex 32" prints. No token may be
// given twice. A file without any token is refused. Example:
//
//	# agents of the payments team
//	alice 5f1c0a3e9b7d24c68e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d
//	bob   b2F1dGggdG9rZW4gZm9yIGJvYiwgYmFzZTY0IGVuY29kZWQ=
package secretfile

import (
	"fmt"
	"io"
	"os"
	"runtime"
)

// Read returns the contents of the secret file at path, at most max bytes,
// after checking it as the package doc says. Its errors name path.
func Read(path string, max int64) ([]byte, error) {
	// Opening a FIFO blocks until a writer comes: refuse it before opening.
	// The opened file's own mode is what decides.
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 && runtime.GOOS != "windows" {
		return nil, fmt.Errorf("%s has mode %04o, which lets group or others read it; run chmod 600 %s", path, perm, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, max)
	}
	return b, nil
}
