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

	"github.com/bankdoor/bankdoor/internal/agentkey"
	"github.com/bankdoor/bankdoor/internal/flock"
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
			t.Error(err) // not Fatal: writeN runs in goroutines too
			return
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

// TestWriterSharedDirectory: two Writers on one directory in one
// process, each used by several goroutines, write one chain; so does a
// third opened while they write.
func TestWriterSharedDirectory(t *testing.T) {
	dir := t.TempDir()
	a, b := openWriter(t, dir), openWriter(t, dir)
	var wg sync.WaitGroup
	for i := range 8 {
		w := a
		if i%2 == 1 {
			w = b
		}
		wg.Go(func() { writeN(t, w, 10) })
	}
	wg.Go(func() { writeN(t, openWriter(t, dir), 10) })
	wg.Wait()
	checkChain(t, dir, 90)
}

// TestWriterRefusesOtherKeysHead: a receipt of another key at the head
// of the directory stops a Writer, which names the file and both keys
// and writes nothing.
func TestWriterRefusesOtherKeysHead(t *testing.T) {
	dir := t.TempDir()
	mine := openWriter(t, dir)
	theirs, err := OpenWriter(dir, otherKey())
	if err != nil {
		t.Fatal(err)
	}
	defer theirs.Close()
	if _, _, err := theirs.Write(exampleReceipts(t)[0]); err != nil {
		t.Fatal(err)
	}
	theirID, myID := agentkey.KeyID(otherPub()), agentkey.KeyID(testPub())
	for range 2 {
		_, _, err := mine.Write(exampleReceipts(t)[0])
		if err == nil {
			t.Fatal("Write after another key's receipt succeeded")
		}
		for _, want := range []string{filepath.Join(dir, "000001.json"), "key_id " + theirID, "key_id " + myID} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("err = %v, want it to name %s", err, want)
			}
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 || entries[0].Name() != ".lock" || entries[1].Name() != "000001.json" {
		t.Errorf("directory holds %v, want .lock and 000001.json only", entries)
	}
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
	// A directory where the next receipt goes: the head cannot be read.
	blocker := filepath.Join(dir, "000002.json")
	if err := os.Mkdir(blocker, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.Write(exampleReceipts(t)[0]); err == nil || !strings.Contains(err.Error(), blocker) {
		t.Fatalf("Write with a directory at the next name: err = %v, want it named", err)
	}
	os.Remove(blocker)
	name, _, err := w.Write(exampleReceipts(t)[0])
	if err != nil || name != "000002.json" {
		t.Fatalf("Write after failures = %s, %v; want 000002.json", name, err)
	}
	checkChain(t, dir, 2)
}

// TestWriterRemovesStaleTemp: OpenWriter removes the temporary files of
// interrupted Writes and probes, of this version and the one before, and
// leaves other dot files alone.
func TestWriterRemovesStaleTemp(t *testing.T) {
	dir := t.TempDir()
	stale := []string{".tmp-12345", ".000001.json.tmp-123456", ".1000000.json.tmp-9", ".probe.tmp-42"}
	kept := []string{".000001.json", ".keep", ".notes.tmp-1", ".lock"}
	for _, name := range append(stale, kept...) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("half a receipt"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	openWriter(t, dir)
	for _, name := range stale {
		if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Errorf("stale temporary file %s still there: %v", name, err)
		}
	}
	for _, name := range kept {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s was removed: %v", name, err)
		}
	}
}

// TestWriterSkipsSubdirectories: a directory beside the receipts (another
// agent's chain, DIR/AGENT) is skipped, one named like a receipt is not.
func TestWriterSkipsSubdirectories(t *testing.T) {
	dir := t.TempDir()
	sub, err := OpenWriter(filepath.Join(dir, "agent-b"), otherKey())
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	writeN(t, sub, 2)
	w := openWriter(t, dir)
	writeN(t, w, 3)
	w.Close()
	if _, err := os.Stat(filepath.Join(dir, "agent-b", "000002.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "agent-b")); err != nil {
		t.Fatal(err)
	}
	checkChain(t, dir, 3)
	if err := os.Mkdir(filepath.Join(dir, "000009.json"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenWriter(dir, testKey()); err == nil || !strings.Contains(err.Error(), "000009.json") {
		t.Fatalf("OpenWriter beside a directory named 000009.json: err = %v, want it named", err)
	}
}

// TestWriteLockHeld: while another process holds the directory's lock,
// Write gives up after the Writer's wait, naming the lock file, and
// writes nothing; once the lock is free the chain goes on from the same
// seq.
func TestWriteLockHeld(t *testing.T) {
	dir := t.TempDir()
	w := openWriter(t, dir)
	writeN(t, w, 1)
	w.lockWait = 50 * time.Millisecond
	lock := filepath.Join(dir, lockName)
	held, err := flock.TryLock(lock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { held.Close() }) // before w's: a Write that still waits must return
	done := make(chan error, 1)
	go func() {
		_, _, err := w.Write(exampleReceipts(t)[0])
		done <- err
	}()
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatal("Write has waited a minute for a held lock")
	}
	if !errors.Is(err, flock.ErrLocked) || !strings.Contains(err.Error(), lock) {
		t.Fatalf("Write under a held lock = %v; want ErrLocked naming %s", err, lock)
	}
	checkChain(t, dir, 1)
	held.Close()
	writeN(t, w, 1)
	checkChain(t, dir, 2)
}
