package verifier

// Anchored verification: a receipts directory, or an export bundle, is
// checked offline against a checkpoint that the log signed and a quorum
// of trusted witnesses cosigned (package anchor/cosignature). The
// witnesses' cosignatures are what make truncation visible: the log
// cannot later show them a tree without the receipts they have seen.
//
// A bundle (package verifier/bundle, made by bankdoor export) carries the
// evidence; for the checks and what they prove, see VerifyBundle. A plain
// receipts directory carries none, so VerifyAnchored reads the checkpoint
// as the tree of a log that holds this agent's receipts only, the
// embedded ledger's: leaf i is the receipt with seq i+1. Every seq from 1
// to the checkpoint's size must be in the directory, and the RFC 6962
// root of their files must be the checkpoint's.

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"strings"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/rfc6962"

	"github.com/bankdoor/bankdoor/anchor/cosignature"
	"github.com/bankdoor/bankdoor/internal/agentkey"
	"github.com/bankdoor/bankdoor/ledger/receipt"
	"github.com/bankdoor/bankdoor/verifier/bundle"
)

// An AnchoredReport describes receipts proved against an anchored
// checkpoint.
type AnchoredReport struct {
	*Report
	Checkpoint *cosignature.Verified
	Bundle     bool   // the directory was a bundle
	Covered    uint64 // seqs 1..Covered are in the checkpoint's tree
}

// MissingError lists the receipts the anchored checkpoint proves existed
// that the directory lacks.
type MissingError struct {
	Dir    string
	KeyID  string
	Seqs   []uint64 // in increasing order
	Origin string
	Size   uint64
	Proof  string // what shows they existed
}

func (e *MissingError) Error() string {
	return fmt.Sprintf("%s lacks %d receipt(s) of key_id %s that the checkpoint of %s at size %d proves existed (%s): seq %s; the tail of the directory was removed or never copied",
		e.Dir, len(e.Seqs), e.KeyID, e.Origin, e.Size, e.Proof, seqList(e.Seqs))
}

// VerifyAnchored verifies dir, a bundle (bundle.IsBundle) or a plain
// receipts directory, against the checkpoint note, which must satisfy
// pol. The error is a *MissingError when receipts are missing; an error
// wrapping one of cosignature's Err values when the checkpoint does not
// satisfy pol; an *Error when a receipt, proof or the bundle is wrong.
func VerifyAnchored(dir string, pub ed25519.PublicKey, opts Options, pol cosignature.Trust, checkpoint []byte) (*AnchoredReport, error) {
	if err := checkKey(pub); err != nil {
		return nil, err
	}
	cp, err := pol.Verify(checkpoint)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	if len(cp.Hash) != rfc6962.DefaultHasher.Size() {
		return nil, &Error{Reason: fmt.Sprintf("the checkpoint has a %d-byte root hash, want %d", len(cp.Hash), rfc6962.DefaultHasher.Size())}
	}
	if bundle.IsBundle(dir) {
		return verifyBundle(dir, pub, opts, pol, cp)
	}
	return verifyPlain(dir, pub, opts, cp)
}

// verifyPlain checks a receipts directory whose log holds nothing else.
func verifyPlain(dir string, key ed25519.PublicKey, opts Options, cp *cosignature.Verified) (*AnchoredReport, error) {
	names, err := receiptFiles(dir)
	if err != nil {
		return nil, err
	}
	if missing := absent(names, cp.Size); len(missing) > 0 {
		return nil, &MissingError{Dir: dir, KeyID: agentkey.KeyID(key), Seqs: missing, Origin: cp.Origin, Size: cp.Size,
			Proof: "a log of this agent's receipts only, such as the embedded ledger, holds seq 1 to its size"}
	}
	if len(names) == 0 {
		return nil, &Error{Reason: "no receipts in " + dir}
	}
	rep, leaves, err := verifyFiles(dir, names, key, opts, true, nil)
	if err != nil {
		return nil, err
	}
	root, err := rootOf(nil, 0, leaves[:cp.Size])
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(root, cp.Hash) {
		return nil, &Error{Reason: fmt.Sprintf("the RFC 6962 root of receipts seq 1..%d is not the checkpoint's: the log holds other receipts too (a shared ledger: verify an export bundle of the agent's receipts instead), or a receipt was changed and re-signed", cp.Size)}
	}
	return &AnchoredReport{Report: rep, Checkpoint: cp, Covered: cp.Size}, nil
}

// absent returns the seqs from 1 to n that names lack.
func absent(names []string, n uint64) []uint64 {
	have := make(map[uint64]bool, len(names))
	for _, name := range names {
		seq, _ := receipt.ParseFileName(name)
		have[seq] = true
	}
	var out []uint64
	for seq := uint64(1); seq <= n; seq++ {
		if !have[seq] {
			out = append(out, seq)
		}
	}
	return out
}

// rootOf returns the RFC 6962 root of the tree whose first begin leaves
// are summed up by the compact range hashes left (largest subtree first)
// and whose next leaves have the given leaf hashes.
func rootOf(left [][]byte, begin uint64, leaves [][]byte) ([]byte, error) {
	f := compact.RangeFactory{Hash: rfc6962.DefaultHasher.HashChildren}
	r, err := f.NewRange(0, begin, left)
	if err != nil {
		return nil, &Error{Reason: fmt.Sprintf("the hashes before leaf %d are not a compact range: %v", begin, err)}
	}
	for _, l := range leaves {
		if err := r.Append(l, nil); err != nil {
			return nil, err
		}
	}
	if r.End() == 0 {
		return rfc6962.DefaultHasher.EmptyRoot(), nil
	}
	return r.GetRootHash(nil)
}

// seqList writes seqs as "3, 5, 7..10": runs of three or more as a range.
func seqList(seqs []uint64) string {
	var parts []string
	for i := 0; i < len(seqs); {
		j := i
		for j+1 < len(seqs) && seqs[j+1] == seqs[j]+1 {
			j++
		}
		switch {
		case j-i >= 2:
			parts = append(parts, fmt.Sprintf("%d..%d", seqs[i], seqs[j]))
		case j == i+1:
			parts = append(parts, fmt.Sprint(seqs[i]), fmt.Sprint(seqs[j]))
		default:
			parts = append(parts, fmt.Sprint(seqs[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}
