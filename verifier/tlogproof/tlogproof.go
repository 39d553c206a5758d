// Package tlogproof reads and writes C2SP tlog-proof files
// (https://c2sp.org/tlog-proof, version c2sp.org/tlog-proof@v1): an
// offline-verifiable proof that an entry is in a transparency log, as a
// checkpoint (with any witness cosignatures), the entry's index and the
// RFC 6962 inclusion proof of it in the checkpoint's tree.
//
// A proof is lines ending in "\n":
//
//	c2sp.org/tlog-proof@v1
//	extra BASE64      optional, opaque and unauthenticated
//	index N           zero-based, decimal, no leading zero
//	HASH              zero or more: the inclusion proof, from the leaf's
//	...               sibling up to the root's child, standard padded base64
//	                  of 32 bytes each (RFC 4648 section 4)
//	(an empty line)
//	CHECKPOINT        the log's checkpoint note, verbatim to its end
//
// bankdoor writes one per receipt (file extension .tlog-proof, the
// receipt's name otherwise) in an export bundle; the entry is the receipt
// file's bytes, so its leaf hash is RFC 6962's of those bytes. [Parse]
// accepts exactly what [Proof.Marshal] writes: one encoding per proof.
package tlogproof

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"

	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"

	"github.com/bankdoor/bankdoor/anchor/cosignature"
)

// Header is the first line of a proof of this version.
const Header = "c2sp.org/tlog-proof@v1"

// Ext is the file extension the spec recommends.
const Ext = ".tlog-proof"

// Limits of what Parse accepts, so a hostile file cannot make it hold
// much: a tree of fewer than 2⁶⁴ leaves has proofs of at most 64 hashes.
const (
	MaxHashes     = 64
	MaxCheckpoint = 64 << 10
	MaxExtra      = 4 << 10
	MaxSize       = len(Header) + 1 + len("extra ") + (MaxExtra+2)/3*4 + 1 + len("index ") + 20 + 1 + MaxHashes*45 + 1 + MaxCheckpoint
	hashSize      = 32 // SHA-256
)

// Proof is one tlog-proof.
type Proof struct {
	Extra      []byte   // nil: no extra line
	Index      uint64   // the entry's leaf index
	Hashes     [][]byte // the RFC 6962 inclusion proof at the checkpoint's size
	Checkpoint []byte   // the signed checkpoint note, cosignatures included
}

// Marshal returns the proof in its file format.
func (p *Proof) Marshal() []byte {
	var b bytes.Buffer
	b.WriteString(Header + "\n")
	if p.Extra != nil {
		b.WriteString("extra " + base64.StdEncoding.EncodeToString(p.Extra) + "\n")
	}
	b.WriteString("index " + strconv.FormatUint(p.Index, 10) + "\n")
	for _, h := range p.Hashes {
		b.WriteString(base64.StdEncoding.EncodeToString(h) + "\n")
	}
	b.WriteString("\n")
	b.Write(p.Checkpoint)
	return b.Bytes()
}

// Parse strictly parses a proof: the header, an optional extra line with
// non-empty data, a canonical index, up to MaxHashes hashes of 32 bytes,
// the empty line and a checkpoint that ends in a newline. It does not
// verify the checkpoint's signatures: that is [Proof.Verify]'s job.
func Parse(data []byte) (*Proof, error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("tlog-proof: %d bytes, more than %d", len(data), MaxSize)
	}
	rest := data
	line := func() ([]byte, bool) {
		l, r, ok := bytes.Cut(rest, []byte("\n"))
		rest = r
		return l, ok
	}
	l, ok := line()
	if !ok || string(l) != Header {
		return nil, fmt.Errorf("tlog-proof: the first line is not %q", Header)
	}
	p := new(Proof)
	if l, ok = line(); ok && bytes.HasPrefix(l, []byte("extra ")) {
		enc := l[len("extra "):]
		extra, err := base64.StdEncoding.Strict().DecodeString(string(enc))
		if err != nil || len(extra) == 0 || len(extra) > MaxExtra || base64.StdEncoding.EncodeToString(extra) != string(enc) {
			return nil, fmt.Errorf("tlog-proof: the extra line is not 1 to %d bytes in standard padded base64", MaxExtra)
		}
		p.Extra = extra
		l, ok = line()
	}
	n, found := bytes.CutPrefix(l, []byte("index "))
	if !ok || !found {
		return nil, errors.New(`tlog-proof: no "index N" line after the header`)
	}
	idx, err := strconv.ParseUint(string(n), 10, 64)
	if err != nil || strconv.FormatUint(idx, 10) != string(n) {
		return nil, fmt.Errorf("tlog-proof: index %q is not a decimal number without leading zeros", n)
	}
	p.Index = idx
	for {
		l, ok = line()
		if !ok {
			return nil, errors.New("tlog-proof: no empty line before the checkpoint")
		}
		if len(l) == 0 {
			break
		}
		if len(p.Hashes) == MaxHashes {
			return nil, fmt.Errorf("tlog-proof: more than %d proof hashes", MaxHashes)
		}
		h, err := base64.StdEncoding.Strict().DecodeString(string(l))
		if err != nil || len(h) != hashSize {
			return nil, fmt.Errorf("tlog-proof: proof hash %d is not %d bytes in standard padded base64", len(p.Hashes)+1, hashSize)
		}
		p.Hashes = append(p.Hashes, h)
	}
	switch {
	case len(rest) == 0:
		return nil, errors.New("tlog-proof: no checkpoint after the empty line")
	case len(rest) > MaxCheckpoint:
		return nil, fmt.Errorf("tlog-proof: the checkpoint is more than %d bytes", MaxCheckpoint)
	case rest[len(rest)-1] != '\n':
		return nil, errors.New("tlog-proof: the checkpoint does not end in a newline")
	}
	p.Checkpoint = bytes.Clone(rest)
	return p, nil
}

// Verify checks that entry is in the log as p says: p's checkpoint is
// signed by the policy's log key and cosigned by its quorum of witnesses,
// and p's inclusion proof binds the RFC 6962 leaf hash of entry, at p's
// index, to the checkpoint's root. It returns the verified checkpoint. The
// extra data, which nothing authenticates, plays no part.
func (p *Proof) Verify(entry []byte, pol cosignature.Trust) (*cosignature.Verified, error) {
	cp, err := pol.Verify(p.Checkpoint)
	if err != nil {
		return nil, fmt.Errorf("tlog-proof: checkpoint: %w", err)
	}
	if err := p.VerifyInclusion(rfc6962.DefaultHasher.HashLeaf(entry), cp.Size, cp.Hash); err != nil {
		return nil, err
	}
	return cp, nil
}

// VerifyInclusion checks p's inclusion proof of leafHash at p's index in
// the tree of size with root: for a caller that has verified p's
// checkpoint already.
func (p *Proof) VerifyInclusion(leafHash []byte, size uint64, root []byte) error {
	if p.Index >= size {
		return fmt.Errorf("tlog-proof: index %d is not in the checkpoint's tree of size %d", p.Index, size)
	}
	if err := proof.VerifyInclusion(rfc6962.DefaultHasher, p.Index, size, leafHash, p.Hashes, root); err != nil {
		return fmt.Errorf("tlog-proof: the inclusion proof of leaf %d does not verify against the checkpoint's root at size %d: %w", p.Index, size, err)
	}
	return nil
}
