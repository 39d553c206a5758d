//go:build !unix

package verifier

import (
	"bytes"
	"io"
	"os"
	"path/filepath"

	"github.com/bankdoor/bankdoor/ledger/receipt"
)

// Where there is no openat (Windows), receipt files are opened by path
// with package os; read_unix.go's system calls are a saving in CPU, not a
// different check: both read a file up to one byte over receipt.MaxSize.

// readReceipt reads the receipt file at path, into a slice of its own.
func readReceipt(path string) ([]byte, error) {
	b, err := new(reader).readFile(path)
	return bytes.Clone(b), err
}

// A dirFile is a receipts directory, by path.
type dirFile struct{ path string }

func openDir(path string) dirFile { return dirFile{path} }

func (dirFile) close() {}

// read reads the receipt file name in d with rd, into rd's buffer: the
// bytes it returns are valid until rd's next read.
func (d dirFile) read(rd *reader, name string) ([]byte, error) {
	return rd.readFile(filepath.Join(d.path, name))
}

// A reader reads receipt files, one at a time, into a buffer it keeps.
type reader struct {
	buf []byte // receipt.MaxSize+1 bytes, once used
}

// readFile reads at most one byte more than a receipt may have from the
// file at path into rd's buffer, and returns the bytes read, valid until
// rd's next read; its errors are *os.PathErrors for path.
func (rd *reader) readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if rd.buf == nil {
		rd.buf = make([]byte, receipt.MaxSize+1)
	}
	n, err := io.ReadFull(f, rd.buf)
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		err = nil
	}
	return rd.buf[:n], err
}
