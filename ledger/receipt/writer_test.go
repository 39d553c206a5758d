package receipt

import (
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func openWriter(t *testing.T, dir string) *Writer {
	t.Helper()
	w, err := OpenWriter(dir, testKey())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

func writeN(t *testing.T, w *Writer, n int) {
	t.Helper()
	for range n {
		r := exampleReceipts(t)[0]
		if _, _, err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
}

// checkChain reads dir and checks it holds exactly seq 1..n, each signed
// by the test key and linked to the one before, and nothing else but .lock.
func checkChain(t *testing.T, dir string, n int) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != n+1 || names[0] != ".lock" {
		t.Fatalf("directory holds %v, want .lock and %d receipts", names, n)
	}
	prev := FirstPrev
	for seq := uint64(1); seq <= uint64(n); seq++ {
		b, err := os.ReadFile(filepath.Join(dir, FileName(seq)))
		if err != nil {
			t.Fatal(err)
		}
		r, err := Parse(b)
		if err != nil {
			t.Fatalf("%s: %v", FileName(seq), err)
		}
		if err := r.Verify(testPub()); err != nil {
			t.Fatalf("%s: %v", FileName(seq), err)
		}
		if r.Seq != seq || r.Prev != prev {
			t.Fatalf("%s: seq %d prev %s, want seq %d prev %s", FileName(seq), r.Seq, r.Prev, seq, prev)
		}
		h := Hash(b)
		prev = hex.EncodeToString(h[:])
	}
}

func TestWriterChainAcrossReopen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "receipts")
	w := openWriter(t, dir)
	r := exampleReceipts(t)[0]
	r.Time = time.Time{}
	before := time.Now().Add(-time.Second)
	name, sum, err := w.Write(r)
	if err != nil {
		t.Fatal(err)
	}
	if name != "000001.json" || r.Seq != 1 || r.Prev != FirstPrev {
		t.Errorf("first Write: name %s seq %d prev %s", name, r.Seq, r.Prev)
	}
	if r.Time.Before(before) || r.Time.After(time.Now()) {
		t.Errorf("Write set time %v, want now", r.Time)
	}
	b, _ := os.ReadFile(filepath.Join(dir, name))
	if Hash(b) != sum {
		t.Error("Write returned a hash that is not the file's SHA-256")
	}
	writeN(t, w, 2)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.Write(exampleReceipts(t)[0]); err == nil {
		t.Error("Write after Close succeeded")
	}
	w = openWriter(t, dir)
	writeN(t, w, 2)
	checkChain(t, dir, 5)
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("receipts directory mode %04o, want 0700", fi.Mode().Perm())
	}
}

func TestWriterConcurrent(t *testing.T) {
	dir := t.TempDir()
	w := openWriter(t, dir)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { writeN(t, w, 10) })
	}
	wg.Wait()
	checkChain(t, dir, 80)
}

func TestWriterLock(t *testing.T) {
	dir := t.TempDir()
	w := openWriter(t, dir)
	_, err := OpenWriter(dir, testKey())
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "another bankdoor holds the lock") ||
		!strings.Contains(err.Error(), filepath.Join(dir, ".lock")) {
		t.Fatalf("second OpenWriter: err = %v, want ErrLocked naming the lock file", err)
	}
	w.Close()
	w2, err := OpenWriter(dir, testKey())
	if err != nil {
		t.Fatalf("OpenWriter after Close: %v", err)
	}
	w2.Close()
}

func TestWriterUnwritableAtOpen(t *testing.T) {
	file := filepath.Join(t.TempDir(), "plain-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// A path under a regular file fails even for root.
	if _, err := OpenWriter(filepath.Join(file, "receipts"), testKey()); err == nil {
		t.Fatal("OpenWriter under a regular file succeeded")
	}
	if _, err := OpenWriter(file, testKey()); err == nil {
		t.Fatal("OpenWriter on a regular file succeeded")
	}
}

func TestWriterReadOnlyDirectory(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("running as root, who can write to a read-only directory")
	}
	ro := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(ro, 0o500); err != nil {
		t.Fatal(err)
	}
	_, err := OpenWriter(ro, testKey())
	if err == nil || !strings.Contains(err.Error(), "not writable") {
		t.Fatalf("OpenWriter on a read-only directory: err = %v", err)
	}
}

func TestWriterOtherKeysDirectory(t *testing.T) {
	dir := t.TempDir()
	w, err := OpenWriter(dir, testKey())
	if err != nil {
		t.Fatal(err)
	}
	writeN(t, w, 1)
	w.Close()
	_, err = OpenWriter(dir, otherKey())
	if err == nil || !strings.Contains(err.Error(), "key_id 56475aa75463474c") {
		t.Fatalf("OpenWriter with another key: err = %v, want it to name the directory's key_id", err)
	}
}

func TestWriterRefusesStrayFiles(t *testing.T) {
	for _, name := range []string{"notes.txt", "0001.json", "000001.json.bak"} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := OpenWriter(dir, testKey())
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("stray %s: err = %v, want it named", name, err)
		}
	}
}

func TestWriterRefusesCorruptLast(t *testing.T) {
	dir := t.TempDir()
	w, err := OpenWriter(dir, testKey())
	if err != nil {
		t.Fatal(err)
	}
	writeN(t, w, 2)
	w.Close()
	last := filepath.Join(dir, "000002.json")
	b, _ := os.ReadFile(last)
	os.WriteFile(last, append(b, '\n'), 0o600)
	if _, err := OpenWriter(dir, testKey()); err == nil || !strings.Contains(err.Error(), last) {
		t.Fatalf("corrupt last receipt: err = %v, want it to name %s", err, last)
	}
	// A valid receipt under the wrong name.
	os.WriteFile(last, b, 0o600)
	os.Rename(last, filepath.Join(dir, "000003.json"))
	if _, err := OpenWriter(dir, testKey()); err == nil || !strings.Contains(err.Error(), "holds seq 2") {
		t.Fatalf("renamed last receipt: err = %v", err)
	}
}

func TestWriterFailedWriteKeepsSeq(t *testing.T) {
	dir := t.TempDir()
	w := openWriter(t, dir)
	writeN(t, w, 1)
	bad := exampleReceipts(t)[0]
	bad.Decision = "maybe"
	before := *bad
	if _, _, err := w.Write(bad); err == nil {
		t.Fatal("Write of an invalid receipt succeeded")
	}
	if bad.Seq != before.Seq || bad.KeyID != "" {
		t.Error("failed Write changed the receipt")
	}
	// Make the rename fail: a directory where the next receipt goes.
	blocker := filepath.Join(dir, "000002.json")
	if err := os.Mkdir(blocker, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.Write(exampleReceipts(t)[0]); err == nil {
		t.Fatal("Write onto an existing name succeeded")
	}
	os.Remove(blocker)
	name, _, err := w.Write(exampleReceipts(t)[0])
	if err != nil || name != "000002.json" {
		t.Fatalf("Write after failures = %s, %v; want 000002.json", name, err)
	}
	checkChain(t, dir, 2)
}

func TestWriterRemovesStaleTemp(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, ".tmp-12345")
	if err := os.WriteFile(stale, []byte("half a receipt"), 0o600); err != nil {
		t.Fatal(err)
	}
	openWriter(t, dir)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale temporary file still there: %v", err)
	}
}
