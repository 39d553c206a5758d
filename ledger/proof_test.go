package ledger

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/proof"
	"golang.org/x/mod/sumdb/tlog"
)

// refTree is the same leaves hashed by golang.org/x/mod/sumdb/tlog, an
// RFC 6962 implementation independent of transparency-dev/merkle.
type refTree struct{ hashes []tlog.Hash }

func (r *refTree) ReadHashes(idx []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(idx))
	for i, x := range idx {
		out[i] = r.hashes[x]
	}
	return out, nil
}

func (r *refTree) add(t *testing.T, n int64, leaf []byte) {
	hs, err := tlog.StoredHashes(n, leaf, r)
	if err != nil {
		t.Fatal(err)
	}
	r.hashes = append(r.hashes, hs...)
}

func toBytes(hs []tlog.Hash) [][]byte {
	out := make([][]byte, len(hs))
	for i := range hs {
		out[i] = hs[i][:]
	}
	return out
}

// buildLog appends n real receipts from three agents in batches of
// varying size (up to 9 leaves while the tree is small, up to 100 after),
// checking every checkpoint's root against tlog.TreeHash.
func buildLog(t *testing.T, b backend, n int) (*testLog, *refTree) {
	agents := []*agent{newAgent(1), newAgent(2), newAgent(3)}
	tl := openTestLogOn(t, b, 0, agents...)
	ref := &refTree{}
	rnd := rand.New(rand.NewPCG(1, 2))
	for size := 0; size < n; {
		maxK := 9
		if size > 200 {
			maxK = 100
		}
		k := min(1+rnd.IntN(maxK), n-size)
		var batch [][]byte
		for range k {
			batch = append(batch, agents[rnd.IntN(len(agents))].Next(t))
		}
		tl.mustAppend(t, batch...)
		for _, b := range batch {
			ref.add(t, int64(size), b)
			size++
		}
		cp, _, _, err := log.ParseCheckpoint(tl.Checkpoint(), testOrigin, tl.verifier)
		if err != nil {
			t.Fatal(err)
		}
		want, err := tlog.TreeHash(int64(size), ref)
		if err != nil {
			t.Fatal(err)
		}
		if cp.Size != uint64(size) || !bytes.Equal(cp.Hash, want[:]) {
			t.Fatalf("checkpoint size %d root %x; tlog gives size %d root %x", cp.Size, cp.Hash, size, want)
		}
	}
	return tl, ref
}

// checkInclusion compares the log's proof of leaf i at size with tlog's
// and verifies it with proof.VerifyInclusion.
func checkInclusion(t *testing.T, tl *testLog, ref *refTree, i, size uint64) {
	got, err := tl.InclusionProof(i, size)
	if err != nil {
		t.Fatalf("InclusionProof(%d, %d): %v", i, size, err)
	}
	want, err := tlog.ProveRecord(int64(size), int64(i), ref)
	if err != nil {
		t.Fatal(err)
	}
	if !equalHashes(got, toBytes(want)) {
		t.Fatalf("InclusionProof(%d, %d) = %x; tlog.ProveRecord gives %x", i, size, got, want)
	}
	root, _ := tlog.TreeHash(int64(size), ref)
	leaf, _ := ref.ReadHashes([]int64{tlog.StoredHashIndex(0, int64(i))})
	if err := proof.VerifyInclusion(hasher, i, size, leaf[0][:], got, root[:]); err != nil {
		t.Fatalf("InclusionProof(%d, %d) does not verify: %v", i, size, err)
	}
}

func checkConsistency(t *testing.T, tl *testLog, ref *refTree, from, to uint64) {
	got, err := tl.ConsistencyProof(from, to)
	if err != nil {
		t.Fatalf("ConsistencyProof(%d, %d): %v", from, to, err)
	}
	want, err := tlog.ProveTree(int64(to), int64(from), ref)
	if err != nil {
		t.Fatal(err)
	}
	if !equalHashes(got, toBytes(want)) {
		t.Fatalf("ConsistencyProof(%d, %d) = %x; tlog.ProveTree gives %x", from, to, got, want)
	}
	r1, _ := tlog.TreeHash(int64(from), ref)
	r2, _ := tlog.TreeHash(int64(to), ref)
	if err := proof.VerifyConsistency(hasher, from, to, got, r1[:], r2[:]); err != nil {
		t.Fatalf("ConsistencyProof(%d, %d) does not verify: %v", from, to, err)
	}
}

func equalHashes(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// TestProofsMatchTlog checks every inclusion and consistency proof for
// every tree size 1..130, and sampled ones for sizes up to 1,100 (past
// 2^10, so trees eleven levels high), against tlog over the same leaves.
func TestProofsMatchTlog(t *testing.T) { onBackends(t, testProofsMatchTlog) }

func testProofsMatchTlog(t *testing.T, b backend) {
	n := 1100
	if testing.Short() {
		n = 400
	}
	tl, ref := buildLog(t, b, n)
	for size := uint64(1); size <= 130; size++ {
		for i := range size {
			checkInclusion(t, tl, ref, i, size)
			checkConsistency(t, tl, ref, i+1, size)
		}
	}
	rnd := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		size := 1 + rnd.Uint64N(uint64(n))
		checkInclusion(t, tl, ref, rnd.Uint64N(size), size)
		checkConsistency(t, tl, ref, 1+rnd.Uint64N(size), size)
	}
}

func TestProofRange(t *testing.T) { onBackends(t, testProofRange) }

func testProofRange(t *testing.T, b backend) {
	tl, _ := buildLog(t, b, 10)
	for _, c := range []struct{ a, b uint64 }{{0, 0}, {10, 10}, {0, 11}, {5, 3}, {1 << 63, 1<<64 - 1}} {
		if _, err := tl.InclusionProof(c.a, c.b); !errors.Is(err, ErrRange) {
			t.Errorf("InclusionProof(%d, %d) = %v, want ErrRange", c.a, c.b, err)
		}
	}
	for _, c := range []struct{ a, b uint64 }{{5, 4}, {1, 11}, {11, 11}, {1<<64 - 1, 1}} {
		if _, err := tl.ConsistencyProof(c.a, c.b); !errors.Is(err, ErrRange) {
			t.Errorf("ConsistencyProof(%d, %d) = %v, want ErrRange", c.a, c.b, err)
		}
	}
	for _, c := range []struct{ a, b uint64 }{{0, 10}, {10, 10}, {0, 0}} {
		if p, err := tl.ConsistencyProof(c.a, c.b); err != nil || len(p) != 0 {
			t.Errorf("ConsistencyProof(%d, %d) = %x, %v; want an empty proof", c.a, c.b, p, err)
		}
	}
}

// TestNodeHashes: the stored hashes of complete nodes, equal to x/mod's
// (every level of a 600-leaf tree, up to the largest complete node), and
// ErrRange for any node that is not complete or a count outside 1 to
// MaxEntries.
func TestNodeHashes(t *testing.T) { onBackends(t, testNodeHashes) }

func testNodeHashes(t *testing.T, b backend) {
	tl, ref := buildLog(t, b, 600)
	for level := uint(0); 600>>level > 0; level++ {
		n := uint64(600 >> level)
		got, err := tl.NodeHashes(level, 0, n)
		if err != nil {
			t.Fatalf("NodeHashes(%d, 0, %d): %v", level, n, err)
		}
		for i := range n {
			want, err := ref.ReadHashes([]int64{tlog.StoredHashIndex(int(level), int64(i))})
			if err != nil || !bytes.Equal(got[i], want[0][:]) {
				t.Fatalf("node (%d, %d) is %x, x/mod's %x (%v)", level, i, got[i], want, err)
			}
		}
	}
	for _, c := range []struct {
		level        uint
		start, count uint64
	}{
		{0, 0, 0}, {0, 0, 601}, {0, 600, 1}, {0, 599, 2}, {1, 300, 1}, {9, 1, 1}, {10, 0, 1}, {64, 0, 1}, {200, 0, 1},
		{0, 1<<64 - 1, 2}, {0, 0, MaxEntries + 1},
	} {
		if _, err := tl.NodeHashes(c.level, c.start, c.count); !errors.Is(err, ErrRange) {
			t.Errorf("NodeHashes(%d, %d, %d) = %v, want ErrRange", c.level, c.start, c.count, err)
		}
	}
}

func TestEntriesAndLeafIndex(t *testing.T) { onBackends(t, testEntriesAndLeafIndex) }

func testEntriesAndLeafIndex(t *testing.T, b backend) {
	a := newAgent(1)
	tl := openTestLogOn(t, b, 0, a)
	leaves := a.Chain(t, 20)
	tl.mustAppend(t, leaves...)
	for _, c := range []struct{ start, count, want uint64 }{{0, 20, 20}, {5, 3, 3}, {18, 100, 2}, {19, 1, 1}} {
		got, err := tl.Entries(c.start, c.count)
		if err != nil {
			t.Fatalf("Entries(%d, %d): %v", c.start, c.count, err)
		}
		if !equalHashes(got, leaves[c.start:c.start+c.want]) {
			t.Errorf("Entries(%d, %d) returned %d entries, not the stored ones", c.start, c.count, len(got))
		}
	}
	for _, c := range []struct{ start, count uint64 }{{20, 1}, {0, 0}, {1 << 63, 5}} {
		if _, err := tl.Entries(c.start, c.count); !errors.Is(err, ErrRange) {
			t.Errorf("Entries(%d, %d) = %v, want ErrRange", c.start, c.count, err)
		}
	}
	for i, leaf := range leaves {
		if got, err := tl.LeafIndex(hasher.HashLeaf(leaf)); err != nil || got != uint64(i) {
			t.Errorf("LeafIndex(leaf %d) = %d, %v", i, got, err)
		}
	}
	if _, err := tl.LeafIndex(make([]byte, 32)); !errors.Is(err, ErrNotFound) {
		t.Errorf("LeafIndex(unknown) = %v, want ErrNotFound", err)
	}
	if _, err := tl.LeafIndex([]byte("short")); !errors.Is(err, ErrInvalid) {
		t.Errorf("LeafIndex(5 bytes) = %v, want ErrInvalid", err)
	}
}
