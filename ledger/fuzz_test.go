package ledger

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/transparency-dev/merkle/proof"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/bankdoor/bankdoor/ledger/receipt"
)

// fuzzAgent is the one enrolled agent of the fuzz logs; its receipts are
// deterministic, so the committed corpus holds valid ones.
func fuzzAgent() *agent { return newAgent(7) }

// FuzzAppend sends arbitrary bytes as a receipt. Append must not panic,
// and the tree grows only when the input is the enrolled agent's valid
// next receipt; a refusal wraps exactly one error kind.
func FuzzAppend(f *testing.F) {
	a := fuzzAgent()
	tl := openTestLog(f, 0, a)
	tl.mustAppend(f, a.Chain(f, 2)...)
	next := a.Sign(f, 3, a.Prev)
	f.Add(next)
	f.Add([]byte("{}"))
	f.Add(bytes.Replace(next, []byte(`"seq":3`), []byte(`"seq":4`), 1))
	f.Fuzz(func(t *testing.T, data []byte) {
		before := tl.Size()
		head, _, err := tl.Head(context.Background(), a.KeyID)
		if err != nil {
			t.Fatal(err)
		}
		idx, err := tl.Append(context.Background(), [][]byte{data})
		after := tl.Size()
		if err != nil {
			if after != before || idx != nil {
				t.Fatalf("refused Append (%v) changed the size %d -> %d", err, before, after)
			}
			if n := countKinds(err); n != 1 {
				t.Fatalf("error %q wraps %d error kinds, want 1", err, n)
			}
			return
		}
		if after == before { // a replay
			if idx[0] >= before {
				t.Fatalf("replay got index %d, beyond the size %d", idx[0], before)
			}
			return
		}
		r, perr := receipt.Parse(data)
		if after != before+1 || perr != nil || r.Verify(a.Public()) != nil ||
			r.Seq != head.Seq+1 || r.Prev != hex.EncodeToString(head.SHA256[:]) {
			t.Fatalf("tree grew %d -> %d on an input that is not the valid next receipt: %q", before, after, data)
		}
	})
}

func countKinds(err error) int {
	n := 0
	for _, k := range []error{ErrInvalid, ErrUnknownKey, ErrChain, ErrNotFound, ErrRange, ErrClosed, ErrStorage} {
		if errors.Is(err, k) {
			n++
		}
	}
	return n
}

// FuzzProofRequest asks for proofs with arbitrary sizes and indexes: each
// answer is ErrRange for a request outside the tree, or a proof that
// verifies against the root tlog computes.
func FuzzProofRequest(f *testing.F) {
	const n = 45
	a := fuzzAgent()
	tl := openTestLog(f, 0, a)
	ref := &refTree{}
	for i, r := range a.Chain(f, n) {
		tl.mustAppend(f, r)
		hs, err := tlog.StoredHashes(int64(i), r, ref)
		if err != nil {
			f.Fatal(err)
		}
		ref.hashes = append(ref.hashes, hs...)
	}
	for _, s := range [][2]uint64{{0, 0}, {0, 1}, {44, 45}, {45, 45}, {3, 46}, {1<<64 - 1, 1<<64 - 1}, {7, 3}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, x, y uint64) {
		checkInclusionRequest(t, tl, ref, n, x, y)
		checkConsistencyRequest(t, tl, ref, n, x, y)
	})
}

func rootAt(t *testing.T, ref *refTree, size uint64) []byte {
	h, err := tlog.TreeHash(int64(size), ref)
	if err != nil {
		t.Fatal(err)
	}
	return h[:]
}

func checkInclusionRequest(t *testing.T, tl *testLog, ref *refTree, n, index, size uint64) {
	p, err := tl.InclusionProof(index, size)
	valid := index < size && size <= n
	if !valid {
		if !errors.Is(err, ErrRange) {
			t.Fatalf("InclusionProof(%d, %d) = %v; want ErrRange", index, size, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("InclusionProof(%d, %d): %v", index, size, err)
	}
	leaf := ref.hashes[tlog.StoredHashIndex(0, int64(index))]
	if err := proof.VerifyInclusion(hasher, index, size, leaf[:], p, rootAt(t, ref, size)); err != nil {
		t.Fatalf("InclusionProof(%d, %d) does not verify: %v", index, size, err)
	}
}

func checkConsistencyRequest(t *testing.T, tl *testLog, ref *refTree, n, from, to uint64) {
	p, err := tl.ConsistencyProof(from, to)
	if from > to || to > n {
		if !errors.Is(err, ErrRange) {
			t.Fatalf("ConsistencyProof(%d, %d) = %v; want ErrRange", from, to, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("ConsistencyProof(%d, %d): %v", from, to, err)
	}
	if from == 0 {
		if len(p) != 0 {
			t.Fatalf("ConsistencyProof(0, %d) = %x; want empty", to, p)
		}
		return
	}
	if err := proof.VerifyConsistency(hasher, from, to, p, rootAt(t, ref, from), rootAt(t, ref, to)); err != nil {
		t.Fatalf("ConsistencyProof(%d, %d) does not verify: %v", from, to, err)
	}
}
