package ledger

import (
	"bytes"
	"context"
	"testing"

	"github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/proof"
)

func TestAppendProveReopen(t *testing.T) {
	t.Parallel()
	a, b := newAgent(1), newAgent(2)
	tl := openTestLog(t, 0, a, b)
	var leaves [][]byte
	for range 5 {
		batch := append(a.Chain(t, 3), b.Chain(t, 2)...)
		idx := tl.mustAppend(t, batch...)
		for i, x := range idx {
			if x != uint64(len(leaves)+i) {
				t.Fatalf("index %d = %d, want %d", i, x, len(leaves)+i)
			}
		}
		leaves = append(leaves, batch...)
	}
	cp, _, _, err := log.ParseCheckpoint(tl.Checkpoint(), testOrigin, tl.verifier)
	if err != nil {
		t.Fatal(err)
	}
	if cp.Size != uint64(len(leaves)) || tl.Size() != cp.Size {
		t.Fatalf("checkpoint size %d, Size %d, want %d", cp.Size, tl.Size(), len(leaves))
	}
	for i, leaf := range leaves {
		p, err := tl.InclusionProof(uint64(i), cp.Size)
		if err != nil {
			t.Fatal(err)
		}
		if err := proof.VerifyInclusion(hasher, uint64(i), cp.Size, hasher.HashLeaf(leaf), p, cp.Hash); err != nil {
			t.Fatalf("leaf %d: %v", i, err)
		}
	}
	before := tl.Checkpoint()
	if err := tl.Close(); err != nil {
		t.Fatal(err)
	}
	tl.reopen(t)
	if !bytes.Equal(tl.Checkpoint(), before) {
		t.Fatalf("checkpoint after reopen:\n%s\nwant\n%s", tl.Checkpoint(), before)
	}
	h, ok, err := tl.Head(context.Background(), a.KeyID)
	if err != nil || !ok || h.Seq != a.Seq {
		t.Fatalf("Head(a) = %+v, %v, %v; want seq %d", h, ok, err, a.Seq)
	}
	tl.mustAppend(t, a.Next(t))
	if tl.Size() != uint64(len(leaves))+1 {
		t.Fatalf("size after reopen and append = %d", tl.Size())
	}
}

func TestFsckClean(t *testing.T) {
	t.Parallel()
	a := newAgent(1)
	tl := openTestLog(t, 0, a)
	for range 10 {
		tl.mustAppend(t, a.Chain(t, 7)...)
	}
	tl.Close()
	rep, err := Fsck(t.Context(), tl.path, testVerifier(t))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Size != 70 || rep.Agents != 1 {
		t.Fatalf("report %v", rep)
	}
}
