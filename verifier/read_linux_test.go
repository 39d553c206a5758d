package verifier

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestReadLeavesAccessTime: reading a receipt file does not update its
// access time, where reading it otherwise would.
func TestReadLeavesAccessTime(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "000001.json")
	writeFile(t, path, []byte("{}"))
	old := time.Now().Add(-48 * time.Hour).Truncate(time.Second) // before mtime: relatime updates it
	atime := func() time.Time {
		t.Helper()
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		return time.Unix(st.Atim.Unix())
	}
	if err := os.Chtimes(path, old, time.Time{}); err != nil {
		t.Fatal(err)
	}
	readFile(t, path)
	if atime().Equal(old) {
		t.Skip("the file system does not update access times on reads")
	}
	if err := os.Chtimes(path, old, time.Time{}); err != nil {
		t.Fatal(err)
	}
	d := openDir(dir)
	defer d.close()
	if _, err := d.read(new(reader), "000001.json"); err != nil {
		t.Fatal(err)
	}
	if got := atime(); !got.Equal(old) {
		t.Errorf("access time %v after the read, want %v as before", got, old)
	}
}
