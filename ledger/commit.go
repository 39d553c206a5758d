package ledger

import (
	"errors"
	"fmt"
	"time"

	"github.com/transparency-dev/merkle/compact"

	"github.com/bankdoor/bankdoor/ledger/internal/store"
)

// commitLoop is the committer: it takes the queued requests, up to
// maxBatch receipts at a time, and commits each group in one durable
// transaction with one signed checkpoint. It returns when reqs is closed
// and drained.
//
// In a shared store it also takes on, every refreshEvery and when kicked
// (see awaitSize), what other ledger servers appended (see refresh).
func (l *Log) commitLoop() {
	defer close(l.done)
	var tick <-chan time.Time
	if l.store.Shared() {
		t := time.NewTicker(refreshEvery)
		defer t.Stop()
		tick = t.C
	}
	var next *request
	for {
		if next == nil {
			select {
			case r, ok := <-l.reqs:
				if !ok {
					return
				}
				next = r
			case <-l.kick:
				l.refresh()
				continue
			case <-tick:
				l.refresh()
				continue
			}
		}
		var batch []*request
		batch, next = l.collect(next)
		l.commit(batch)
	}
}

// collect returns first and the requests already waiting behind it, up to
// maxBatch receipts in all, and the waiting request that did not fit. It
// never waits for more: the requests that come while a batch commits
// (its fsyncs) make the next batch.
func (l *Log) collect(first *request) (batch []*request, next *request) {
	batch = []*request{first}
	n := len(first.items)
	for n < l.maxBatch {
		var r *request
		var ok bool
		select {
		case r, ok = <-l.reqs:
		default:
		}
		if !ok { // none waiting, or reqs is closed
			return batch, nil
		}
		if n+len(r.items) > l.maxBatch {
			return batch, r
		}
		batch = append(batch, r)
		n += len(r.items)
	}
	return batch, nil
}

// commit stores the requests of batch that extend their chains, in one
// transaction, and answers every request once it is durable.
func (l *Log) commit(batch []*request) {
	b := &batchState{size: l.size, heads: map[string]Head{}, leaves: map[[32]byte]uint64{}, pending: l.index.pending}
	results := make([]result, len(batch))
	var st treeState
	start := time.Now()
	var prepared time.Duration
	err := l.store.Update(func(tx store.Tx) error {
		defer func() { prepared = time.Since(start) }()
		if err := l.catchUp(tx); err != nil {
			return err
		}
		b.tx, b.size = tx, l.size
		if err := b.readHeads(batch); err != nil {
			return err
		}
		for i, r := range batch {
			results[i] = b.apply(r)
			if errors.Is(results[i].err, ErrStorage) {
				return results[i].err // the whole batch fails
			}
		}
		if len(b.added) == 0 {
			return errNothingNew
		}
		var err error
		st, err = l.write(tx, b)
		return err
	})
	switch {
	case errors.Is(err, errNothingNew):
	case err != nil:
		l.logger.Error("ledger commit failed", "file", l.path, "receipts", len(b.added), "err", err)
		if !isKind(err) {
			err = fmt.Errorf("%w: %s: commit: %w", ErrStorage, l.path, err)
		}
		for i := range results {
			if results[i].err == nil {
				results[i] = result{err: err}
			}
		}
	default:
		l.stats.commits.Add(1)
		l.stats.receipts.Add(uint64(len(b.added)))
		l.stats.prepare.Add(int64(prepared))
		took := time.Since(start)
		l.stats.total.Add(int64(took))
		first := l.size
		l.committed(b, st)
		if l.opts.OnCommit != nil {
			entries := make([][]byte, len(b.added))
			for i, it := range b.added {
				entries[i] = it.data
			}
			l.opts.OnCommit(Commit{First: first, Entries: entries, Took: took})
		}
	}
	for i, r := range batch {
		r.done <- results[i]
	}
}

// errShrunk is wrapped by the ErrStorage error of an Append when the
// stored log is smaller than this Log last saw it.
var errShrunk = errors.New("the stored log is smaller than this ledger server last saw it")

// refreshEvery is how often the committer of a log in a shared store
// looks for what other ledger servers appended while it appends nothing.
const refreshEvery = time.Second

// catchUp makes the committer's tree the stored one before a commit. In
// a bbolt file it always is: the file's lock keeps other processes out.
// In a shared store (PostgreSQL) other ledger servers may have appended
// since this one last committed, and so may a commit of this one whose
// answer was lost. The store's Update runs under the database's writer
// lock, so the size read here stays the stored one until this commit
// ends: the committer reloads the stored tree, so the batch goes on top
// of it and each tree size is signed once, by the server that committed it.
func (l *Log) catchUp(tx store.Tx) error {
	size, err := storedSize(tx)
	if err != nil {
		return fmt.Errorf("%w: %s: read size: %w", ErrStorage, l.path, err)
	}
	if size == l.size {
		return nil
	}
	return l.reload(tx)
}

// reload takes on the stored tree of a shared store that another
// process appended to: its compact range, size, checkpoint and leaf
// index; it publishes the checkpoint. Only the committer calls it.
func (l *Log) reload(tx store.Tx) error {
	if !l.store.Shared() {
		return fmt.Errorf("%w: %s: the stored size is not %d, the one this process committed; another process wrote to the file",
			ErrStorage, l.path, l.size)
	}
	st, err := readState(tx)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrStorage, l.path, err)
	}
	switch {
	case st.size < l.size:
		return fmt.Errorf("%w: %s: %w (stored size %d, last seen %d); was the database restored from a backup? run ledger fsck",
			ErrStorage, l.path, errShrunk, st.size, l.size)
	case !signedBy(st.note, l.opts.Signer.Name(), l.opts.Signer.KeyHash()):
		return fmt.Errorf("%w: %w: %s: the stored checkpoint of size %d is not signed by this log key %s; was another log's database restored into it?",
			ErrStorage, ErrOtherLog, l.path, st.size, keyName(l.opts.Signer.Name(), l.opts.Signer.KeyHash()))
	}
	if err := l.index.reload(tx, st.size); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrStorage, l.path, err)
	}
	l.rng, l.size = st.rng, st.size
	l.publish(published{note: st.note, size: st.size, at: time.Now()})
	return nil
}

// refresh takes on what other ledger servers appended to a shared store,
// so that the checkpoint and the reads of a server that appends nothing
// itself follow the log. A failure is logged once until refresh works
// again; the next commit or refresh tries again.
func (l *Log) refresh() {
	err := l.store.View(l.catchUp)
	switch {
	case err == nil:
		l.refreshErr = ""
	case err.Error() != l.refreshErr:
		l.refreshErr = err.Error()
		l.logger.Warn("cannot read what other ledger servers appended; this one serves the log as of its last checkpoint and tries again",
			"db", l.path, "size", l.size, "err", err)
	}
}

// write stores the accepted receipts of b, their nodes, the part of the
// pending leaf index that is due (see leafIndexer) and the agents' new
// heads, and signs and stores the new checkpoint.
func (l *Log) write(tx store.Tx, b *batchState) (treeState, error) {
	rng, err := cloneRange(l.rng)
	if err != nil {
		return treeState{}, err
	}
	var putErr error
	visit := func(id compact.NodeID, h []byte) {
		if putErr == nil {
			putErr = tx.PutNode(id, h)
		}
	}
	for i, it := range b.added {
		if err := tx.PutEntry(l.size+uint64(i), it.data); err != nil {
			return treeState{}, err
		}
		if err := rng.Append(it.leaf[:], visit); err != nil {
			return treeState{}, err
		}
	}
	if putErr != nil {
		return treeState{}, putErr
	}
	if b.flush, err = l.index.flush(tx, l.size, b.added); err != nil {
		return treeState{}, err
	}
	for k, h := range b.heads {
		if err := tx.PutHead(k, store.Head(h)); err != nil {
			return treeState{}, err
		}
	}
	return l.writeCheckpoint(tx, rng)
}

// committed takes on the durable commit of b, which made the tree st:
// its leaves join the pending leaf index before the checkpoint covering
// them is published.
func (l *Log) committed(b *batchState, st treeState) {
	l.index.committed(b.flush, b.added, l.size)
	l.rng, l.size = st.rng, st.size
	l.publish(published{note: st.note, size: st.size, at: time.Now()})
}

// writeCheckpoint signs and stores the checkpoint for rng.
func (l *Log) writeCheckpoint(tx store.Tx, rng *compact.Range) (treeState, error) {
	root, err := rootOf(rng)
	if err != nil {
		return treeState{}, err
	}
	cp, err := signCheckpoint(l.opts.Signer, l.opts.Origin, rng.End(), root)
	if err != nil {
		return treeState{}, err
	}
	if err := tx.SetMeta(store.MetaSize, store.IndexKey(rng.End())); err != nil {
		return treeState{}, err
	}
	if err := tx.SetMeta(store.MetaCheckpoint, cp); err != nil {
		return treeState{}, err
	}
	return treeState{size: rng.End(), note: cp, rng: rng}, nil
}

// batchState is what the requests of one batch accepted so far add to
// the stored log.
type batchState struct {
	tx      store.Tx
	size    uint64 // stored size before the batch
	added   []item
	heads   map[string]Head
	leaves  map[[32]byte]uint64
	pending *pendingLeaves        // committed leaves the store's index may lack
	flush   indexFlush            // what write put in the store's index
	stored  map[string]store.Head // the stored heads of the batch's agents, read at once; nil: read each
}

// readHeads reads the stored heads of the agents of batch in one read.
func (b *batchState) readHeads(batch []*request) error {
	seen := map[string]bool{}
	var ids []string
	for _, r := range batch {
		for _, it := range r.items {
			if !seen[it.keyID] {
				seen[it.keyID] = true
				ids = append(ids, it.keyID)
			}
		}
	}
	heads, err := b.tx.Heads(ids)
	if err != nil {
		return fmt.Errorf("%w: read heads: %w", ErrStorage, err)
	}
	b.stored = heads
	return nil
}

// apply checks req against the log as the earlier requests of the batch
// leave it, and keeps its receipts only if every one passes.
func (b *batchState) apply(req *request) result {
	if len(req.items) == 1 {
		// Nothing to undo if the one receipt fails: place stages into b
		// only what passes.
		idx, err := b.place(b, req.items[0])
		if err != nil {
			return result{err: err}
		}
		return result{indexes: []uint64{idx}}
	}
	staged := &batchState{tx: b.tx, size: b.size + uint64(len(b.added)),
		heads: map[string]Head{}, leaves: map[[32]byte]uint64{}, pending: b.pending}
	indexes := make([]uint64, len(req.items))
	for i, it := range req.items {
		idx, err := b.place(staged, it)
		if err != nil {
			return result{err: err}
		}
		indexes[i] = idx
	}
	b.added = append(b.added, staged.added...)
	for k, h := range staged.heads {
		b.heads[k] = h
	}
	for k, v := range staged.leaves {
		b.leaves[k] = v
	}
	return result{indexes: indexes}
}

// place returns it's existing index if the log holds it, or stages it in
// s if it extends its agent's chain.
//
// Only a receipt whose seq is at most its agent's head seq can already be
// in the log: every stored receipt of a key has a seq at most its head's,
// and the leaf hash covers key_id and seq. So the leaf index is read only
// for those (a retry, or a fork the chain check refuses); a receipt that
// may extend the chain needs no index read.
func (b *batchState) place(s *batchState, it item) (uint64, error) {
	head, found, err := b.head(s, it.keyID)
	if err != nil {
		return 0, err
	}
	if found && it.seq <= head.Seq {
		idx, stored, err := b.leafIndex(s, it.leaf)
		if err != nil || stored {
			return idx, err
		}
	}
	if err := chainError(it, head, found); err != nil {
		return 0, err
	}
	idx := s.size + uint64(len(s.added))
	s.added = append(s.added, it)
	s.heads[it.keyID] = Head{Seq: it.seq, SHA256: it.sha, Index: idx}
	s.leaves[it.leaf] = idx
	return idx, nil
}

// leafIndex looks up a leaf hash in s, then the batch, then the pending
// leaf index, then the store.
func (b *batchState) leafIndex(s *batchState, leaf [32]byte) (uint64, bool, error) {
	if i, ok := s.leaves[leaf]; ok {
		return i, true, nil
	}
	if i, ok := b.leaves[leaf]; ok {
		return i, true, nil
	}
	if i, ok := b.pending.get(leaf[:]); ok {
		return i, true, nil
	}
	i, ok, err := b.tx.LeafIndex(leaf[:])
	if err != nil {
		return 0, false, fmt.Errorf("%w: read leaf index: %w", ErrStorage, err)
	}
	return i, ok, nil
}

// head looks up an agent's head in s, then the batch, then the store.
func (b *batchState) head(s *batchState, keyID string) (Head, bool, error) {
	if h, ok := s.heads[keyID]; ok {
		return h, true, nil
	}
	if h, ok := b.heads[keyID]; ok {
		return h, true, nil
	}
	if b.stored != nil {
		h, ok := b.stored[keyID]
		return Head(h), ok, nil
	}
	h, ok, err := b.tx.Head(keyID)
	if err != nil {
		return Head{}, false, fmt.Errorf("%w: read head of %s: %w", ErrStorage, keyID, err)
	}
	return Head(h), ok, nil
}
