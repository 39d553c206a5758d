package ledger

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/bankdoor/bankdoor/ledger/receipt"
)

// item is one receipt that passed the checks that need no log state.
type item struct {
	data  []byte
	pos   int // position in its request
	keyID string
	seq   uint64
	prev  string
	leaf  [32]byte // RFC 6962 leaf hash of data
	sha   [32]byte // receipt hash: SHA-256 of data
}

// request is one Append call waiting for the committer.
type request struct {
	items []item
	done  chan result // buffered; the committer sends exactly once
}

type result struct {
	indexes []uint64
	err     error
}

// Append verifies and stores receipts in order and returns their leaf
// indexes once they are durable: the batch holding them is synced to disk
// and covered by a signed checkpoint. Either all are stored or none; the
// error names the position in the batch, the receipt's seq and key_id.
//
// Each receipt must be at most receipt.MaxSize bytes of a receipt that
// receipt.Parse accepts (else ErrInvalid), signed by an enrolled agent key
// (ErrUnknownKey; a bad signature is ErrInvalid), and extend that agent's
// chain: seq one more than its head's, prev the hex SHA-256 of its head
// receipt, or seq 1 and 64 zeros for an agent the log has not seen
// (ErrChain). A receipt already in the log is not stored again: Append
// returns its existing index, so a retried request is harmless. A request
// of more than Options.MaxBatch receipts is ErrInvalid.
//
// If ctx ends before the batch is durable, Append returns ctx's error and
// the receipts may or may not have been stored; sending them again tells.
func (l *Log) Append(ctx context.Context, receipts [][]byte) ([]uint64, error) {
	if len(receipts) > l.maxBatch {
		return nil, fmt.Errorf("%w: request holds %d receipts, over the limit of %d; send them in smaller requests",
			ErrInvalid, len(receipts), l.maxBatch)
	}
	if len(receipts) == 0 {
		return []uint64{}, nil
	}
	items, err := l.checkAll(receipts)
	if err != nil {
		return nil, err
	}
	req := &request{items: items, done: make(chan result, 1)}
	if err := l.enqueue(ctx, req); err != nil {
		return nil, err
	}
	select {
	case res := <-req.done:
		return res.indexes, res.err
	case <-ctx.Done():
		return nil, fmt.Errorf("append: %w (the receipts may or may not be stored; send them again to know)", ctx.Err())
	}
}

// enqueue hands req to the committer, unless the log is closed.
func (l *Log) enqueue(ctx context.Context, req *request) error {
	l.closeMu.RLock()
	defer l.closeMu.RUnlock()
	if l.closed {
		return ErrClosed
	}
	select {
	case l.reqs <- req:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("append: %w (nothing was stored)", ctx.Err())
	}
}

// parallelFrom is the request size from which checkAll spreads the
// signature checks over all CPUs.
const parallelFrom = 16

// checkAll checks every receipt of a request, on all CPUs for a large
// request, and returns the error of the first bad receipt by position.
func (l *Log) checkAll(receipts [][]byte) ([]item, error) {
	items := make([]item, len(receipts))
	if len(receipts) < parallelFrom { // on the caller's goroutine
		for i, r := range receipts {
			var err error
			if items[i], err = l.check(i, r); err != nil {
				return nil, err
			}
		}
		return items, nil
	}
	errs := make([]error, len(receipts))
	workers := min(runtime.GOMAXPROCS(0), len(receipts))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(receipts); i += workers {
				items[i], errs[i] = l.check(i, receipts[i])
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return items, nil
}

// check runs the checks that need no log state: size, strict parse,
// enrolled key, signature. pos is the receipt's position in the request.
func (l *Log) check(pos int, data []byte) (item, error) {
	if len(data) > receipt.MaxSize {
		return item{}, fmt.Errorf("%w: receipt %d is %d bytes, over the %d-byte limit; send receipt files unchanged",
			ErrInvalid, pos, len(data), receipt.MaxSize)
	}
	var seq uint64 // for the message if the signature fails
	r, err := receipt.Open(data, func(r *receipt.Receipt) (ed25519.PublicKey, error) {
		seq = r.Seq
		pub, ok := l.opts.Agents.Lookup(r.KeyID)
		if !ok {
			return nil, fmt.Errorf("%w: receipt %d (seq %d, key_id %s)", ErrUnknownKey, pos, r.Seq, r.KeyID)
		}
		return pub, nil
	})
	switch {
	case errors.Is(err, ErrUnknownKey):
		return item{}, err
	case errors.Is(err, receipt.ErrSignature):
		return item{}, fmt.Errorf("%w: receipt %d (seq %d): %w", ErrInvalid, pos, seq, err)
	case err != nil:
		return item{}, fmt.Errorf("%w: receipt %d: %w; send the receipt file's bytes unchanged", ErrInvalid, pos, err)
	}
	var leaf [32]byte
	copy(leaf[:], hasher.HashLeaf(data))
	return item{
		data: data, pos: pos, keyID: r.KeyID, seq: r.Seq, prev: r.Prev,
		leaf: leaf, sha: receipt.Hash(data),
	}, nil
}

// chainError explains why it does not follow head (found says whether the
// agent has one), or returns nil if it does.
func chainError(it item, head Head, found bool) error {
	wantSeq, wantPrev := uint64(1), receipt.FirstPrev
	if found {
		wantSeq, wantPrev = head.Seq+1, hex.EncodeToString(head.SHA256[:])
	}
	switch {
	case it.seq != wantSeq && found:
		return fmt.Errorf("%w: receipt %d (seq %d, key_id %s): the log holds seq %d of this agent, so the next is seq %d; send the missing receipts first, in order",
			ErrChain, it.pos, it.seq, it.keyID, head.Seq, wantSeq)
	case it.seq != wantSeq:
		return fmt.Errorf("%w: receipt %d (seq %d, key_id %s): the log holds no receipt of this agent, so the first must be seq 1; send its receipts from seq 1, in order",
			ErrChain, it.pos, it.seq, it.keyID)
	case it.prev != wantPrev:
		return fmt.Errorf("%w: receipt %d (seq %d, key_id %s): prev is %s, but the hash of the log's seq %d of this agent is %s; the agent's receipts fork or were altered",
			ErrChain, it.pos, it.seq, it.keyID, it.prev, head.Seq, wantPrev)
	}
	return nil
}

// errNothingNew rolls back a batch that stores nothing.
var errNothingNew = errors.New("nothing new")
