package ledger

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	"github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/compact"
	"golang.org/x/mod/sumdb/note"

	"github.com/bankdoor/bankdoor/ledger/internal/store"
	"github.com/bankdoor/bankdoor/ledger/receipt"
)

// ErrCorrupt is wrapped by the error Fsck returns when the file is
// inconsistent.
var ErrCorrupt = errors.New("ledger file is inconsistent")

// FsckReport describes a ledger file that Fsck found consistent (or, with
// an error, the part it checked before the first inconsistency).
type FsckReport struct {
	Path       string
	Origin     string
	Size       uint64 // leaves checked
	Nodes      uint64 // stored tree nodes checked
	Agents     int    // agent heads checked
	Root       []byte // RFC 6962 root of the checked tree
	Checkpoint []byte // the stored signed checkpoint note
}

func (r *FsckReport) String() string {
	return fmt.Sprintf("origin %s, size %d, root %x, %d nodes, %d agents", r.Origin, r.Size, r.Root, r.Nodes, r.Agents)
}

// Fsck checks the ledger file at path without changing it. It opens the
// file read-only (and so fails while a process holds it open for
// writing), then recomputes everything derived from the entries: every
// leaf hash and its leaf-index record (which must exist below meta
// "leaves_from" and be right wherever it exists, with no extra ones),
// every complete tree node (each must be stored, with no extra ones),
// every agent's chain (seq 1, 2, ... and
// prev links, each receipt parsed strictly) and head, and the root and
// size of the stored checkpoint, whose signature must verify with
// logKey (the log's verifier key, whose name is its origin; it is
// required). The receipts' signatures are not checked: Fsck has no agent
// keys; verify them with bankdoor verify. The error names the first
// inconsistency and wraps ErrCorrupt; for a store a Copy did not finish,
// also ErrIncompleteCopy.
func Fsck(ctx context.Context, path string, logKey note.Verifier) (*FsckReport, error) {
	return FsckDB(ctx, path, "", logKey)
}

// FsckDB is Fsck of db, a bbolt file's path or a PostgreSQL database's
// URL (see Open), with password for the database (empty: PostgreSQL's
// usual sources). A PostgreSQL database is read in one snapshot, so it
// can be checked while ledger servers write to it.
func FsckDB(ctx context.Context, db, password string, logKey note.Verifier) (*FsckReport, error) {
	if logKey == nil {
		return nil, errors.New("ledger: Fsck needs the log's verifier key; load it with LoadVerifier")
	}
	s, path, err := openStore(db, Options{DBPassword: password}, true)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	rep := &FsckReport{Path: path}
	err = s.View(func(tx store.Tx) error {
		if err := checkCopied(tx); errors.Is(err, ErrIncompleteCopy) {
			return fmt.Errorf("%w: %w", ErrCorrupt, err)
		} else if err != nil {
			return err
		}
		return fsck(ctx, tx, rep, logKey)
	})
	if err != nil {
		return rep, fmt.Errorf("%s: %w", path, err)
	}
	return rep, nil
}

func fsck(ctx context.Context, tx store.Tx, rep *FsckReport, logKey note.Verifier) error {
	size, cp, err := fsckMeta(tx, rep, logKey)
	if err != nil {
		return err
	}
	from, err := readLeavesFrom(tx, size)
	if err != nil {
		return corrupt("%v", err)
	}
	f := &fscker{tx: tx, heads: map[string]Head{}, rng: rangeFactory().NewEmptyRange(0), leavesFrom: from}
	err = tx.ForEachEntry(0, func(i uint64, data []byte) error {
		if i%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		return f.entry(i, size, data)
	})
	if err == nil {
		err = f.check()
	}
	if err != nil {
		return err
	}
	if f.rng.End() != size {
		return corrupt("meta size is %d but entries stop at %d", size, f.rng.End())
	}
	rep.Size, rep.Nodes, rep.Agents = size, f.nodes, len(f.heads)
	if rep.Root, err = rootOf(f.rng); err != nil {
		return err
	}
	if cp.Size != size || !bytes.Equal(cp.Hash, rep.Root) {
		return corrupt("stored checkpoint has size %d and root %x; the entries give size %d and root %x",
			cp.Size, cp.Hash, size, rep.Root)
	}
	return f.finish(size)
}

// fsckMeta checks the meta keyspace and returns the stored size and the
// verified checkpoint's body.
func fsckMeta(tx store.Tx, rep *FsckReport, logKey note.Verifier) (uint64, log.Checkpoint, error) {
	version, err := tx.Meta(store.MetaVersion)
	if err != nil {
		return 0, log.Checkpoint{}, err
	}
	if string(version) != store.Version {
		return 0, log.Checkpoint{}, corrupt("storage format version is %q; this bankdoor checks only version %q",
			version, store.Version)
	}
	origin, _ := tx.Meta(store.MetaOrigin)
	rep.Origin = string(origin)
	b, _ := tx.Meta(store.MetaSize)
	size, err := store.ParseIndex(b)
	if err != nil {
		return 0, log.Checkpoint{}, corrupt("meta %q: %v", store.MetaSize, err)
	}
	rep.Checkpoint, _ = tx.Meta(store.MetaCheckpoint)
	cp, err := verifyStored(rep.Checkpoint, logKey)
	if err != nil {
		return 0, log.Checkpoint{}, corrupt("%v", err)
	}
	if cp.Origin != rep.Origin {
		return 0, log.Checkpoint{}, corrupt("stored checkpoint has origin %q, meta says %q", cp.Origin, rep.Origin)
	}
	return size, cp, nil
}

// fscker recomputes the log from its entries. It reads the leaf index
// and the stored nodes of fsckBatch entries at a time, so that a database
// takes a few queries per batch rather than a few per entry.
type fscker struct {
	tx         store.Tx
	rng        *compact.Range
	heads      map[string]Head
	nodes      uint64
	leavesFrom uint64 // every leaf below is in the leaf index
	indexed    uint64 // leaves found in the leaf index
	next       uint64 // the index the next entry must have
	batch      []fsckEntry
}

// fsckBatch is how many entries fscker checks together.
const fsckBatch = 512

// fsckEntry is an entry waiting in fscker's batch.
type fsckEntry struct {
	i    uint64
	data []byte
	leaf []byte
}

// entry takes entry i of a log of size leaves, checking the batch it
// completes.
func (f *fscker) entry(i, size uint64, data []byte) error {
	if i != f.next {
		return corrupt("entry %d is missing", f.next)
	}
	if i >= size {
		return corrupt("entry %d is beyond the stored size %d", i, size)
	}
	f.next++
	f.batch = append(f.batch, fsckEntry{i: i, data: slices.Clone(data), leaf: hasher.HashLeaf(data)})
	if len(f.batch) == fsckBatch {
		return f.check()
	}
	return nil
}

// check checks the batch of entries, in order: each one's leaf index
// entry, that it extends its agent's chain, and the tree nodes it
// completes. The first inconsistency is the error.
func (f *fscker) check() error {
	batch := f.batch
	f.batch = f.batch[:0]
	if len(batch) == 0 {
		return nil
	}
	leaves := make([][]byte, len(batch))
	for k, e := range batch {
		leaves[k] = e.leaf
	}
	indexes, indexed, err := f.tx.LeafIndexes(leaves)
	if err != nil {
		return err
	}
	type node struct {
		entry int // the position in batch of the entry that completed it
		id    compact.NodeID
		hash  []byte
	}
	var nodes []node
	var ids []compact.NodeID
	for k, e := range batch {
		err := f.rng.Append(e.leaf, func(id compact.NodeID, h []byte) {
			nodes, ids = append(nodes, node{k, id, slices.Clone(h)}), append(ids, id)
		})
		if err != nil {
			return err
		}
	}
	stored, err := f.tx.Nodes(ids)
	if err != nil {
		return err
	}
	n := 0
	for k, e := range batch {
		switch idx, ok := indexes[k], indexed[k]; {
		case !ok && e.i < f.leavesFrom:
			return corrupt("entry %d: its leaf hash %x is not in the leaf index, which holds every leaf below %d", e.i, e.leaf, f.leavesFrom)
		case ok && idx != e.i:
			return corrupt("entry %d: the leaf index maps its leaf hash %x to %d", e.i, e.leaf, idx)
		case ok:
			f.indexed++
		}
		if err := f.chain(e.i, e.data); err != nil {
			return err
		}
		for ; n < len(nodes) && nodes[n].entry == k; n++ {
			f.nodes++
			id := nodes[n].id
			switch {
			case stored[n] == nil:
				return corrupt("node (level %d, index %d) is missing", id.Level, id.Index)
			case !bytes.Equal(stored[n], nodes[n].hash):
				return corrupt("node (level %d, index %d) is %x, want %x", id.Level, id.Index, stored[n], nodes[n].hash)
			}
		}
	}
	return nil
}

// chain checks that entry i extends its agent's chain.
func (f *fscker) chain(i uint64, data []byte) error {
	r, err := receipt.Parse(data)
	if err != nil {
		return corrupt("entry %d is not a valid receipt: %v", i, err)
	}
	head, found := f.heads[r.KeyID]
	wantSeq, wantPrev := uint64(1), receipt.FirstPrev
	if found {
		wantSeq, wantPrev = head.Seq+1, hex.EncodeToString(head.SHA256[:])
	}
	if r.Seq != wantSeq || r.Prev != wantPrev {
		return corrupt("entry %d (seq %d, key_id %s) does not extend its agent's chain: want seq %d, prev %s",
			i, r.Seq, r.KeyID, wantSeq, wantPrev)
	}
	f.heads[r.KeyID] = Head{Seq: r.Seq, SHA256: receipt.Hash(data), Index: i}
	return nil
}

// finish checks that the leaf index, the nodes and the heads hold nothing
// beyond what the entries give, and that no witness cosigned more.
func (f *fscker) finish(size uint64) error {
	var leaves, nodes uint64
	if err := f.tx.ForEachLeaf(func([]byte, uint64) error { leaves++; return nil }); err != nil {
		return err
	}
	if leaves != f.indexed {
		return corrupt("the leaf index holds %d hashes; %d of the %d entries are in it", leaves, f.indexed, size)
	}
	if err := f.tx.ForEachNode(func(compact.NodeID, []byte) error { nodes++; return nil }); err != nil {
		return err
	}
	if nodes != f.nodes {
		return corrupt("%d nodes are stored, the entries give %d", nodes, f.nodes)
	}
	stored := 0
	err := f.tx.ForEachHead(func(k string, h store.Head) error {
		stored++
		if want, ok := f.heads[k]; !ok || want != Head(h) {
			return corrupt("head of key_id %s is seq %d, index %d; the entries give seq %d, index %d",
				k, h.Seq, h.Index, want.Seq, want.Index)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if stored != len(f.heads) {
		return corrupt("%d agent heads are stored, the entries give %d", stored, len(f.heads))
	}
	return fsckCosignatures(f.tx, size)
}

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}
