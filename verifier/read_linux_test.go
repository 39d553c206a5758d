package verifier

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bankdoor/bankdoor/ledger/receipt"
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

// TestReadWholeSizes: with whole true or false, a receipt file is read
// whole up to one byte over the receipt limit, at every size around the
// 4,096-byte multiples where a read may stop short.
func TestReadWholeSizes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sizes := []int{0, 1, 600, 4095, 4096, 4097, 8191, 8192, 8193, receipt.MaxSize - 1, receipt.MaxSize, receipt.MaxSize + 1, receipt.MaxSize + 2, 3 * receipt.MaxSize}
	for _, size := range sizes {
		b := make([]byte, size)
		for i := range b {
			b[i] = byte(i * 7)
		}
		writeFile(t, filepath.Join(dir, fmt.Sprint(size)), b)
	}
	d := openDir(dir)
	defer d.close()
	for _, whole := range []bool{false, true} {
		d.whole = whole
		rd := new(reader)
		for _, size := range sizes {
			got, err := d.read(rd, fmt.Sprint(size))
			want := readFile(t, filepath.Join(dir, fmt.Sprint(size)))[:min(size, receipt.MaxSize+1)]
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("whole %v, size %d: read %d bytes (%v), want the first %d", whole, size, len(got), err, len(want))
			}
		}
	}
}

// TestReadWholeStopsShort: with whole true, a read shorter than asked for
// and not a multiple of 4,096 bytes is the file's end (readsWhole's file
// systems return no other such read), and one of a multiple of 4,096 is
// not; with whole false, reading goes on until a read returns nothing. A
// FIFO stands in for a file system that returns short reads.
func TestReadWholeStopsShort(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		whole  bool
		chunks []int
		want   int
	}{
		{true, []int{100, 100}, 100},
		{false, []int{100, 100}, 200},
		{true, []int{4096, 100}, 4196},
		{true, []int{8192, 4096, 1}, 12289},
		{false, []int{4096, 100}, 4196},
	} {
		path := filepath.Join(t.TempDir(), "000001.json")
		if err := unix.Mkfifo(path, 0o600); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		go func() {
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				t.Error(err)
				return
			}
			defer f.Close()
			for _, n := range tt.chunks {
				if _, err := f.Write(make([]byte, n)); err != nil {
					return // the reader is gone
				}
				// One chunk a read: the next once the reader has this one.
				for {
					left, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCINQ) // FIONREAD
					if err != nil {
						t.Error(err)
						return
					}
					if left == 0 {
						break
					}
					time.Sleep(time.Millisecond)
				}
			}
		}()
		b, err := new(reader).readAt(unix.AT_FDCWD, path, tt.whole)
		if err != nil || len(b) != tt.want {
			t.Errorf("whole %v, writes %v: read %d bytes (%v), want %d", tt.whole, tt.chunks, len(b), err, tt.want)
		}
	}
}

// TestReadsWhole: procfs is no file system readsWhole knows.
func TestReadsWhole(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		dir  string
		want bool
	}{{"/proc", false}, {"/dev/shm", true}} {
		fd, err := unix.Open(c.dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			continue
		}
		var st unix.Statfs_t
		if err := unix.Fstatfs(fd, &st); err == nil && (c.dir != "/dev/shm" || st.Type == unix.TMPFS_MAGIC) {
			if got := readsWhole(fd); got != c.want {
				t.Errorf("readsWhole(%s) = %v, want %v", c.dir, got, c.want)
			}
		}
		unix.Close(fd)
	}
}
