//go:build unix

package verifier

import (
	"bytes"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/bankdoor/bankdoor/ledger/receipt"
)

// readReceipt reads the receipt file at path as dirFile.read does, into
// a slice of its own.
func readReceipt(path string) ([]byte, error) {
	b, err := new(reader).readAt(unix.AT_FDCWD, path, false)
	return bytes.Clone(b), err
}

// A dirFile is a receipts directory held open to read its files relative
// to it (openat), which spares the kernel walking the directory's path
// again for each file. If the directory cannot be opened, fd is
// AT_FDCWD and the files are opened by path, failing as they would have.
type dirFile struct {
	fd    int
	path  string
	whole bool // the directory's file system is one readsWhole knows
}

func openDir(path string) dirFile {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return dirFile{unix.AT_FDCWD, path, false}
	}
	return dirFile{fd, path, readsWhole(fd)}
}

func (d dirFile) close() {
	if d.fd != unix.AT_FDCWD {
		unix.Close(d.fd)
	}
}

// read reads the receipt file name in d with rd, into rd's buffer: the
// bytes it returns are valid until rd's next read.
func (d dirFile) read(rd *reader, name string) ([]byte, error) {
	if d.fd == unix.AT_FDCWD {
		return rd.readAt(unix.AT_FDCWD, filepath.Join(d.path, name), false)
	}
	b, err := rd.readAt(d.fd, name, d.whole)
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
// AT_FDCWD, into rd's buffer, and returns the bytes read, valid until
// rd's next read; its errors are *os.PathErrors for name. It uses the
// openat, read and close system calls directly: an *os.File would also
// register the descriptor with the runtime's poller (a failing epoll_ctl
// per file) and grow its buffer as io.ReadAll does, which was a tenth of
// the CPU of verifying a directory.
//
// It reads until a read returns nothing or the buffer is full, except
// that, if whole is true (the directory is on a file system readsWhole
// knows), a read that returns fewer bytes than asked for, and not a
// multiple of 4,096, is taken for the file's end without asking for
// more: on such a file system nothing else makes a read that short, and
// the read that would return nothing cost a fifth of the CPU of the
// system calls per file. (A file swapped for a FIFO after receiptFiles
// listed it is read as the swapper writes it, with or without whole: the
// verifier checks the bytes it reads, whoever wrote them.)
func (rd *reader) readAt(dirfd int, name string, whole bool) ([]byte, error) {
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
		if whole && n < len(rd.buf) && n%4096 != 0 {
			break
		}
	}
	return rd.buf[:n], nil
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
