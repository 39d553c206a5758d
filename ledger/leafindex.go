package ledger

import (
	"bytes"
	"fmt"
	"slices"
	"sync"

	"github.com/transparency-dev/merkle/compact"

	"github.com/bankdoor/bankdoor/ledger/internal/store"
)

// The leaf index (bucket "leaves": leaf hash -> leaf index) is written
// behind the log. Its keys are random, so a batch writing its own leaf
// hashes dirties about one page of the index per receipt once the index
// is larger than a batch: most of the bytes a commit writes. Instead the
// committer keeps the leaves it committed but has not indexed in memory
// (pending) and writes them in bulk, in hash order, many keys per page.
//
// Nothing is lost in a crash: the level-0 nodes, which every commit
// stores, are the leaf hashes by index, and meta "leaves_from" says that
// every leaf below it is in the bucket. Open puts the leaves from there
// on that the bucket lacks back into pending.
//
// Once pending holds more than lag leaves, a rotation begins: each
// commit also writes the pending leaves of the next slices of the hash
// space (a slice is the leaves whose hash begins with one byte), one slice
// at least and as many as it takes to write at least as many leaves as the
// commit adds, so that pending does not grow while a rotation lasts and
// no commit stalls on one big write. When the last slice is written, every
// leaf committed before the rotation began is in the bucket, and
// "leaves_from" moves up to the log's size at its start; the next slice
// starts a new rotation if pending still holds more than lag leaves. So
// pending holds at most lag leaves plus one batch: 32768 + 4096 with the
// defaults, about 3 MB of Go heap (some 80 bytes a leaf).
//
// A slice's write puts about lag·K/N keys on each page it dirties, for an
// index of N leaves with K keys a page (about 50), so the saving fades as
// the index outgrows lag·K, some 1.5 million leaves with the defaults.
//
// Readers look in pending first, then in the bucket in a new read
// transaction. The committer adds a batch's leaves to pending before it
// publishes the checkpoint covering them, and removes written leaves
// only after the transaction writing them is durable, so a leaf covered
// by a published checkpoint is always in one or the other.

// defaultIndexLag is the lag of Open's logs in a bbolt file.
const defaultIndexLag = 32768

// In a shared store (PostgreSQL, see store.Store.Shared) the leaf index is
// not deferred: each commit writes its own leaves (and any pending ones, of
// a database written by an older bankdoor) and moves "leaves_from" up to
// the new size. Several ledger servers may append to one database, and a
// leaf another server committed must be found by every server, none of
// which holds the others' pending leaves. A B-tree index also takes random
// keys at no great cost, which is what the deferral saves bbolt.

// indexSlices is the number of slices of the hash space a rotation
// writes, by the first byte of the leaf hash.
const indexSlices = 256

// sliceOf returns the slice of the hash space leaf falls in.
func sliceOf(leaf []byte) int { return int(leaf[0]) }

// pendingLeaves holds the committed leaves the bucket may lack, by
// slice of the hash space. The committer is its only writer.
type pendingLeaves struct {
	mu sync.RWMutex
	m  [indexSlices]map[[32]byte]uint64
	n  int
}

func newPendingLeaves() *pendingLeaves {
	p := &pendingLeaves{}
	for i := range p.m {
		p.m[i] = map[[32]byte]uint64{}
	}
	return p
}

// get returns the index of a pending leaf.
func (p *pendingLeaves) get(leaf []byte) (uint64, bool) {
	if len(leaf) != 32 {
		return 0, false
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	i, ok := p.m[sliceOf(leaf)][[32]byte(leaf)]
	return i, ok
}

// len returns the number of pending leaves.
func (p *pendingLeaves) len() int {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.n
}

// update removes written and adds the leaves of added, the leaves from
// index first on.
func (p *pendingLeaves) update(written []pendingLeaf, added []item, first uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, w := range written {
		m := p.m[sliceOf(w.leaf[:])]
		if i, ok := m[w.leaf]; ok && i == w.index {
			delete(m, w.leaf)
			p.n--
		}
	}
	for i, it := range added {
		p.add(it.leaf, first+uint64(i))
	}
}

// add puts one leaf in pending; the caller holds mu or owns p alone.
func (p *pendingLeaves) add(leaf [32]byte, index uint64) {
	m := p.m[sliceOf(leaf[:])]
	if _, ok := m[leaf]; !ok {
		p.n++
	}
	m[leaf] = index
}

// appendSorted appends the pending leaves of slice s to out in hash order.
func (p *pendingLeaves) appendSorted(out []pendingLeaf, s int) []pendingLeaf {
	p.mu.RLock()
	defer p.mu.RUnlock()
	start := len(out)
	for leaf, i := range p.m[s] {
		out = append(out, pendingLeaf{leaf, i})
	}
	slices.SortFunc(out[start:], func(a, b pendingLeaf) int { return bytes.Compare(a.leaf[:], b.leaf[:]) })
	return out
}

type pendingLeaf struct {
	leaf  [32]byte
	index uint64
}

// leafIndexer is the committer's side of the deferred leaf index.
type leafIndexer struct {
	pending *pendingLeaves
	lag     int
	atOnce  bool   // a shared store: each commit indexes its own leaves
	from    uint64 // stored "leaves_from"
	next    int    // next slice of the rotation under way, 0 if none is
	mark    uint64 // the log's size when the rotation under way began
}

// indexFlush is what one commit writes to the bucket; the indexer takes
// it on once the commit is durable.
type indexFlush struct {
	written    []pendingLeaf
	next       int
	mark, from uint64
}

// flush writes the part of pending that is due in a commit adding
// leaves to a log of size leaves: nothing while no rotation is under way
// and pending holds at most lag leaves; else the next slices, at least one
// and until at least adding leaves are written, for one turn at most.
//
// In a shared store it writes every pending leaf and the added ones, the
// leaves from index size on, and "leaves_from" becomes the new size.
func (x *leafIndexer) flush(tx store.Tx, size uint64, added []item) (indexFlush, error) {
	f := indexFlush{next: x.next, mark: x.mark, from: x.from}
	switch n := x.pending.len(); {
	case x.atOnce:
		for s := range indexSlices {
			f.written = x.pending.appendSorted(f.written, s)
		}
		for i, it := range added {
			f.written = append(f.written, pendingLeaf{it.leaf, size + uint64(i)})
		}
		f.next, f.from = 0, size+uint64(len(added))
	case f.next == 0 && n <= x.lag:
		return f, nil
	}
	for s := 0; !x.atOnce && s < indexSlices && (s == 0 || len(f.written) < len(added)); s++ {
		if f.next == 0 { // a rotation begins
			f.mark = size
		}
		f.written = x.pending.appendSorted(f.written, f.next)
		if f.next = (f.next + 1) % indexSlices; f.next == 0 {
			f.from = f.mark // the rotation wrote every leaf below its mark
		}
	}
	for _, w := range f.written {
		if err := tx.PutLeafIndex(w.leaf[:], w.index); err != nil {
			return indexFlush{}, fmt.Errorf("%w: write leaf index: %w", ErrStorage, err)
		}
	}
	if f.from != x.from {
		if err := tx.SetMeta(store.MetaLeavesFrom, store.IndexKey(f.from)); err != nil {
			return indexFlush{}, fmt.Errorf("%w: write leaf index: %w", ErrStorage, err)
		}
	}
	return f, nil
}

// committed takes on f and adds added, the leaves from index first on,
// to pending (unless f indexed them), once the commit holding both is
// durable.
func (x *leafIndexer) committed(f indexFlush, added []item, first uint64) {
	if f.from >= first+uint64(len(added)) {
		added = nil
	}
	x.pending.update(f.written, added, first)
	x.next, x.mark, x.from = f.next, f.mark, f.from
}

// reload takes on the leaf index of a log of size leaves that another
// process appended to: its "leaves_from", and the leaves from there on
// that the bucket lacks.
func (x *leafIndexer) reload(tx store.Tx, size uint64) error {
	from, err := readLeavesFrom(tx, size)
	if err != nil {
		return err
	}
	if err := x.pending.load(tx, from, size); err != nil {
		return err
	}
	x.from, x.next, x.mark = from, 0, 0
	return nil
}

// loadLeafIndex reads "leaves_from" of a log of size leaves and puts the
// leaves from there on that the bucket lacks in pending.
func loadLeafIndex(tx store.Tx, size uint64, lag int, atOnce bool) (*leafIndexer, error) {
	from, err := readLeavesFrom(tx, size)
	if err != nil {
		return nil, err
	}
	x := &leafIndexer{pending: newPendingLeaves(), lag: lag, atOnce: atOnce, from: from}
	return x, x.pending.load(tx, x.from, size)
}

// readLeavesFrom reads meta "leaves_from" of a log of size leaves, which
// every log has.
func readLeavesFrom(tx store.Tx, size uint64) (uint64, error) {
	b, err := tx.Meta(store.MetaLeavesFrom)
	switch {
	case err != nil:
		return 0, err
	case b == nil:
		return 0, fmt.Errorf("meta %q is missing", store.MetaLeavesFrom)
	}
	return parseLeavesFrom(b, size)
}

// load puts the leaves of indexes from..size-1 that the bucket lacks in
// p, unless p holds them already.
func (p *pendingLeaves) load(tx store.Tx, from, size uint64) error {
	for start := from; start < size; start += loadChunk {
		ids := make([]compact.NodeID, min(loadChunk, size-start))
		for j := range ids {
			ids[j] = compact.NewNodeID(0, start+uint64(j))
		}
		hashes, err := nodeHashes(tx, ids)
		if err != nil {
			return err
		}
		_, indexed, err := tx.LeafIndexes(hashes)
		if err != nil {
			return err
		}
		p.mu.Lock()
		for j, h := range hashes {
			if !indexed[j] {
				p.add([32]byte(h), start+uint64(j))
			}
		}
		p.mu.Unlock()
	}
	return nil
}

// loadChunk is how many leaf hashes loadLeafIndex reads at a time.
const loadChunk = 1024

// parseLeavesFrom decodes meta "leaves_from" of a log of size leaves.
func parseLeavesFrom(b []byte, size uint64) (uint64, error) {
	from, err := store.ParseIndex(b)
	if err != nil {
		return 0, fmt.Errorf("meta %q: %w", store.MetaLeavesFrom, err)
	}
	if from > size {
		return 0, fmt.Errorf("meta %q is %d, beyond the tree size %d", store.MetaLeavesFrom, from, size)
	}
	return from, nil
}
