//go:build unix

package secretfile

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestReadFIFO: a FIFO of mode 0600 is refused at once; opening it would
// block until a writer came.
func TestReadFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(path, 64); err == nil || !strings.Contains(err.Error(), "is not a regular file") {
		t.Fatalf("Read(FIFO) = %v; want refused as not a regular file", err)
	}
	if _, err := ReadTokens(path); err == nil || !strings.Contains(err.Error(), "token file "+path+" is not a regular file") {
		t.Fatalf("ReadTokens(FIFO) = %v; want refused as not a regular file", err)
	}
}
