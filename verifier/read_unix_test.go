//go:build unix

package verifier

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestDirFileFallback: a directory that cannot be held open has its files
// opened by path, with the errors of that path.
func TestDirFileFallback(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "000001.json"), []byte("{}"))
	for _, d := range []dirFile{openDir(dir), {unix.AT_FDCWD, dir, false}} {
		if b, err := d.read(new(reader), "000001.json"); err != nil || string(b) != "{}" {
			t.Errorf("%+v: read %q, %v; want {}", d, b, err)
		}
		_, err := d.read(new(reader), "000002.json")
		if want := "open " + filepath.Join(dir, "000002.json") + ": no such file or directory"; err == nil || err.Error() != want || !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%+v: missing file: %v, want %s", d, err, want)
		}
		d.close()
	}
	gone := filepath.Join(dir, "gone")
	if d := openDir(gone); d.fd != unix.AT_FDCWD {
		t.Fatalf("openDir of a missing directory = %+v, want AT_FDCWD", d)
	}
	_, err := openDir(gone).read(new(reader), "000001.json")
	if want := "open " + filepath.Join(gone, "000001.json") + ": no such file or directory"; err == nil || err.Error() != want {
		t.Errorf("missing directory: %v, want %s", err, want)
	}
}
