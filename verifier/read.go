package verifier

import (
	"bytes"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/bankdoor/bankdoor/ledger/receipt"
)

// readReceipt reads the receipt file at path as dirFile.read does.
func readReceipt(path string) ([]byte, error) {
	return new(reader).readAt(unix.AT_FDCWD, path)
}

// A dirFile is a receipts directory held open to read its files relative
// to it (openat), which spares the kernel walking the directory's path
// again for each file. If the directory cannot be opened, fd is
// AT_FDCWD and the files are opened by path, failing as they would have.
type dirFile struct {
	fd   int
	path string
}

func openDir(path string) dirFile {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return dirFile{unix.AT_FDCWD, path}
	}
	return dirFile{fd, path}
}

func (d dirFile) close() {
	if d.fd != unix.AT_FDCWD {
		unix.Close(d.fd)
	}
}

// read reads the receipt file name in d with rd.
func (d dirFile) read(rd *reader, name string) ([]byte, error) {
	if d.fd == unix.AT_FDCWD {
		return rd.readAt(unix.AT_FDCWD, filepath.Join(d.path, name))
	}
	b, err := rd.readAt(d.fd, name)
	if e, ok := err.(*os.PathError); ok {
		e.Path = filepath.Join(d.path, name) // the file, not just its name
	}
	return b, err
}

// A reader reads receipt files, one at a time, into a buffer it keeps.
type reader struct {
	buf   []byte // receipt.MaxSize+1 bytes, once used
	atime bool   // the files' access times are updated (O_NOATIME was refused)
}

// readAt reads at most one byte more than a receipt may have from the
// file name in the directory dirfd, or at the path name if dirfd is
// AT_FDCWD, and returns it in a new slice; its errors are *os.PathErrors
// for name. It uses the openat, read and close system calls directly: an
// *os.File would also register the descriptor with the runtime's poller
// (a failing epoll_ctl per file) and grow its buffer as io.ReadAll does,
// which was a tenth of the CPU of verifying a directory.
func (rd *reader) readAt(dirfd int, name string) ([]byte, error) {
	fd, err := rd.open(dirfd, name)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	defer unix.Close(fd)
	if rd.buf == nil {
		rd.buf = make([]byte, receipt.MaxSize+1)
	}
	n := 0
	for n < len(rd.buf) {
		m, err := unix.Read(fd, rd.buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: name, Err: err}
		}
		if m == 0 {
			break
		}
		n += m
	}
	return bytes.Clone(rd.buf[:n]), nil
}

// open opens the file name in dirfd for reading without updating its
// access time (O_NOATIME, where the system has it): verifying receipts
// does not touch them, and a file just written, whose access time would
// be updated on its first read, costs the kernel a tenth less to read.
// Only the files' owner may ask that; for anyone else open falls back to
// a plain open, the same open as before for this and later files, with
// its errors.
func (rd *reader) open(dirfd int, name string) (int, error) {
	if !rd.atime && oNoATime != 0 {
		fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_CLOEXEC|oNoATime, 0)
		if err != unix.EPERM {
			return fd, err
		}
		rd.atime = true
	}
	return unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
}
