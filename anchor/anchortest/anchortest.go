// Package anchortest helps test implementations of anchor.CosignatureStore:
// TestCosignatureStore is the contract every store must pass (the ledger's
// bbolt store runs it too), and MemStore is the in-memory store the anchor's
// own tests use. NewOmniwitness and StartOmniwitness build (once per test
// binary) and run the real third-party witness with package
// internal/omniwitness, for the interop tests of this module; WitnessKey
// makes a witness key to cosign with in process. Nothing here
// is durable; do not use it in production.
package anchortest

import (
	"bytes"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/bankdoor/bankdoor/anchor"
)

// MemStore is anchor.MemStore, the in-memory store the anchor's own tests use.
type MemStore = anchor.MemStore

// NewMemStore returns an empty MemStore.
func NewMemStore() *MemStore { return anchor.NewMemStore() }

// TestCosignatureStore checks the anchor.CosignatureStore contract on the
// stores newStore returns; each call must return an empty store.
func TestCosignatureStore(t *testing.T, newStore func(t *testing.T) anchor.CosignatureStore) {
	t.Run("Empty", func(t *testing.T) { testEmpty(t, newStore(t)) })
	t.Run("PutGet", func(t *testing.T) { testPutGet(t, newStore(t)) })
	t.Run("LatestOnlyGrows", func(t *testing.T) { testLatest(t, newStore(t)) })
	t.Run("CosignaturesBySize", func(t *testing.T) { testBySize(t, newStore(t)) })
	t.Run("Concurrent", func(t *testing.T) { testConcurrent(t, newStore(t)) })
}

func line(witness string, size uint64) []byte {
	return fmt.Appendf(nil, "— %s c2lnbmF0dXJlIG9mIHNpemUg%d\n", witness, size)
}

func testEmpty(t *testing.T, s anchor.CosignatureStore) {
	if _, ok, err := s.Latest("w1"); ok || err != nil {
		t.Errorf("Latest on an empty store = ok %v, err %v; want false, nil", ok, err)
	}
	if _, ok, err := s.Get("w1", 1); ok || err != nil {
		t.Errorf("Get on an empty store = ok %v, err %v; want false, nil", ok, err)
	}
	if c, err := s.Cosignatures(1); len(c) != 0 || err != nil {
		t.Errorf("Cosignatures on an empty store = %q, %v; want none, nil", c, err)
	}
}

func testPutGet(t *testing.T, s anchor.CosignatureStore) {
	mustPut(t, s, "w1", 5, line("w1", 5))
	mustPut(t, s, "w1", 5, line("w1", 55)) // replaces
	c, ok, err := s.Get("w1", 5)
	if err != nil || !ok || !bytes.Equal(c, line("w1", 55)) {
		t.Errorf("Get(w1, 5) = %q, %v, %v; want the last Put %q", c, ok, err, line("w1", 55))
	}
	if _, ok, _ := s.Get("w2", 5); ok {
		t.Error("Get(w2, 5) found a cosignature only w1 made")
	}
	if _, ok, _ := s.Get("w1", 6); ok {
		t.Error("Get(w1, 6) found a cosignature only made for size 5")
	}
}

func testLatest(t *testing.T, s anchor.CosignatureStore) {
	for _, size := range []uint64{3, 9, 4} {
		mustPut(t, s, "w1", size, line("w1", size))
	}
	mustPut(t, s, "w2", 0, line("w2", 0))
	if got, ok, err := s.Latest("w1"); got != 9 || !ok || err != nil {
		t.Errorf("Latest(w1) after Put 3, 9, 4 = %d, %v, %v; want 9, true, nil", got, ok, err)
	}
	if got, ok, err := s.Latest("w2"); got != 0 || !ok || err != nil {
		t.Errorf("Latest(w2) after Put 0 = %d, %v, %v; want 0, true, nil", got, ok, err)
	}
}

func testBySize(t *testing.T, s anchor.CosignatureStore) {
	mustPut(t, s, "w1", 7, line("w1", 7))
	mustPut(t, s, "w2", 7, line("w2", 7))
	mustPut(t, s, "w3", 8, line("w3", 8))
	got, err := s.Cosignatures(7)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(got, bytes.Compare)
	want := [][]byte{line("w1", 7), line("w2", 7)}
	if !slices.EqualFunc(got, want, bytes.Equal) {
		t.Errorf("Cosignatures(7) = %q; want %q", got, want)
	}
}

func testConcurrent(t *testing.T, s anchor.CosignatureStore) {
	var wg sync.WaitGroup
	for i := range 8 {
		w := fmt.Sprintf("w%d", i)
		wg.Go(func() {
			for size := range uint64(20) {
				if err := s.Put(w, size, line(w, size)); err != nil {
					t.Error(err)
				}
				_, _, _ = s.Latest(w)
				_, _ = s.Cosignatures(size)
			}
		})
	}
	wg.Wait()
	if c, _ := s.Cosignatures(19); len(c) != 8 {
		t.Errorf("after 8 concurrent writers, Cosignatures(19) has %d entries; want 8", len(c))
	}
}

func mustPut(t *testing.T, s anchor.CosignatureStore, w string, size uint64, c []byte) {
	t.Helper()
	if err := s.Put(w, size, c); err != nil {
		t.Fatalf("Put(%s, %d): %v", w, size, err)
	}
}
