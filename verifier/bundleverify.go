package verifier

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"

	"github.com/bankdoor/bankdoor/anchor/cosignature"
	"github.com/bankdoor/bankdoor/internal/agentkey"
	"github.com/bankdoor/bankdoor/ledger/receipt"
	"github.com/bankdoor/bankdoor/verifier/bundle"
)

// verifyBundle checks an export bundle against cp, in this order:
//
//  1. The bundle is for --pub's key_id, and its checkpoint is the tree of
//     cp (same origin, size and root): its proofs are in that tree.
//  2. The tail evidence: the compact range before the head's leaf
//     (range in the manifest) followed by the leaf hashes of the tail
//     entries (the head, then every later entry up to the tree's size)
//     hashes to cp's root. So the tail is exactly the log's last
//     entries, and the first of them is a receipt signed by --pub: the
//     agent's receipt with the highest seq, H, as a ledger appends an
//     agent's receipts in seq order. Any later tail entry signed by
//     --pub is a receipt the agent made after it, which the bundle
//     should have held: the highest seq in the tail, L, counts.
//  3. Every seq from 1 to L is in receipts/; the missing ones are
//     listed, all of them (*MissingError). L > H with none missing
//     means the manifest was edited: an *Error.
//  4. receipts/ verifies as VerifyDir would, with every receipt's
//     inclusion proof (proofs) at cp's size, seq H at the head's leaf;
//     and, when the bundle has tlog-proofs/, each receipt's tlog-proof
//     there: the bundle's checkpoint byte for byte, the proofs line's
//     leaf, and an inclusion proof that verifies.
//
// An attacker who deletes receipts and edits the manifest, proofs and
// tail cannot pass step 2 without a tail that the root commits to, whose
// first entry is an agent receipt later than every other: the last one.
// What the checkpoint does not cover (receipts after its size) no bundle
// can prove; export again after the next cosigned checkpoint.
func verifyBundle(dir string, key ed25519.PublicKey, opts Options, pol cosignature.Trust, cp *cosignature.Verified) (*AnchoredReport, error) {
	b, err := bundle.Read(dir)
	if err != nil {
		return nil, &Error{Reason: err.Error()}
	}
	if err := sameTree(b, key, pol, cp); err != nil {
		return nil, err
	}
	head, last, err := checkTail(b, key, cp.Hash)
	if err != nil {
		return nil, err
	}
	rdir := filepath.Join(dir, bundle.ReceiptsDir)
	names, err := receiptFiles(rdir)
	if err != nil {
		return nil, err
	}
	if missing := absent(names, last); len(missing) > 0 {
		return nil, &MissingError{Dir: rdir, KeyID: b.KeyID, Seqs: missing, Origin: cp.Origin, Size: cp.Size,
			Proof: fmt.Sprintf("its receipt seq %d at leaf %d and the entries after it hash to the checkpoint's root", head.Seq, b.Head.Index)}
	}
	if last > head.Seq {
		return nil, &Error{bundle.TailFile, fmt.Sprintf("holds the agent's seq %d after the head, seq %d: the manifest was edited; export again", last, head.Seq)}
	}
	if len(names) > int(head.Seq) {
		return nil, &Error{names[head.Seq], fmt.Sprintf("is after seq %d, the agent's last receipt in the checkpoint's tree; remove it, or export again", head.Seq)}
	}
	check, err := proofChecker(dir, b, cp.Hash, len(names))
	if err != nil {
		return nil, err
	}
	rep, _, err := verifyFiles(rdir, names, key, opts, false, check)
	if err != nil {
		return nil, err
	}
	if rep.Head != receipt.Hash(b.Tail[0]) {
		return nil, &Error{receipt.FileName(head.Seq), "is not the head receipt the tail starts with"}
	}
	return &AnchoredReport{Report: rep, Checkpoint: cp, Bundle: true, Covered: head.Seq}, nil
}

// sameTree checks the bundle is for pub and for cp's tree.
func sameTree(b *bundle.Bundle, key ed25519.PublicKey, pol cosignature.Trust, cp *cosignature.Verified) error {
	if id := agentkey.KeyID(key); b.KeyID != id {
		return &Error{bundle.ManifestFile, fmt.Sprintf("is for key_id %s, not the public key's %s", b.KeyID, id)}
	}
	bcp, err := pol.VerifyLog(b.Checkpoint)
	if err != nil {
		return &Error{bundle.CheckpointFile, fmt.Sprintf("does not verify with the log key: %v", err)}
	}
	if bcp.Origin != cp.Origin || bcp.Size != cp.Size || !bytes.Equal(bcp.Hash, cp.Hash) {
		return &Error{bundle.CheckpointFile, fmt.Sprintf("is the tree of size %d, the checkpoint given the tree of size %d with another root or origin: the proofs are for the bundle's %s; verify against it, or export again",
			bcp.Size, cp.Size, bundle.CheckpointFile)}
	}
	if b.Size != cp.Size {
		return &Error{bundle.ManifestFile, fmt.Sprintf("says size %d; the checkpoint's is %d", b.Size, cp.Size)}
	}
	return nil
}

// checkTail does step 2. It returns the head the tail proves and the
// highest seq of the agent's receipts in the tail: the head's, unless the
// tail holds later ones.
func checkTail(b *bundle.Bundle, key ed25519.PublicKey, root []byte) (bundle.Head, uint64, error) {
	leaves := make([][]byte, len(b.Tail))
	for i, e := range b.Tail {
		leaves[i] = rfc6962.DefaultHasher.HashLeaf(e)
	}
	left := slices.Clone(b.HeadRange)
	slices.Reverse(left) // a proof runs upward; a compact range from the left
	got, err := rootOf(left, b.Head.Index, leaves)
	if err != nil {
		return bundle.Head{}, 0, &Error{bundle.ManifestFile, fmt.Sprintf("range: %v", err)}
	}
	if !bytes.Equal(got, root) {
		return bundle.Head{}, 0, &Error{bundle.TailFile, fmt.Sprintf("with the manifest's head leaf %d and range, does not hash to the checkpoint's root: the tail, range or head index was changed", b.Head.Index)}
	}
	c := &chain{key: key, rep: &Report{KeyID: b.KeyID}}
	r, err := c.parse(bundle.TailFile, b.Tail[0])
	if err != nil {
		return bundle.Head{}, 0, &Error{bundle.TailFile, fmt.Sprintf("its first entry (leaf %d) is not a receipt of the public key: %v", b.Head.Index, err)}
	}
	if r.Seq != b.Head.Seq {
		return bundle.Head{}, 0, &Error{bundle.ManifestFile, fmt.Sprintf("says the head is seq %d; the tail, which the checkpoint commits to, starts with seq %d", b.Head.Seq, r.Seq)}
	}
	last := r.Seq
	for _, e := range b.Tail[1:] {
		if r, err := c.parse(bundle.TailFile, e); err == nil {
			last = max(last, r.Seq)
		}
	}
	return bundle.Head{Seq: b.Head.Seq, Index: b.Head.Index}, last, nil
}

// proofChecker returns the check of the inclusion proof of receipt
// names[i], seq i+1, in the bundle in dir: its proofs line, and its
// tlog-proof when the bundle has tlog-proofs/ (a bundle written before
// them has not), which must then hold one for each of the n receipts and
// nothing else.
func proofChecker(dir string, b *bundle.Bundle, root []byte, n int) (func(i int, leaf []byte) error, error) {
	bySeq := make(map[uint64]bundle.Proof, len(b.Proofs))
	for _, p := range b.Proofs {
		bySeq[p.Seq] = p
	}
	tlogProofs, err := hasTLogProofs(dir, n)
	if err != nil {
		return nil, err
	}
	return func(i int, leaf []byte) error {
		seq := uint64(i) + 1
		name := receipt.FileName(seq)
		p, ok := bySeq[seq]
		switch {
		case !ok:
			return &Error{name, fmt.Sprintf("has no inclusion proof in %s; export again", bundle.ProofsFile)}
		case seq == b.Head.Seq && p.Index != b.Head.Index:
			return &Error{name, fmt.Sprintf("is the head, at leaf %d, but its proof is for leaf %d", b.Head.Index, p.Index)}
		case seq < b.Head.Seq && p.Index >= b.Head.Index:
			return &Error{name, fmt.Sprintf("its proof is for leaf %d, not before the head's leaf %d", p.Index, b.Head.Index)}
		}
		if err := proof.VerifyInclusion(rfc6962.DefaultHasher, p.Index, b.Size, leaf, p.Hashes, root); err != nil {
			return &Error{name, fmt.Sprintf("its inclusion proof (%s, leaf %d, size %d) does not verify against the checkpoint: %v", bundle.ProofsFile, p.Index, b.Size, err)}
		}
		if !tlogProofs {
			return nil
		}
		return checkTLogProof(dir, b, seq, p.Index, leaf, root)
	}, nil
}

// hasTLogProofs reports whether the bundle in dir has tlog-proofs/, and
// checks that it holds the tlog-proof of each of its n receipts and
// nothing else.
func hasTLogProofs(dir string, n int) (bool, error) {
	tdir := filepath.Join(dir, bundle.TLogProofsDir)
	fi, err := os.Lstat(tdir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, &Error{Reason: err.Error()}
	case !fi.IsDir():
		return false, &Error{bundle.TLogProofsDir, "is not a directory"}
	}
	entries, err := os.ReadDir(tdir)
	if err != nil {
		return false, &Error{Reason: err.Error()}
	}
	want := make(map[string]bool, n)
	for seq := range uint64(n) {
		want[bundle.TLogProofName(seq+1)] = true
	}
	for _, e := range entries {
		if !want[e.Name()] {
			return false, &Error{filepath.Join(bundle.TLogProofsDir, e.Name()), fmt.Sprintf("is not the tlog-proof of one of the bundle's receipts 1..%d", n)}
		}
		delete(want, e.Name())
	}
	for seq := range uint64(n) {
		if name := bundle.TLogProofName(seq + 1); want[name] {
			return false, &Error{filepath.Join(bundle.TLogProofsDir, name), "is missing: every receipt of a bundle with tlog-proofs has one; export again"}
		}
	}
	return true, nil
}

// checkTLogProof checks the tlog-proof of the receipt with seq, leaf
// hash leaf at index: the bundle's checkpoint byte for byte, the same
// leaf as the proofs line, an inclusion proof that verifies.
func checkTLogProof(dir string, b *bundle.Bundle, seq, index uint64, leaf, root []byte) error {
	name := filepath.Join(bundle.TLogProofsDir, bundle.TLogProofName(seq))
	p, err := bundle.ReadTLogProof(dir, seq)
	if err != nil {
		return &Error{Reason: err.Error()}
	}
	switch {
	case !bytes.Equal(p.Checkpoint, b.Checkpoint):
		return &Error{name, fmt.Sprintf("holds another checkpoint than %s; export again", bundle.CheckpointFile)}
	case p.Index != index:
		return &Error{name, fmt.Sprintf("proves leaf %d; %s says the receipt is leaf %d", p.Index, bundle.ProofsFile, index)}
	}
	if err := p.VerifyInclusion(leaf, b.Size, root); err != nil {
		return &Error{name, err.Error()}
	}
	return nil
}
