package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/transparency-dev/merkle/compact"
	bolt "go.etcd.io/bbolt"
)

func TestBolt(t *testing.T) {
	testStorage(t, func(t *testing.T) Store {
		s, err := OpenBolt(filepath.Join(t.TempDir(), "ledger.db"), false)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestBoltReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := OpenBolt(path, false)
	if err != nil {
		t.Fatal(err)
	}
	mustUpdate(t, s, writeSample)
	want := readAll(t, s, MetaSize)
	s.Close()
	r, err := OpenBolt(path, true)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := readAll(t, r, MetaSize); len(got.Entries) != 2 || got.Meta[MetaSize] != want.Meta[MetaSize] {
		t.Fatalf("after reopen: %+v, want %+v", got, want)
	}
	if err := r.Update(func(tx Tx) error { return nil }); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Update on a read-only store = %v, want ErrReadOnly", err)
	}
}

func TestBoltLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := OpenBolt(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, ro := range []bool{false, true} {
		_, err := OpenBolt(path, ro)
		if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), path) {
			t.Errorf("second open (read-only %v) = %v; want an error naming %s and the lock", ro, err, path)
		}
	}
}

func TestBoltNotALedger(t *testing.T) {
	dir := t.TempDir()
	if _, err := OpenBolt(filepath.Join(dir, "missing.db"), true); err == nil {
		t.Error("read-only open of a missing file succeeded")
	}
	other := filepath.Join(dir, "other.db")
	db, err := bolt.Open(other, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := OpenBolt(other, true); err == nil || !strings.Contains(err.Error(), "not a bankdoor ledger") {
		t.Errorf("read-only open of an empty bbolt file = %v, want \"not a bankdoor ledger\"", err)
	}
}

func TestEncodings(t *testing.T) {
	n := compact.NewNodeID
	for _, id := range []compact.NodeID{n(0, 0), n(0, 1), n(1, 0), n(5, 1<<40+3), n(0, MaxNodeIndex-1), n(60, 1)} {
		if got, err := ParseNodeKey(NodeKey(id)); err != nil || got != id {
			t.Errorf("ParseNodeKey(NodeKey(%v)) = %v, %v", id, got, err)
		}
	}
	// The documented examples; storage order is completion order.
	for want, id := range []compact.NodeID{n(0, 0), n(0, 1), n(1, 0), n(0, 2), n(0, 3), n(1, 1), n(2, 0)} {
		if got, _ := ParseIndex(NodeKey(id)); got != uint64(want) {
			t.Errorf("NodeKey(%v) = %d, want %d", id, got, want)
		}
	}
	h := Head{Seq: 9, SHA256: [32]byte{31: 7}, Index: 1 << 50}
	if got, err := ParseHead(EncodeHead(h)); err != nil || got != h {
		t.Errorf("ParseHead(EncodeHead(%v)) = %v, %v", h, got, err)
	}
	for _, bad := range [][]byte{nil, make([]byte, 9), IndexKey(1 << 62)} {
		if _, err := ParseNodeKey(bad); err == nil {
			t.Errorf("ParseNodeKey(%x) succeeded", bad)
		}
	}
	if _, err := ParseHead(make([]byte, 47)); err == nil {
		t.Error("ParseHead of 47 bytes succeeded")
	}
	if _, err := ParseIndex(make([]byte, 7)); err == nil {
		t.Error("ParseIndex of 7 bytes succeeded")
	}
}

// TestBoltReadOnlyNeedsEveryBucket: a file lacking a bucket of the one
// storage format is refused read-only too, not read as holding nothing
// there (a file without cosignatures was version 1, never released).
func TestBoltReadOnlyNeedsEveryBucket(t *testing.T) {
	for _, missing := range buckets() {
		path := filepath.Join(t.TempDir(), "ledger.db")
		db, err := bolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = db.Update(func(tx *bolt.Tx) error {
			for _, name := range buckets() {
				if string(name) == string(missing) {
					continue
				}
				if _, err := tx.CreateBucket(name); err != nil {
					return err
				}
			}
			if m := tx.Bucket(bucketMeta); m != nil {
				return m.Put([]byte(MetaVersion), []byte(Version))
			}
			return nil
		})
		if err := errors.Join(err, db.Close()); err != nil {
			t.Fatal(err)
		}
		s, err := OpenBolt(path, true)
		if err == nil {
			s.Close()
		}
		if want := fmt.Sprintf("no bucket %q", missing); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("read-only open of a file without bucket %s = %v; want an error naming %s", missing, err, want)
		}
	}
}

// TestBoltSymlink: a symbolic link at the ledger's path is refused, read-
// write and read-only, dangling or not, and nothing is created where it
// points (a dangling .ledger.db in a receipts directory would otherwise
// put the ledger outside it).
func TestBoltSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere", "ledger.db")
	if err := os.Mkdir(filepath.Dir(target), 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, ".ledger.db")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	for _, ro := range []bool{false, true} {
		_, err := OpenBolt(link, ro)
		if err == nil || !strings.Contains(err.Error(), link) || !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("open of a dangling link (read-only %v) = %v; want an error naming %s as a symbolic link", ro, err, link)
		}
		if _, err := os.Lstat(target); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("open of a dangling link (read-only %v) created its target %s (%v)", ro, target, err)
		}
	}
	s, err := OpenBolt(target, false) // a real ledger behind the link
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	for _, ro := range []bool{false, true} {
		if s, err := OpenBolt(link, ro); err == nil || !strings.Contains(err.Error(), "symbolic link") {
			if s != nil {
				s.Close()
			}
			t.Errorf("open of a link to a ledger (read-only %v) = %v; want it refused as a symbolic link", ro, err)
		}
	}
}
