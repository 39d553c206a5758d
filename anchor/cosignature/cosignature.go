// Package cosignature checks and combines witness cosignatures on the
// ledger's checkpoints, offline: it never touches the network.
//
// A checkpoint is a C2SP signed note (https://c2sp.org/signed-note) whose
// text is a C2SP tlog-checkpoint (https://c2sp.org/tlog-checkpoint): the
// origin line, the tree size in decimal, the base64 RFC 6962 root hash, each
// followed by a newline. A witness cosignature (https://c2sp.org/tlog-cosignature)
// is one more signature line on the same note. With an Ed25519 key of type
// cosignature/v1 (0x04) the line carries
//
//	key hash (4 bytes) || timestamp (8 bytes, big-endian Unix seconds) || Ed25519 signature (64 bytes)
//
// and the signature is over
//
//	"cosignature/v1\ntime <timestamp>\n" || checkpoint text
//
// so it commits to the origin, size and root hash of exactly one checkpoint,
// and to nothing else on the note.
//
// # Example
//
// A checkpoint of size 3 signed by the log "bankdoor.example/ledger" and
// cosigned by the witness "witness.example" (ExamplePolicy_Verify checks it):
//
//	bankdoor.example/ledger
//	3
//	qdtHs0Ej/GnuFYt6mGfczLAqFIJYX5qxBCABgprMwQ4=
//
//	— bankdoor.example/ledger 61Au/x6Ln5uAj0dsuc2hYudD58Qr7nSOrwm4QmEB/H7xNY7qmJ70sc+hBcrXo0FmxJX9ECXfALjd5mnMThP+3oxhKgw=
//	— witness.example Ni3uBQAAAABrERu2CJ1Bv4LlXh/CI+K+wFdmLzG0hqVVennmYou21l1cE5WjKLPdB9izxtfM2hiYGGsoNG056ljWwUrBZUgzXxY5Dg==
//
// The log's verifier key is
// bankdoor.example/ledger+eb502eff+AdT/OXBWCjm7KUkIgvV/zIasiyt6Xzzo8zwuM+LKer0n
// and the witness's is
// witness.example+362dee05+BIVqbfwoOPqbFIDmDmz70Ihn+9AEbjXOUr3wuFmhgJ58.
// The witness line decodes to the key hash 362dee05, the timestamp
// 0x000000006b111bb6 (2026-12-03T07:35:18Z) and the 64-byte signature.
//
// Verifier keys use the note vkey format, name+hash+base64(type || key):
// the log's is a note Ed25519 key (type 0x01); a witness's is a
// cosignature/v1 key (type 0x04), or a plain Ed25519 key (type 0x01) that is
// read as the cosignature/v1 key of the same Ed25519 public key.
//
// Signatures are parsed and checked by golang.org/x/mod/sumdb/note and
// github.com/transparency-dev/formats; this package decides which keys count
// and what an error means.
package cosignature

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/transparency-dev/formats/log"
	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
)

// Error kinds. Every error this package returns for a note wraps one of them.
var (
	// ErrLogSignature: the note carries no valid signature by the log key.
	ErrLogSignature = errors.New("checkpoint is not signed by the log key")
	// ErrMalformed: the bytes are not a signed note holding a canonical checkpoint.
	ErrMalformed = errors.New("malformed checkpoint")
	// ErrBadCosignature: a line names a trusted witness key but its signature
	// does not verify over this checkpoint: it was forged, corrupted, or made
	// for a different checkpoint.
	ErrBadCosignature = errors.New("invalid witness cosignature")
	// ErrNoCosignature: a witness answered without a cosignature by its key.
	ErrNoCosignature = errors.New("no cosignature by the witness key")
	// ErrQuorum: fewer trusted witnesses cosigned than the policy requires.
	ErrQuorum = errors.New("witness quorum not met")
)

// NewLogVerifier parses the log's verifier key (a note vkey). The checkpoint
// origin is the key's name.
func NewLogVerifier(vkey string) (note.Verifier, error) {
	v, err := fnote.NewVerifier(vkey)
	if err != nil {
		return nil, fmt.Errorf("log key %q: %v: want the log's note verifier key, name+hash+base64", vkey, err)
	}
	return v, nil
}

// NewWitnessVerifier parses a witness's verifier key for cosignature/v1
// signatures (https://c2sp.org/tlog-cosignature).
func NewWitnessVerifier(vkey string) (note.Verifier, error) {
	v, err := fnote.NewVerifierForCosignatureV1(vkey)
	if err != nil {
		return nil, fmt.Errorf("witness key %q: %v: want the witness's name+hash+base64 cosignature/v1 vkey", vkey, err)
	}
	return v, nil
}

// Open verifies the log's signature on a checkpoint note and parses it
// strictly: the origin must be the log key's name, the size canonical decimal
// and the root hash 32 bytes. Signatures by keys other than logKey are left
// in the returned note's UnverifiedSigs; a second signature by logKey is dropped.
func Open(msg []byte, logKey note.Verifier) (*log.Checkpoint, *note.Note, error) {
	cp, _, n, err := log.ParseCheckpoint(msg, logKey.Name(), logKey)
	if err != nil {
		return nil, nil, openError(msg, logKey, err)
	}
	if !bytes.HasPrefix([]byte(n.Text), cp.Marshal()) || len(cp.Hash) != 32 {
		return nil, nil, fmt.Errorf("%w: the text is not a canonical tlog-checkpoint (origin, decimal size, base64 32-byte root hash)", ErrMalformed)
	}
	return cp, n, nil
}

// openError names what made log.ParseCheckpoint fail.
func openError(msg []byte, logKey note.Verifier, err error) error {
	var invalid *note.InvalidSignatureError
	var unverified *note.UnverifiedNoteError
	n, openErr := note.Open(msg, note.VerifierList(logKey))
	switch {
	case errors.As(openErr, &invalid):
		return fmt.Errorf("%w: the signature by %s+%08x does not verify: the checkpoint was altered or forged", ErrLogSignature, invalid.Name, invalid.Hash)
	case errors.As(openErr, &unverified):
		return fmt.Errorf("%w: no signature line by %s+%08x: the checkpoint is another log's, or the key is", ErrLogSignature, logKey.Name(), logKey.KeyHash())
	case openErr != nil:
		return fmt.Errorf("%w: %v: want a signed note (text, blank line, signature lines)", ErrMalformed, openErr)
	case n != nil:
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return err
}

// Verify checks the cosignature lines a witness returned for checkpoint (the
// exact note that was sent) and returns the lines made by the witness key,
// each "— name base64\n". Lines by other keys are ignored. It fails if a line
// by the witness key does not verify over checkpoint, or if there is none.
func Verify(checkpoint, lines []byte, witness note.Verifier) ([]byte, error) {
	if err := checkLines(lines); err != nil {
		return nil, err
	}
	msg := append(slices.Clip(checkpoint), lines...)
	n, err := note.Open(msg, note.VerifierList(witness))
	var invalid *note.InvalidSignatureError
	var unverified *note.UnverifiedNoteError
	switch {
	case errors.As(err, &invalid):
		return nil, fmt.Errorf("%w: the line by %s+%08x does not verify over the checkpoint sent", ErrBadCosignature, invalid.Name, invalid.Hash)
	case errors.As(err, &unverified):
		return nil, fmt.Errorf("%w %s+%08x among %d signature line(s)", ErrNoCosignature, witness.Name(), witness.KeyHash(), len(unverified.Note.UnverifiedSigs))
	case err != nil:
		return nil, fmt.Errorf("%w: cosignature lines %q: %v", ErrMalformed, lines, err)
	}
	var out []byte
	for _, s := range n.Sigs {
		out = appendLine(out, s)
	}
	return out, nil
}

// Merge returns the log-signed checkpoint with the given cosignature lines
// added, as one signed note: the log's signature first, then one line per
// other key, sorted by key name and key hash. Identical lines appear once;
// when a key signed more than once, the line that sorts first is kept, so
// the result depends only on the set of lines given, not their order.
//
// Merge checks the log's signature and the note's shape but not the
// cosignatures: they are checked when collected (Verify) and by every reader
// (Policy.Verify).
func Merge(checkpoint []byte, logKey note.Verifier, cosignatures ...[]byte) ([]byte, error) {
	msg := slices.Clip(checkpoint)
	for _, c := range cosignatures {
		if err := checkLines(c); err != nil {
			return nil, err
		}
		msg = append(msg, c...)
	}
	_, n, err := Open(msg, logKey)
	if err != nil {
		return nil, err
	}
	sigs := slices.Clone(n.UnverifiedSigs)
	slices.SortFunc(sigs, func(a, b note.Signature) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Hash, b.Hash), cmp.Compare(a.Base64, b.Base64))
	})
	sigs = slices.CompactFunc(sigs, func(a, b note.Signature) bool { return a.Name == b.Name && a.Hash == b.Hash })
	n.Sigs, n.UnverifiedSigs = append(n.Sigs, sigs...), nil // Sign writes both lists
	return note.Sign(n)
}

// checkLines checks that b is one or more note signature lines and nothing
// else, so that appending it to a note cannot change the note's text.
func checkLines(b []byte) error {
	if len(b) == 0 || b[len(b)-1] != '\n' {
		return fmt.Errorf("%w: want signature lines ending in a newline, got %q", ErrMalformed, b)
	}
	for line := range bytes.Lines(b) {
		if !bytes.HasPrefix(line, []byte("— ")) {
			return fmt.Errorf("%w: line %q is not a note signature line (\"— name base64\")", ErrMalformed, line)
		}
	}
	return nil
}

// appendLine appends the note signature line for s.
func appendLine(b []byte, s note.Signature) []byte {
	return fmt.Appendf(b, "— %s %s\n", s.Name, s.Base64)
}
