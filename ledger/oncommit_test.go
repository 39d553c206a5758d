package ledger

import (
	"bytes"
	"sync"
	"testing"
)

// TestOnCommit: Options.OnCommit hears of every receipt the log adds,
// with its index, once, after the checkpoint covering it is published; a
// re-sent receipt (stored already) and a refused one are not reported.
// The event stream (ledger serve --events) relies on all three.
func TestOnCommit(t *testing.T) {
	t.Parallel()
	a, b := newAgent(1), newAgent(2)
	tl := openTestLog(t, 0, a, b)
	var mu sync.Mutex
	got := map[uint64][]byte{}
	var sizes []uint64 // the log's size when the hook ran
	tl.Close()
	tl.opts.OnCommit = func(c Commit) {
		mu.Lock()
		defer mu.Unlock()
		for i, f := range c.Entries {
			if _, dup := got[c.First+uint64(i)]; dup {
				t.Errorf("index %d reported twice", c.First+uint64(i))
			}
			got[c.First+uint64(i)] = bytes.Clone(f)
		}
		sizes = append(sizes, tl.Size())
	}
	tl.reopen(t)
	var want [][]byte
	for range 3 {
		batch := append(a.Chain(t, 2), b.Chain(t, 3)...)
		tl.mustAppend(t, batch...)
		want = append(want, batch...)
	}
	tl.mustAppend(t, want[0], want[1]) // stored already
	a.Next(t)                          // never appended: the next one does not extend a's chain
	if _, err := tl.Append(t.Context(), [][]byte{a.Next(t)}); err == nil {
		t.Fatal("a receipt out of its chain was accepted")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != len(want) {
		t.Fatalf("%d receipts reported, want %d", len(got), len(want))
	}
	for i, w := range want {
		if !bytes.Equal(got[uint64(i)], w) {
			t.Fatalf("index %d: reported %s, want %s", i, got[uint64(i)], w)
		}
	}
	for i, s := range sizes {
		if s != uint64(5*(i+1)) {
			t.Fatalf("hook %d ran at size %d, want %d (after the checkpoint is published)", i, s, 5*(i+1))
		}
	}
}
