package ledger

import (
	"bytes"
	"errors"
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

// TestOpenUpgradesVersion1 opens a file of format version 1, without the
// cosignature buckets: Open adds them and writes version 2, keeping the
// log; Fsck reads both.
func TestOpenUpgradesVersion1(t *testing.T) {
	t.Parallel()
	a := newAgent(1)
	tl := openTestLog(t, 0, a)
	tl.mustAppend(t, a.Chain(t, 4)...)
	want := tl.Checkpoint()
	tl.Close()
	db, err := bolt.Open(tl.path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		return errors.Join(tx.DeleteBucket([]byte("cosignatures")), tx.DeleteBucket([]byte("witnesses")),
			tx.Bucket([]byte("meta")).Put([]byte(store.MetaVersion), []byte(store.Version1)))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Fsck(t.Context(), tl.path, testVerifier(t)); err != nil {
		t.Fatalf("Fsck of a version 1 file: %v", err)
	}
	tl.reopen(t)
	if got := tl.Checkpoint(); !bytes.Equal(got, want) {
		t.Errorf("after the upgrade, checkpoint = %q; want %q", got, want)
	}
	if err := tl.CosignatureStore().Put("w", 4, []byte("— w c2ln\n")); err != nil {
		t.Errorf("Put after the upgrade: %v", err)
	}
	var version []byte
	if err := tl.store.View(func(tx store.Tx) (err error) { version, err = tx.Meta(store.MetaVersion); return err }); err != nil || string(version) != store.Version {
		t.Errorf("version after the upgrade = %q, %v; want %q", version, err, store.Version)
	}
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
