package ledger

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/compact"
	"golang.org/x/mod/sumdb/note"

	"github.com/bankdoor/bankdoor/ledger/internal/store"
)

// signCheckpoint returns the C2SP tlog-checkpoint note for a tree of size
// with root hash root, signed by s.
//
// SPEC: https://c2sp.org/tlog-checkpoint
func signCheckpoint(s note.Signer, origin string, size uint64, root []byte) ([]byte, error) {
	text := log.Checkpoint{Origin: origin, Size: size, Hash: root}.Marshal()
	b, err := note.Sign(&note.Note{Text: string(text)}, s)
	if err != nil {
		return nil, fmt.Errorf("%w: sign checkpoint: %w", ErrStorage, err)
	}
	return b, nil
}

// checkpointBody parses the unverified body of a stored checkpoint note:
// the text before the blank line that starts the signatures.
func checkpointBody(n []byte) (log.Checkpoint, error) {
	text, _, ok := bytes.Cut(n, []byte("\n\n"))
	if !ok {
		return log.Checkpoint{}, fmt.Errorf("stored checkpoint is not a signed note (no blank line)")
	}
	var cp log.Checkpoint
	if _, err := cp.Unmarshal(append(text, '\n')); err != nil {
		return log.Checkpoint{}, fmt.Errorf("stored checkpoint: %w", err)
	}
	return cp, nil
}

// verifyStored checks that the stored checkpoint note n is signed by
// logKey, whose name is the log's origin, and returns its body. Other
// signature lines (cosignatures) are neither needed nor checked.
func verifyStored(n []byte, logKey note.Verifier) (log.Checkpoint, error) {
	cp, err := checkpointBody(n)
	if err != nil {
		return cp, err
	}
	if _, err := note.Open(n, note.VerifierList(logKey)); err != nil {
		return cp, fmt.Errorf("the stored checkpoint's signature does not verify with the log key %s: %w",
			keyName(logKey.Name(), logKey.KeyHash()), err)
	}
	if cp.Origin != logKey.Name() {
		return cp, fmt.Errorf("the stored checkpoint has origin %q, not the log key's name %q", cp.Origin, logKey.Name())
	}
	return cp, nil
}

// signedBy reports whether the signed note n carries a signature line of
// a key with name and key hash (the first four bytes of the signature
// line's base64), as golang.org/x/mod/sumdb/note writes them.
func signedBy(n []byte, name string, hash uint32) bool {
	return slices.Contains(signers(n), keyName(name, hash))
}

// logKeyOf names the key that signed the checkpoint n of the log origin
// (its first signature by a key of that name), or just origin if none did.
func logKeyOf(n []byte, origin string) string {
	for _, s := range signers(n) {
		if name, _, _ := strings.Cut(s, "+"); name == origin {
			return s
		}
	}
	return origin
}

// keyName is how a note key is named in messages: name+hash, the start
// of its verifier key.
func keyName(name string, hash uint32) string { return fmt.Sprintf("%s+%08x", name, hash) }

// signers returns the key of each signature line of the note n, as
// keyName names them, without verifying any.
func signers(n []byte) []string {
	_, sigs, ok := bytes.Cut(n, []byte("\n\n"))
	if !ok {
		return nil
	}
	var keys []string
	for _, line := range strings.Split(string(sigs), "\n") {
		rest, ok := strings.CutPrefix(line, "— ")
		if !ok {
			continue
		}
		name, b64, ok := strings.Cut(rest, " ")
		sig, err := base64.StdEncoding.DecodeString(b64)
		if ok && err == nil && len(sig) >= 4 {
			keys = append(keys, keyName(name, binary.BigEndian.Uint32(sig)))
		}
	}
	return keys
}

// treeState is the committed tree as a store holds it.
type treeState struct {
	size uint64
	note []byte
	rng  *compact.Range // [0, size)
}

// readState reads the committed size and checkpoint and rebuilds the
// compact range [0, size) from the stored nodes. It checks that the range's
// root is the checkpoint's root.
func readState(tx store.Tx) (treeState, error) {
	b, err := tx.Meta(store.MetaSize)
	if err != nil {
		return treeState{}, err
	}
	size, err := store.ParseIndex(b)
	if err != nil {
		return treeState{}, fmt.Errorf("meta %q: %w", store.MetaSize, err)
	}
	n, err := tx.Meta(store.MetaCheckpoint)
	if err != nil {
		return treeState{}, err
	}
	cp, err := checkpointBody(n)
	if err != nil {
		return treeState{}, err
	}
	rng, err := loadRange(tx, size)
	if err != nil {
		return treeState{}, err
	}
	root, err := rootOf(rng)
	if err != nil {
		return treeState{}, err
	}
	if cp.Size != size || !bytes.Equal(cp.Hash, root) {
		return treeState{}, fmt.Errorf("stored checkpoint (size %d, root %x) does not match the stored tree (size %d, root %x)",
			cp.Size, cp.Hash, size, root)
	}
	return treeState{size: size, note: n, rng: rng}, nil
}

// loadRange rebuilds the compact range [0, size) from stored nodes.
func loadRange(tx store.Tx, size uint64) (*compact.Range, error) {
	ids := compact.RangeNodes(0, size, nil)
	hashes, err := nodeHashes(tx, ids)
	if err != nil {
		return nil, err
	}
	return rangeFactory().NewRange(0, size, hashes)
}

// storedRoot recomputes the root of the tree of size from tx's stored
// nodes.
func storedRoot(tx store.Tx, size uint64) ([]byte, error) {
	rng, err := loadRange(tx, size)
	if err != nil {
		return nil, err
	}
	return rootOf(rng)
}

// rootOf returns the RFC 6962 root of a range starting at 0.
func rootOf(rng *compact.Range) ([]byte, error) {
	if rng.End() == 0 {
		return hasher.EmptyRoot(), nil
	}
	return rng.GetRootHash(nil)
}

// nodeHashes fetches the hashes of ids, which must all be stored.
func nodeHashes(tx store.Tx, ids []compact.NodeID) ([][]byte, error) {
	hashes, err := tx.Nodes(ids)
	if err != nil {
		return nil, err
	}
	for i, h := range hashes {
		if len(h) != hasher.Size() {
			return nil, fmt.Errorf("node (level %d, index %d) is missing or not %d bytes", ids[i].Level, ids[i].Index, hasher.Size())
		}
	}
	return hashes, nil
}

// cloneRange copies r, so a failed commit leaves the committer's range as
// it was.
func cloneRange(r *compact.Range) (*compact.Range, error) {
	hashes := make([][]byte, 0, len(r.Hashes()))
	for _, h := range r.Hashes() {
		hashes = append(hashes, bytes.Clone(h))
	}
	return rangeFactory().NewRange(r.Begin(), r.End(), hashes)
}
