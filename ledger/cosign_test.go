package ledger

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/bankdoor/bankdoor/anchor"
	"github.com/bankdoor/bankdoor/anchor/anchortest"
	"github.com/bankdoor/bankdoor/ledger/internal/store"
)

var _ anchor.CosignatureStore = (*CosignatureStore)(nil)

func TestCosignatureStoreContract(t *testing.T) {
	t.Parallel()
	anchortest.TestCosignatureStore(t, func(t *testing.T) anchor.CosignatureStore {
		return openTestLog(t, 0).CosignatureStore()
	})
}

// TestCosignatureStoreSurvivesReopen checks that what Put stored is in
// the file: a closed and reopened log still has it.
func TestCosignatureStoreSurvivesReopen(t *testing.T) {
	t.Parallel()
	tl := openTestLog(t, 0)
	lines := []byte("— witness.example c2lnbmF0dXJl\n")
	if err := tl.CosignatureStore().Put("witness.example", 0, lines); err != nil {
		t.Fatal(err)
	}
	tl.Close()
	if err := tl.CosignatureStore().Put("witness.example", 1, lines); !errors.Is(err, ErrClosed) {
		t.Errorf("Put after Close = %v; want ErrClosed", err)
	}
	tl.reopen(t)
	s := tl.CosignatureStore()
	got, ok, err := s.Get("witness.example", 0)
	if !ok || err != nil || !bytes.Equal(got, lines) {
		t.Errorf("after reopen, Get = %q, %v, %v; want %q", got, ok, err, lines)
	}
	if n, ok, err := s.Latest("witness.example"); n != 0 || !ok || err != nil {
		t.Errorf("after reopen, Latest = %d, %v, %v; want 0, true, nil", n, ok, err)
	}
}

// TestCheckpointAt checks that the checkpoint of an earlier size is the
// note the log served at that size, byte for byte.
func TestCheckpointAt(t *testing.T) {
	t.Parallel()
	a := newAgent(1)
	tl := openTestLog(t, 0, a)
	served := [][]byte{tl.Checkpoint()}
	for range 5 {
		tl.mustAppend(t, a.Chain(t, 3)...)
		served = append(served, tl.Checkpoint())
	}
	for i, want := range served {
		got, err := tl.CheckpointAt(uint64(3 * i))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("CheckpointAt(%d) = %q, %v; want the note served then, %q", 3*i, got, err, want)
		}
	}
	if _, err := tl.CheckpointAt(16); !errors.Is(err, ErrRange) {
		t.Errorf("CheckpointAt(16) of a 15-entry log = %v; want ErrRange", err)
	}
}

// TestCosignatureAddedWakes checks that a stored cosignature closes the
// channel CosignatureAdded returned before it.
func TestCosignatureAddedWakes(t *testing.T) {
	t.Parallel()
	tl := openTestLog(t, 0)
	ch := tl.CosignatureAdded()
	if err := tl.CosignatureStore().Put("w", 0, []byte("— w c2ln\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("CosignatureAdded's channel was not closed by Put")
	}
}

// TestOpenRefusesOtherVersions: a file whose meta "version" is not the
// one storage format (version 1 and 2 were never released) is refused by
// Open, Fsck and Copy, and is left as it was.
func TestOpenRefusesOtherVersions(t *testing.T) {
	t.Parallel()
	for _, version := range []string{"1", "2", "4", "03", ""} {
		a := newAgent(1)
		tl := openTestLog(t, 0, a)
		tl.mustAppend(t, a.Chain(t, 4)...)
		tl.Close()
		setBoltMeta(t, tl.path, store.MetaVersion, []byte(version))
		want := fmt.Sprintf("storage format version is %q", version)
		if err := tryOpen(tl); !errors.Is(err, ErrStorage) || !strings.Contains(err.Error(), want) {
			t.Errorf("Open of version %q = %v; want ErrStorage naming %s", version, err, want)
		}
		if _, err := Fsck(t.Context(), tl.path, testVerifier(t)); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), want) {
			t.Errorf("Fsck of version %q = %v; want ErrCorrupt naming %s", version, err, want)
		}
		to := filepath.Join(t.TempDir(), "copy.db")
		if _, err := Copy(t.Context(), tl.path, to, CopyOptions{LogKey: testVerifier(t)}); !errors.Is(err, ErrStorage) || !strings.Contains(err.Error(), want) {
			t.Errorf("Copy of version %q = %v; want ErrStorage naming %s", version, err, want)
		}
		if got := boltMeta(t, tl.path, store.MetaVersion); string(got) != version {
			t.Errorf("version after the refusals = %q; want %q kept", got, version)
		}
	}
}

// TestOpenRefusesNoLeavesFrom: a file of the current version without
// meta "leaves_from" is refused, not taken for one that indexes every
// leaf (which is what version 2 was).
func TestOpenRefusesNoLeavesFrom(t *testing.T) {
	t.Parallel()
	a := newAgent(1)
	tl := openTestLog(t, 0, a)
	tl.mustAppend(t, a.Chain(t, 4)...)
	tl.Close()
	setBoltMeta(t, tl.path, store.MetaLeavesFrom, nil)
	want := fmt.Sprintf("meta %q is missing", store.MetaLeavesFrom)
	if err := tryOpen(tl); !errors.Is(err, ErrStorage) || !strings.Contains(err.Error(), want) {
		t.Errorf("Open without leaves_from = %v; want ErrStorage naming %s", err, want)
	}
	if _, err := Fsck(t.Context(), tl.path, testVerifier(t)); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), want) {
		t.Errorf("Fsck without leaves_from = %v; want ErrCorrupt naming %s", err, want)
	}
	to := filepath.Join(t.TempDir(), "copy.db")
	if _, err := Copy(t.Context(), tl.path, to, CopyOptions{LogKey: testVerifier(t)}); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Copy without leaves_from = %v; want an error naming %s", err, want)
	}
	if got := boltMeta(t, tl.path, store.MetaLeavesFrom); got != nil {
		t.Errorf("leaves_from after the refusals = %x; want none written", got)
	}
}

// tryOpen opens tl's file, closing it at once if that succeeds.
func tryOpen(tl *testLog) error {
	l, err := openPath(tl.path, tl.opts, defaultIndexLag)
	if err == nil {
		l.Close()
	}
	return err
}

// setBoltMeta sets (or, with v nil, deletes) meta key k of the bbolt file
// at path, behind the ledger's back.
func setBoltMeta(t *testing.T, path, k string, v []byte) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		if v == nil {
			return tx.Bucket([]byte("meta")).Delete([]byte(k))
		}
		return tx.Bucket([]byte("meta")).Put([]byte(k), v)
	})
	if err := errors.Join(err, db.Close()); err != nil {
		t.Fatal(err)
	}
}

// boltMeta reads meta key k of the bbolt file at path.
func boltMeta(t *testing.T, path, k string) (v []byte) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.View(func(tx *bolt.Tx) error { v = bytes.Clone(tx.Bucket([]byte("meta")).Get([]byte(k))); return nil })
	return v
}

// BenchmarkCosignatureStorePut measures one durable Put (one bbolt
// transaction with fsync), the cost the anchor adds per witness per
// checkpoint.
func BenchmarkCosignatureStorePut(b *testing.B) {
	s := openTestLog(b, 0).CosignatureStore()
	lines := []byte("— witness.example Ni3uBQAAAABrERu2CJ1Bv4LlXh/CI+K+wFdmLzG0hqVVennmYou21l1cE5WjKLPdB9izxtfM2hiYGGsoNG056ljWwUrBZUgzXxY5Dg==\n")
	var size uint64
	for b.Loop() {
		size++
		if err := s.Put("witness.example", size, lines); err != nil {
			b.Fatal(err)
		}
	}
}
