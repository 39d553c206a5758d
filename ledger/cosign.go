package ledger

import (
	"fmt"

	"github.com/bankdoor/bankdoor/ledger/internal/store"
)

// CosignatureStore keeps witness cosignatures in the log's bbolt file
// (buckets cosignatures and witnesses; see the package doc). It
// implements anchor.CosignatureStore: the anchoring loop stores what it
// collects here, and the RPC service serves it with the checkpoint. Put
// is durable when it returns, like Append. The store takes lines as given:
// callers verify them over the log's checkpoint of that size first (the
// anchor does, and so does the RPC's AddCosignature, with CheckpointAt).
// A witness is named by its key name; the name must not be empty.
type CosignatureStore struct{ l *Log }

// CosignatureStore returns the store of the log's witness cosignatures.
func (l *Log) CosignatureStore() *CosignatureStore { return &CosignatureStore{l} }

// Put records lines as witness's cosignature of the checkpoint of size,
// replacing any earlier one, and raises the witness's Latest to size. It
// wakes the channels CosignatureAdded returned.
func (c *CosignatureStore) Put(witness string, size uint64, lines []byte) error {
	l := c.l
	l.closeMu.RLock() // Close waits for a Put in progress
	defer l.closeMu.RUnlock()
	if l.closed {
		return fmt.Errorf("%w: storing %s's cosignature of size %d", ErrClosed, witness, size)
	}
	err := l.store.Update(func(tx store.Tx) error {
		if err := tx.PutCosignature(size, witness, lines); err != nil {
			return err
		}
		latest, ok, err := tx.WitnessSize(witness)
		if err != nil || (ok && latest >= size) {
			return err
		}
		return tx.PutWitnessSize(witness, size)
	})
	if err != nil {
		return fmt.Errorf("%w: %s: storing %s's cosignature of size %d: %w", ErrStorage, l.path, witness, size, err)
	}
	l.mu.Lock()
	close(l.cosigned)
	l.cosigned = make(chan struct{})
	l.mu.Unlock()
	return nil
}

// Get returns witness's cosignature of size; ok is false if none is stored.
func (c *CosignatureStore) Get(witness string, size uint64) (lines []byte, ok bool, err error) {
	err = c.view(func(tx store.Tx) error {
		lines, err = tx.Cosignature(size, witness)
		return err
	})
	return lines, lines != nil, err
}

// Latest returns the largest size witness has cosigned; ok is false if it
// has cosigned none.
func (c *CosignatureStore) Latest(witness string) (size uint64, ok bool, err error) {
	err = c.view(func(tx store.Tx) error {
		size, ok, err = tx.WitnessSize(witness)
		return err
	})
	return size, ok, err
}

// Cosignatures returns every witness's cosignature of size, in witness
// name order.
func (c *CosignatureStore) Cosignatures(size uint64) ([][]byte, error) {
	var out [][]byte
	err := c.view(func(tx store.Tx) error {
		return tx.ForEachCosignature(size, func(_ string, lines []byte) error {
			out = append(out, append([]byte(nil), lines...))
			return nil
		})
	})
	return out, err
}

// view reads the store unless the log is closed (ErrClosed).
func (c *CosignatureStore) view(fn func(store.Tx) error) error {
	c.l.closeMu.RLock()
	defer c.l.closeMu.RUnlock()
	if c.l.closed {
		return fmt.Errorf("%w: reading cosignatures", ErrClosed)
	}
	return c.l.view(fn)
}

// CosignatureAdded returns a channel that is closed when the next
// cosignature is stored (or the log is closed): a watcher of the
// checkpoint can then serve it with one more cosignature.
func (l *Log) CosignatureAdded() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cosigned
}

// CheckpointAt returns the log's signed checkpoint of size, for any size
// from 0 to Size(): the note the log signed when it had size entries
// (Ed25519 note signatures are deterministic, so it is byte for byte the
// note served then, log signature only). A witness's cosignature of size
// must verify over it. It is ErrRange beyond the log's size.
func (l *Log) CheckpointAt(size uint64) ([]byte, error) {
	var root []byte
	err := l.view(func(tx store.Tx) error {
		cur, err := storedSize(tx)
		if err != nil {
			return err
		}
		if size > cur {
			return fmt.Errorf("%w: no checkpoint of size %d: the log has %d entries", ErrRange, size, cur)
		}
		if root, err = storedRoot(tx, size); err != nil {
			return fmt.Errorf("%w: %w", ErrStorage, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return signCheckpoint(l.opts.Signer, l.opts.Origin, size, root)
}

// fsckCosignatures checks the witnesses bucket against a tree of size
// entries: no witness can have cosigned a larger tree, and each one's
// latest cosignature is stored. A witness size beyond the tree means
// entries the witness saw are gone from this file.
func fsckCosignatures(tx store.Tx, size uint64) error {
	return tx.ForEachWitness(func(w string, cosigned uint64) error {
		if cosigned > size {
			return corrupt("witness %s cosigned the checkpoint of size %d but the file's tree has %d entries: entries the witness saw are gone (a truncated file, or one restored from an older copy)",
				w, cosigned, size)
		}
		lines, err := tx.Cosignature(cosigned, w)
		if err != nil {
			return err
		}
		if lines == nil {
			return corrupt("witness %s has latest size %d but no cosignature of that size is stored", w, cosigned)
		}
		return nil
	})
}
