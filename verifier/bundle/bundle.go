package bundle

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// Version is the first line of the manifest of the format this package
// writes and reads.
const Version = "bankdoor export v1"

// File and directory names in a bundle.
const (
	ManifestFile   = "bundle"
	CheckpointFile = "checkpoint"
	LogKeyFile     = "log.vkey"
	WitnessKeyFile = "witness.vkey"
	ProofsFile     = "proofs"
	TailFile       = "tail"
	ReceiptsDir    = "receipts"
	// TLogProofsDir holds a C2SP tlog-proof per receipt (package
	// tlogproof): its proof and the checkpoint, in one file that any
	// tlog-proof verifier reads.
	TLogProofsDir = "tlog-proofs"
)

// Limits on what Read accepts, so a hostile bundle cannot make it use
// unbounded memory per line.
const (
	maxProofHashes = 64      // a proof in a tree of fewer than 2⁶⁴ leaves
	maxLine        = 8 << 10 // a manifest, proof or key line
	maxCheckpoint  = 64 << 10
	maxTailEntry   = 16384 // receipt.MaxSize
	hashSize       = 32    // SHA-256
)

// A Bundle is an export's evidence: everything but the receipt files.
type Bundle struct {
	KeyID      string // the agent's key_id
	Size       uint64 // the checkpoint's tree size; every proof is in this tree
	Head       Head   // the agent's last receipt in the tree
	HeadRange  [][]byte
	Checkpoint []byte   // the checkpoint note, cosignatures included
	LogKey     string   // the log's verifier key, "" if the exporter was not given it
	Witnesses  []string // witness verifier keys
	Proofs     []Proof  // one per receipt, in seq order
	Tail       [][]byte // the log's entries Head.Index .. Size-1
}

// Head is the agent's last receipt in the checkpoint's tree.
type Head struct {
	Seq   uint64
	Index uint64
}

// A Proof is the RFC 6962 inclusion proof of the receipt with seq Seq,
// leaf Index, in the tree of the bundle's Size.
type Proof struct {
	Seq    uint64
	Index  uint64
	Hashes [][]byte
}

// check reports the first inconsistency between b's fields that needs no
// cryptography to find.
func (b *Bundle) check() error {
	switch {
	case !isKeyID(b.KeyID):
		return fmt.Errorf("key_id %q is not 16 lower-case hex digits", b.KeyID)
	case b.Size == 0 || b.Head.Index >= b.Size:
		return fmt.Errorf("head index %d is not in a tree of size %d", b.Head.Index, b.Size)
	case b.Head.Seq == 0:
		return errors.New("head seq is 0; seqs start at 1")
	case uint64(len(b.Tail)) != b.Size-b.Head.Index:
		return fmt.Errorf("%s holds %d entries; the log's entries %d..%d are %d", TailFile, len(b.Tail), b.Head.Index, b.Size-1, b.Size-b.Head.Index)
	}
	for i, e := range b.Tail {
		if len(e) == 0 || len(e) > maxTailEntry || bytes.IndexByte(e, '\n') >= 0 {
			return fmt.Errorf("%s entry %d (leaf %d) is empty, longer than %d bytes or holds a newline: not a receipt", TailFile, i+1, b.Head.Index+uint64(i), maxTailEntry)
		}
	}
	if strings.ContainsAny(b.LogKey, " \n") {
		return fmt.Errorf("log verifier key %q holds a space or newline", b.LogKey)
	}
	for _, k := range b.Witnesses {
		if k == "" || strings.ContainsAny(k, " \n") {
			return fmt.Errorf("verifier key %q is empty or holds a space or newline", k)
		}
	}
	if err := checkHashes(b.HeadRange); err != nil {
		return fmt.Errorf("range: %w", err)
	}
	var last uint64
	for i, p := range b.Proofs {
		if p.Seq <= last || p.Seq > b.Head.Seq {
			return fmt.Errorf("%s line %d is for seq %d; want seqs in increasing order from 1 to the head's %d", ProofsFile, i+1, p.Seq, b.Head.Seq)
		}
		if err := checkHashes(p.Hashes); err != nil {
			return fmt.Errorf("%s line %d: %w", ProofsFile, i+1, err)
		}
		last = p.Seq
	}
	return nil
}

func isKeyID(s string) bool {
	if len(s) != 16 {
		return false
	}
	for _, c := range []byte(s) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func checkHashes(hs [][]byte) error {
	if len(hs) > maxProofHashes {
		return fmt.Errorf("%d hashes, more than %d", len(hs), maxProofHashes)
	}
	for i, h := range hs {
		if len(h) != hashSize {
			return fmt.Errorf("hash %d has %d bytes, want %d", i+1, len(h), hashSize)
		}
	}
	return nil
}
