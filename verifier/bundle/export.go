package bundle

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/bankdoor/bankdoor/ledger/receipt"
)

// A Source is the ledger an export reads: a remote ledger's Connect
// client or an open ledger.Log (ledger.Log.Source). Export checks nothing
// a Source says beyond what it needs to find the agent's receipts; the
// verifier checks everything against the checkpoint.
type Source interface {
	// Checkpoint returns the latest checkpoint note with the witness
	// cosignatures the ledger holds for it.
	Checkpoint(ctx context.Context) ([]byte, error)
	// AgentHead returns the leaf index of keyID's last receipt in the
	// log, or found false.
	AgentHead(ctx context.Context, keyID string) (index uint64, found bool, err error)
	// Entries returns up to count entries from leaf index start.
	Entries(ctx context.Context, start, count uint64) ([][]byte, error)
	// InclusionProof returns the RFC 6962 inclusion proof of leaf index
	// in the tree of size size.
	InclusionProof(ctx context.Context, index, size uint64) ([][]byte, error)
}

// Errors of Export that a caller may branch on.
var (
	// ErrNoReceipts: the log holds no receipt of the key_id.
	ErrNoReceipts = errors.New("the log holds no receipt of the key")
	// ErrBrokenChain: the log's entries do not hold the agent's chain
	// that its head promises; the log is inconsistent.
	ErrBrokenChain = errors.New("the agent's chain in the log is broken")
)

// pageSize is how many entries Export asks for at once: the ledger's
// GetEntries cap, ledger.MaxEntries, which the verifier does not import
// (it links no storage).
const pageSize = 1000

// proofWorkers bounds the inclusion proofs Export asks for at once.
const proofWorkers = 8

// Export collects the bundle of keyID's receipts in the tree of size
// cp.Size, where checkpoint is a note whose tree size is size (the caller
// has verified it). It returns the bundle and the receipt files, seq 1
// first.
//
// It finds the receipts by walking the agent's chain backwards: from the
// agent's head (or, if the head is newer than the checkpoint, from the
// last entry before size that carries the agent's key_id), it reads the
// log's entries downwards a page at a time and takes each entry whose
// SHA-256 is the prev of the receipt taken before it, until seq 1. This
// reads the entries from the agent's first receipt to its head once,
// rather than the whole log. The tail (entries from the head to the end
// of the tree) is read forwards.
func Export(ctx context.Context, src Source, keyID string, checkpoint []byte, size uint64) (*Bundle, [][]byte, error) {
	if size == 0 {
		return nil, nil, fmt.Errorf("export: the checkpoint is of an empty log; there is nothing to export")
	}
	start, found, err := src.AgentHead(ctx, keyID)
	if err != nil {
		return nil, nil, fmt.Errorf("export: get the head of key_id %s: %w", keyID, err)
	}
	if !found {
		return nil, nil, fmt.Errorf("export: %w: key_id %s", ErrNoReceipts, keyID)
	}
	w := &walker{src: src, keyID: keyID}
	receipts, head, err := w.chain(ctx, min(start, size-1))
	if err != nil && start >= size && len(w.indexes) == 0 {
		return nil, nil, fmt.Errorf("export: the checkpoint (size %d) holds no receipt of key_id %s yet: its receipts came later; export again once a newer checkpoint is cosigned", size, keyID)
	}
	if err != nil {
		return nil, nil, err
	}
	b := &Bundle{KeyID: keyID, Size: size, Head: head, Checkpoint: checkpoint}
	if b.Tail, err = w.entries(ctx, head.Index, size); err != nil {
		return nil, nil, err
	}
	if b.HeadRange, err = src.InclusionProof(ctx, head.Index, head.Index+1); err != nil {
		return nil, nil, fmt.Errorf("export: inclusion proof of the head (leaf %d) at size %d: %w", head.Index, head.Index+1, err)
	}
	if b.Proofs, err = proofs(ctx, src, w.indexes, size); err != nil {
		return nil, nil, err
	}
	return b, receipts, nil
}

// walker finds one agent's receipts in the log.
type walker struct {
	src     Source
	keyID   string
	indexes []uint64 // leaf index of seq i+1
	page    [][]byte // entries pageStart..pageStart+len(page)-1
	pageAt  uint64
}

// chain walks the agent's chain down from the last entry at or below
// from that carries its key_id.
func (w *walker) chain(ctx context.Context, from uint64) ([][]byte, Head, error) {
	var out [][]byte
	var want string // hex SHA-256 of the next receipt down; "" until the head is found
	var head Head
	for i := int64(from); i >= 0; i-- {
		e, err := w.entry(ctx, uint64(i))
		if err != nil {
			return nil, Head{}, err
		}
		r, ok := w.match(e, want)
		if !ok {
			continue
		}
		if want == "" {
			head = Head{Seq: r.Seq, Index: uint64(i)}
		}
		if r.Seq != head.Seq-uint64(len(out)) {
			return nil, Head{}, fmt.Errorf("export: %w: leaf %d holds seq %d of key_id %s where its chain needs seq %d", ErrBrokenChain, i, r.Seq, w.keyID, head.Seq-uint64(len(out)))
		}
		out = append(out, e)
		w.indexes = append(w.indexes, uint64(i))
		if want = r.Prev; r.Seq == 1 {
			reverse(out)
			reverse(w.indexes)
			return out, head, nil
		}
	}
	if len(w.indexes) == 0 {
		return nil, Head{}, fmt.Errorf("export: %w: no entry at or below leaf %d holds a receipt of key_id %s, though the ledger gave it as the agent's head", ErrBrokenChain, from, w.keyID)
	}
	return nil, Head{}, fmt.Errorf("export: %w: the chain of key_id %s breaks below leaf %d: no entry holds the receipt its prev %s names", ErrBrokenChain, w.keyID, w.indexes[len(w.indexes)-1], want)
}

// match reports whether e is the agent's receipt wanted next: any of its
// receipts if want is "", else the one whose SHA-256 is want.
func (w *walker) match(e []byte, want string) (*receipt.Receipt, bool) {
	if want != "" {
		sum := sha256.Sum256(e)
		if hex.EncodeToString(sum[:]) != want {
			return nil, false
		}
	}
	r, err := receipt.Parse(e)
	if err != nil || r.KeyID != w.keyID {
		return nil, false
	}
	return r, true
}

// entry returns leaf i, reading the page that ends at i when it is not
// in the current page.
func (w *walker) entry(ctx context.Context, i uint64) ([]byte, error) {
	if i < w.pageAt || i >= w.pageAt+uint64(len(w.page)) {
		start := uint64(0)
		if i >= pageSize {
			start = i + 1 - pageSize
		}
		page, err := w.entries(ctx, start, i+1)
		if err != nil {
			return nil, err
		}
		w.page, w.pageAt = page, start
	}
	return w.page[i-w.pageAt], nil
}

// entries reads leaves start..end-1.
func (w *walker) entries(ctx context.Context, start, end uint64) ([][]byte, error) {
	var out [][]byte
	for at := start; at < end; {
		page, err := w.src.Entries(ctx, at, min(end-at, pageSize))
		if err != nil {
			return nil, fmt.Errorf("export: get entries from leaf %d: %w", at, err)
		}
		if len(page) == 0 {
			return nil, fmt.Errorf("export: the log returned no entry at leaf %d, below its checkpoint's size", at)
		}
		out = append(out, page...)
		at += uint64(len(page))
	}
	return out, nil
}

// proofs asks for the inclusion proof of every index at size, a few at
// a time.
func proofs(ctx context.Context, src Source, indexes []uint64, size uint64) ([]Proof, error) {
	out := make([]Proof, len(indexes))
	errs := make([]error, len(indexes))
	var wg sync.WaitGroup
	workers := min(proofWorkers, runtime.GOMAXPROCS(0)*4)
	for wk := range workers {
		wg.Go(func() {
			for i := wk; i < len(indexes); i += workers {
				h, err := src.InclusionProof(ctx, indexes[i], size)
				out[i], errs[i] = Proof{Seq: uint64(i) + 1, Index: indexes[i], Hashes: h}, err
				if err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("export: inclusion proof of seq %d (leaf %d) at size %d: %w", i+1, indexes[i], size, err)
		}
	}
	return out, nil
}

func reverse[T any](s []T) {
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
}
