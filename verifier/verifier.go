// Package verifier checks bankdoor receipts offline, with nothing but the
// agent's public key, offline against a witnessed checkpoint
// ([VerifyAnchored], in anchored.go), and online against a ledger
// ([VerifyInLog], in online.go).
//
// [VerifyDir] checks a receipts directory (the format is in package
// github.com/bankdoor/bankdoor/ledger/receipt) in seq order, and stops at
// the first receipt that fails, naming its file and why:
//
//   - every file is NNNNNN.json (names starting with "." are skipped, and
//     so are subdirectories, such as the chains of other agents in
//     DIR/AGENT, unless they are named like a receipt);
//   - every receipt parses strictly, in RFC 8785 canonical form;
//   - every receipt's key_id is the --pub key's and its signature verifies
//     (exactly the signatures crypto/ed25519.Verify accepts);
//   - the file name is the receipt's seq;
//   - the seqs are 1, 2, 3, ... with none missing;
//   - each prev is the SHA-256 of the previous file (64 zeros for seq 1);
//   - if asked, every policy_sha256 is the given policy's.
//
// Together these show that the receipts were made by the key's holder, in
// this order, and that none was changed, swapped, or removed from before
// the last one. They cannot show that receipts after the last one were
// removed (tail truncation): that takes a checkpoint of the ledger that
// an independent witness has cosigned. [VerifyAnchored] (anchored.go)
// checks a receipts directory or an export bundle (package
// verifier/bundle) against one, offline, and names every missing seq.
package verifier

import (
	"cmp"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/bankdoor/bankdoor/ledger/receipt"
)

// Options adds checks to VerifyDir. The zero value adds none.
type Options struct {
	// PolicySHA256, if not empty, is the lower-case hex SHA-256 of the
	// policy file (bankdoor verify --policy) that every receipt's
	// policy_sha256 must equal.
	PolicySHA256 string
}

// A Report describes a receipts directory that verified.
type Report struct {
	Dir      string
	KeyID    string    // the public key's key_id
	Receipts []Checked // in seq order
	FirstSeq uint64    // always 1
	LastSeq  uint64
	Head     [32]byte // receipt hash (SHA-256) of the last receipt file
}

// Checked is one receipt that verified.
type Checked struct {
	File     string // base name, e.g. 000001.json
	Seq      uint64
	SHA256   [32]byte // the receipt hash
	Decision string
}

// An Error says which receipt file failed verification, and why. File is
// the base name of the file, or "" if the fault is the directory's.
type Error struct {
	File   string
	Reason string
}

func (e *Error) Error() string {
	if e.File == "" {
		return e.Reason
	}
	return e.File + ": " + e.Reason
}

// VerifyDir verifies the receipts directory dir against pub, the agent's
// public key, as described in the package documentation. A directory
// that fails verification, or has no receipts, gives an *Error; other
// errors (an unreadable directory or file) are returned as they are.
func VerifyDir(dir string, pub ed25519.PublicKey, opts Options) (*Report, error) {
	if err := checkKey(pub); err != nil {
		return nil, err
	}
	if p := opts.PolicySHA256; p != "" && (len(p) != 64 || strings.Trim(p, "0123456789abcdef") != "") {
		return nil, fmt.Errorf("verify receipts: policy SHA-256 %q is not 64 lower-case hex digits", p)
	}
	names, err := receiptFiles(dir)
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, &Error{Reason: "no receipts in " + dir}
	}
	rep, _, err := verifyFiles(dir, names, pub, opts, false, nil)
	return rep, err
}

// checkKey checks that pub is an Ed25519 public key.
func checkKey(pub ed25519.PublicKey) error {
	if len(pub) != ed25519.PublicKeySize {
		return errors.New("verify receipts: the public key is not an Ed25519 public key")
	}
	return nil
}

// receiptFiles returns the receipt file names in dir in seq order. Any
// entry that is neither a receipt file, a dot file nor a directory with
// another name is an *Error, the first such by name.
func receiptFiles(dir string) ([]string, error) {
	entries, err := readDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read receipts directory: %w", err)
	}
	type file struct {
		name string
		seq  uint64
	}
	files := make([]file, 0, len(entries))
	var bad *Error
	last := uint64(0) // the highest seq
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		seq, ok := receipt.ParseFileName(e.Name())
		if e.IsDir() && !ok {
			continue
		}
		if bad != nil && e.Name() > bad.File {
			continue
		}
		switch {
		case !ok:
			bad = &Error{e.Name(), "not a receipt file name (want NNNNNN.json, like 000001.json); move it out of the directory"}
		case !e.Type().IsRegular():
			bad = &Error{e.Name(), "not a regular file"}
		default:
			files = append(files, file{e.Name(), seq})
			last = max(last, seq)
		}
	}
	if bad != nil {
		return nil, bad
	}
	names := make([]string, len(files))
	if last == uint64(len(files)) { // seq 1 to n, each once (a name is its seq's): in place
		for _, f := range files {
			names[f.seq-1] = f.name
		}
		return names, nil
	}
	slices.SortFunc(files, func(a, b file) int { return cmp.Compare(a.seq, b.seq) })
	for i, f := range files {
		names[i] = f.name
	}
	return names, nil
}

// readDir is os.ReadDir without the sort by name, in the directory's
// order.
func readDir(dir string) ([]os.DirEntry, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
}

// chain is the state of a verification: what the next receipt must be.
type chain struct {
	key  ed25519.PublicKey // the agent's
	opts Options
	rep  *Report
	last string // file name of the last receipt checked, "" if none
}

// parse parses b and checks its key_id and signature. It does not change
// c, so calls may run in parallel.
func (c *chain) parse(name string, b []byte) (*receipt.Receipt, error) {
	r, err := receipt.Open(b, func(r *receipt.Receipt) (ed25519.PublicKey, error) {
		if r.KeyID != c.rep.KeyID {
			return nil, &Error{name, fmt.Sprintf("key_id %s is not the public key's key_id %s", r.KeyID, c.rep.KeyID)}
		}
		return c.key, nil
	})
	var e *Error
	switch {
	case errors.As(err, &e):
		return nil, e
	case errors.Is(err, receipt.ErrSignature):
		return nil, &Error{name, "signature does not verify with the public key"}
	case err != nil:
		return nil, &Error{name, err.Error()}
	}
	return r, nil
}

// named checks that name, a receipt file name (one receipt.ParseFileName
// accepts, as receiptFiles's are), is the file name of r's seq. It does
// not need the receipts before r, so calls may run in parallel.
func named(name string, r *receipt.Receipt) error {
	// name is the FileName of the seq its digits spell, and no other seq
	// has that FileName: comparing the seqs compares the names, without
	// formatting one.
	if seq, err := strconv.ParseUint(strings.TrimSuffix(name, ".json"), 10, 64); err != nil || seq != r.Seq {
		return &Error{name, fmt.Sprintf("holds seq %d, so its name should be %s", r.Seq, receipt.FileName(r.Seq))}
	}
	return nil
}

// accept checks r, parsed by parse from a file named name (checked by
// named) whose receipt hash is sum, as the next receipt in seq order: its
// chain link and policy.
func (c *chain) accept(name string, r *receipt.Receipt, sum [32]byte) error {
	if err := c.link(name, r); err != nil {
		return err
	}
	if p := c.opts.PolicySHA256; p != "" && r.PolicySHA256 != p {
		return &Error{name, fmt.Sprintf("policy_sha256 %s is not the policy's SHA-256 %s", r.PolicySHA256, p)}
	}
	decision := receipt.Deny // not r.Decision, which holds on to the whole receipt's text
	if r.Decision == receipt.Allow {
		decision = receipt.Allow
	}
	c.rep.Receipts = append(c.rep.Receipts, Checked{name, r.Seq, sum, decision})
	c.rep.LastSeq, c.rep.Head, c.last = r.Seq, sum, name
	return nil
}

// link checks r's seq and prev against the last receipt checked.
func (c *chain) link(name string, r *receipt.Receipt) error {
	want := c.rep.LastSeq + 1
	if r.Seq != want {
		more := ""
		if r.Seq-want > 1 {
			more = fmt.Sprintf(" (%d receipts missing: seq %d to %d)", r.Seq-want, want, r.Seq-1)
		}
		if c.last == "" {
			return &Error{name, fmt.Sprintf("seq %d missing before %s, the first receipt%s", want, name, more)}
		}
		return &Error{name, fmt.Sprintf("seq %d missing between %s and %s%s", want, c.last, name, more)}
	}
	if c.last == "" {
		if r.Prev != receipt.FirstPrev {
			return &Error{name, "prev of the first receipt is not 64 zeros"}
		}
		return nil
	}
	var head [64]byte // hex, without hex.EncodeToString's allocation
	hex.Encode(head[:], c.rep.Head[:])
	if r.Prev != string(head[:]) {
		return &Error{name, "prev does not match SHA-256 of " + c.last}
	}
	return nil
}
