package spool_test

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"

	"github.com/bankdoor/bankdoor/ledger/receipt"
	"github.com/bankdoor/bankdoor/ledger/spool"
)

// memLedger is an in-memory Appender that enforces the ledger's rules
// (DESIGN.md §6): a receipt must parse, be signed by an enrolled key and
// extend that key's chain; a receipt already held is accepted again
// without being stored; a batch is stored whole or not at all. The
// end-to-end tests in cmd/bankdoor run the real ledger.
type memLedger struct {
	mu      sync.Mutex
	agents  map[string]ed25519.PublicKey
	entries [][]byte
	index   map[[32]byte]int
	heads   map[string]spool.Head

	down      error         // if set, every call fails with it
	loseReply bool          // store the next batch, then answer with an error
	gate      chan struct{} // if set, Append waits for it to be closed
	entered   chan struct{} // if set, Append signals it on entry
	appends   int           // Append calls that reached the rules
	headN     int           // Head calls
}

func newMemLedger(pubs ...ed25519.PublicKey) *memLedger {
	m := &memLedger{agents: map[string]ed25519.PublicKey{}, index: map[[32]byte]int{}, heads: map[string]spool.Head{}}
	for _, p := range pubs {
		m.agents[keyID(p)] = p
	}
	return m
}

func (m *memLedger) Head(ctx context.Context, id string) (spool.Head, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.headN++
	if m.down != nil {
		return spool.Head{}, m.down
	}
	return m.heads[id], nil
}

func (m *memLedger) Append(ctx context.Context, batch [][]byte) error {
	m.mu.Lock()
	gate, entered := m.gate, m.entered
	m.mu.Unlock()
	if entered != nil {
		select {
		case entered <- struct{}{}:
		default:
		}
	}
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down != nil {
		return m.down
	}
	m.appends++
	heads := map[string]spool.Head{}
	var add [][]byte
	for i, b := range batch {
		if err := m.check(b, heads); err != nil {
			return fmt.Errorf("%w: receipt %d: %v", spool.ErrRefused, i, err)
		}
		if _, dup := m.index[receipt.Hash(b)]; !dup {
			add = append(add, b)
		}
	}
	for _, b := range add {
		m.index[receipt.Hash(b)] = len(m.entries)
		m.entries = append(m.entries, b)
	}
	for id, h := range heads {
		m.heads[id] = h
	}
	if m.loseReply {
		m.loseReply = false
		return errors.New("connection reset after the batch was stored")
	}
	return nil
}

// check applies the rules to one receipt; heads holds the batch's heads
// so far, and is updated. A receipt already held passes.
func (m *memLedger) check(b []byte, heads map[string]spool.Head) error {
	r, err := receipt.Parse(b)
	if err != nil {
		return err
	}
	pub, ok := m.agents[r.KeyID]
	if !ok {
		return fmt.Errorf("key_id %s is not enrolled", r.KeyID)
	}
	if err := r.Verify(pub); err != nil {
		return err
	}
	if _, dup := m.index[receipt.Hash(b)]; dup {
		return nil
	}
	h, ok := heads[r.KeyID]
	if !ok {
		h = m.heads[r.KeyID]
	}
	prev := receipt.FirstPrev
	if h.Seq > 0 {
		prev = hex.EncodeToString(h.SHA256[:])
	}
	if r.Seq != h.Seq+1 || r.Prev != prev {
		return fmt.Errorf("seq %d does not extend head seq %d", r.Seq, h.Seq)
	}
	heads[r.KeyID] = spool.Head{Seq: r.Seq, SHA256: receipt.Hash(b)}
	return nil
}

// seqs returns the seqs of the stored entries, in log order.
func (m *memLedger) seqs() []uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []uint64
	for _, b := range m.entries {
		r, err := receipt.Parse(b)
		if err != nil {
			panic(err)
		}
		out = append(out, r.Seq)
	}
	return out
}

func (m *memLedger) headCalls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.headN
}

func (m *memLedger) setDown(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.down = err
}
