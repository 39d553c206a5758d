package ledger

import (
	"context"
	"sync"
	"testing"

	"github.com/bankdoor/bankdoor/ledger/internal/store"
)

// leavesFrom reads meta "leaves_from" of an open log.
func (tl *testLog) leavesFrom(t *testing.T) uint64 {
	t.Helper()
	var from uint64
	err := tl.store.View(func(tx store.Tx) error {
		b, err := tx.Meta(store.MetaLeavesFrom)
		if err != nil {
			return err
		}
		from, err = store.ParseIndex(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return from
}

// indexedLeaves counts the leaves in the store's leaf index.
func (tl *testLog) indexedLeaves(t *testing.T) int {
	t.Helper()
	n := 0
	if err := tl.store.View(func(tx store.Tx) error {
		return tx.ForEachLeaf(func([]byte, uint64) error { n++; return nil })
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestLeafIndexLags appends through many rotations of a small lag, in
// requests of several sizes: every receipt is found by leaf hash at its
// index after each Append, before and after a reopen; retries get their
// indexes; pending never holds more than lag plus one batch; the store's
// index and "leaves_from" advance; and Fsck finds the file consistent.
func TestLeafIndexLags(t *testing.T) {
	t.Parallel()
	const lag, maxBatch = 40, 16
	as := []*agent{newAgent(1), newAgent(2), newAgent(3)}
	tl := openTestLog(t, maxBatch, as...)
	tl.Close()
	tl.indexLag = lag
	tl.reopen(t)
	var leaves [][]byte // by index
	check := func(t *testing.T) {
		t.Helper()
		for i, leaf := range leaves {
			if got, err := tl.LeafIndex(leaf); err != nil || got != uint64(i) {
				t.Fatalf("LeafIndex(leaf %d) = %d, %v", i, got, err)
			}
		}
	}
	var sent [][]byte
	maxPending := 0
	for round := range 60 {
		var req [][]byte
		for k := range round%maxBatch + 1 {
			req = append(req, as[(round+k)%len(as)].Next(t))
		}
		idx := tl.mustAppend(t, req...)
		for i, r := range req {
			if idx[i] != uint64(len(leaves)) {
				t.Fatalf("round %d: receipt %d stored at %d, want %d", round, i, idx[i], len(leaves))
			}
			leaves = append(leaves, hasher.HashLeaf(r))
		}
		sent = append(sent, req...)
		maxPending = max(maxPending, tl.index.pending.len())
		check(t)
		if round%7 == 0 { // a retry of an older receipt, found wherever its index is
			if got := tl.mustAppend(t, sent[round]); got[0] != uint64(round) {
				t.Fatalf("retry of receipt %d got %d", round, got[0])
			}
		}
	}
	if maxPending > lag+maxBatch {
		t.Errorf("pending held %d leaves; the bound is %d", maxPending, lag+maxBatch)
	}
	from, indexed := tl.leavesFrom(t), tl.indexedLeaves(t)
	if from == 0 || indexed < int(from) || indexed == len(leaves) {
		t.Errorf("after %d leaves: leaves_from %d, %d indexed; want the index to advance and lag", len(leaves), from, indexed)
	}
	if pending := tl.index.pending.len(); indexed+pending != len(leaves) {
		t.Errorf("%d indexed and %d pending for %d leaves", indexed, pending, len(leaves))
	}
	tl.Close()
	if _, err := Fsck(context.Background(), tl.path, testVerifier(t)); err != nil {
		t.Fatalf("Fsck with a lagging index: %v", err)
	}
	tl.reopen(t)
	if got := tl.index.pending.len(); got+indexed != len(leaves) {
		t.Errorf("after reopening, %d pending, want %d", got, len(leaves)-indexed)
	}
	check(t)
	for i, r := range sent {
		if got := tl.mustAppend(t, r); got[0] != uint64(i) {
			t.Fatalf("after reopening, retry of receipt %d got %d", i, got[0])
		}
	}
}

// TestLeafIndexWhileCommitting looks up every acknowledged receipt by leaf
// hash while appenders keep the committer writing the index (lag 8): a
// leaf whose Append returned, so covered by a published checkpoint, is
// never missing, whether it is pending, being written, or written.
func TestLeafIndexWhileCommitting(t *testing.T) {
	t.Parallel()
	as := []*agent{newAgent(1), newAgent(2), newAgent(3), newAgent(4)}
	tl := openTestLog(t, 0, as...)
	tl.Close()
	tl.indexLag = 8
	tl.reopen(t)
	type acked struct {
		leaf  []byte
		index uint64
	}
	ch := make(chan acked, 64)
	var appenders, readers sync.WaitGroup
	for _, a := range as {
		appenders.Go(func() {
			for range 150 {
				r := a.Next(t)
				idx, err := tl.Append(context.Background(), [][]byte{r})
				if err != nil {
					t.Error(err)
					return
				}
				ch <- acked{hasher.HashLeaf(r), idx[0]}
			}
		})
	}
	var mu sync.Mutex
	var seen []acked
	for range 2 {
		readers.Go(func() {
			for a := range ch {
				mu.Lock()
				seen = append(seen, a)
				all := append([]acked(nil), seen...)
				mu.Unlock()
				for _, s := range all[max(0, len(all)-32):] { // the newest, the likeliest in flight
					if got, err := tl.LeafIndex(s.leaf); err != nil || got != s.index {
						t.Errorf("LeafIndex of acknowledged leaf %d = %d, %v", s.index, got, err)
					}
				}
			}
		})
	}
	appenders.Wait()
	close(ch)
	readers.Wait()
	if n := tl.indexedLeaves(t); n == 0 || n == len(seen) {
		t.Errorf("%d of %d leaves indexed in the store; want the index written, and lagging", n, len(seen))
	}
}
