package ledger

import (
	"fmt"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"

	"github.com/bankdoor/bankdoor/ledger/internal/store"
)

// LeafIndex returns the index of the leaf with the RFC 6962 leaf hash
// (SHA-256 of 0x00 || receipt file). It is ErrNotFound if the log holds
// no such leaf and ErrInvalid if leafHash is not 32 bytes. Every leaf
// covered by a published checkpoint is found.
func (l *Log) LeafIndex(leafHash []byte) (uint64, error) {
	if len(leafHash) != hasher.Size() {
		return 0, fmt.Errorf("%w: leaf hash is %d bytes, want %d", ErrInvalid, len(leafHash), hasher.Size())
	}
	// Pending first: the committer drops a leaf from it only once the
	// transaction putting it in the store's index is durable, so a miss
	// here means the read transaction below sees the leaf if it was there.
	if i, ok := l.index.pending.get(leafHash); ok {
		return i, nil
	}
	var idx uint64
	err := l.read(func(tx store.Tx) error {
		i, ok, err := tx.LeafIndex(leafHash)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: no leaf with hash %x in the log", ErrNotFound, leafHash)
		}
		idx = i
		return nil
	})
	return idx, err
}

// InclusionProof returns the RFC 6962 audit path of leaf index in the
// tree of size, for any size from 1 to the current one. Its cost is
// O(log size) node reads. It is ErrRange unless index < size <= Size().
func (l *Log) InclusionProof(index, size uint64) ([][]byte, error) {
	var hashes [][]byte
	cur := l.Size() // no commit changes what the published checkpoint covers
	err := l.read(func(tx store.Tx) error {
		if size > cur || index >= size {
			return fmt.Errorf("%w: inclusion proof of leaf %d in tree size %d: want index < tree size <= %d, the latest checkpoint's size",
				ErrRange, index, size, cur)
		}
		nodes, err := proof.Inclusion(index, size)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrRange, err)
		}
		hashes, err = rehash(tx, nodes)
		return err
	})
	return hashes, err
}

// ConsistencyProof proves the tree of size from is a prefix of size to
// (RFC 6962 section 2.1.2). It is ErrRange unless from <= to <= Size().
// The proof is empty when from is 0 or equals to.
func (l *Log) ConsistencyProof(from, to uint64) ([][]byte, error) {
	var hashes [][]byte
	cur := l.Size() // no commit changes what the published checkpoint covers
	err := l.read(func(tx store.Tx) error {
		if from > to || to > cur {
			return fmt.Errorf("%w: consistency proof from tree size %d to %d: want from <= to <= %d, the latest checkpoint's size",
				ErrRange, from, to, cur)
		}
		if from == 0 { // SPEC: https://c2sp.org/tlog-witness: from size 0 the proof is empty
			hashes = [][]byte{}
			return nil
		}
		nodes, err := proof.Consistency(from, to)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrRange, err)
		}
		hashes, err = rehash(tx, nodes)
		return err
	})
	return hashes, err
}

// rehash fetches the nodes a proof needs and folds the ephemeral ones.
func rehash(tx store.Tx, nodes proof.Nodes) ([][]byte, error) {
	hashes, err := nodeHashes(tx, nodes.IDs)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStorage, err)
	}
	return nodes.Rehash(hashes, hasher.HashChildren)
}

// NodeHashes returns the stored hashes of the count nodes (level, start)
// to (level, start+count−1), each the root of the complete subtree over
// leaves index·2^level to (index+1)·2^level − 1: the hashes of a
// tlog-tiles tile (package ledger/tiles). They are read, not computed.
// It is ErrRange unless 1 <= count <= MaxEntries and every one of those
// subtrees is complete in the tree of Size().
func (l *Log) NodeHashes(level uint, start, count uint64) ([][]byte, error) {
	var hashes [][]byte
	cur := l.Size() // no commit changes what the published checkpoint covers
	err := l.read(func(tx store.Tx) error {
		nodes := uint64(0) // complete nodes at level
		if level < 64 {
			nodes = cur >> level
		}
		if count == 0 || count > MaxEntries || count > nodes || start > nodes-count {
			return fmt.Errorf("%w: %d node hashes from (level %d, index %d): want 1 to %d complete nodes of the tree of size %d, which has %d at that level",
				ErrRange, count, level, start, MaxEntries, cur, nodes)
		}
		ids := make([]compact.NodeID, count)
		for i := range ids {
			ids[i] = compact.NewNodeID(level, start+uint64(i))
		}
		var err error
		if hashes, err = nodeHashes(tx, ids); err != nil {
			return fmt.Errorf("%w: %w", ErrStorage, err)
		}
		return nil
	})
	return hashes, err
}

// Entries returns up to count receipt files from index start, at most
// MaxEntries and never past the log's size. It is ErrRange if count is 0
// or start is not below Size().
func (l *Log) Entries(start, count uint64) ([][]byte, error) {
	var out [][]byte
	cur := l.Size() // no commit changes what the published checkpoint covers
	err := l.read(func(tx store.Tx) error {
		if count == 0 || start >= cur {
			return fmt.Errorf("%w: entries from %d, count %d: want count > 0 and start < %d, the latest checkpoint's size",
				ErrRange, start, count, cur)
		}
		n := min(count, MaxEntries, cur-start)
		idx, data, err := tx.Entries(start, int(n))
		if err != nil {
			return err
		}
		for k, i := range idx {
			if i != start+uint64(k) {
				return fmt.Errorf("%w: entry %d is missing", ErrStorage, start+uint64(k))
			}
		}
		if uint64(len(data)) != n {
			return fmt.Errorf("%w: entry %d is missing", ErrStorage, start+uint64(len(data)))
		}
		out = data
		return nil
	})
	return out, err
}

// storedSize reads the committed tree size.
func storedSize(tx store.Tx) (uint64, error) {
	b, err := tx.Meta(store.MetaSize)
	if err != nil {
		return 0, err
	}
	return store.ParseIndex(b)
}
