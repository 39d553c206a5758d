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
// With an ML-DSA-44 key (type 0x06) the line carries
//
//	key hash (4 bytes) || timestamp (8 bytes, big-endian Unix seconds) || ML-DSA-44 signature (2420 bytes)
//
// and the signature (FIPS 204 ML-DSA-44, empty context) is over the binary
// cosigned_message of tlog-cosignature:
//
//	"subtree/v1\n\x00" || uint8 len || cosigner name || uint64 timestamp ||
//	uint8 len || origin || uint64 start (0) || uint64 end (the tree size) || root hash (32 bytes)
//
// It commits to the witness's name, the origin, the size and the root hash,
// and not to extension lines: Policy.Verify refuses a checkpoint that has
// any (the ledger writes none). A timestamp of zero is allowed for ML-DSA-44
// (the witness then makes no claim that the tree was the largest it had
// seen); a timestamp above 2^63-1 is refused for both types.
//
// Verifier keys use the note vkey format, name+hash+base64(type || key),
// and the hash must be the key ID the key computes,
// SHA-256(name || "\n" || type || key)[:4]: the log's is a note Ed25519
// key (type 0x01); a witness's is an Ed25519 cosignature/v1 key (type
// 0x04), an ML-DSA-44 cosignature/v1 key (type 0x06, the 1312-byte public
// key), or a plain Ed25519 key (type 0x01) that is read as the
// cosignature/v1 key of the same Ed25519 public key.
//
// Signatures are parsed and checked by golang.org/x/mod/sumdb/note and
// github.com/transparency-dev/formats (whose ML-DSA-44 is filippo.io/mldsa);
// this package decides which keys count and what an error means.
package cosignature

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

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

// Witness key types (the first byte of a vkey's key material).
const (
	TypeEd25519            = 0x01 // a note Ed25519 key, read as its cosignature/v1 key
	TypeEd25519Cosignature = 0x04 // cosignature/v1, Ed25519
	TypeMLDSA44Cosignature = 0x06 // cosignature/v1, ML-DSA-44
)

// NewWitnessVerifier parses a witness's verifier key for cosignature/v1
// signatures (https://c2sp.org/tlog-cosignature): Ed25519 (type 0x04 or
// 0x01) or ML-DSA-44 (type 0x06). The key ID in the vkey must be the one
// its name and key give, so that a key copied wrong is refused here and
// not later as a witness that never cosigns.
func NewWitnessVerifier(vkey string) (note.Verifier, error) {
	hash, typ, _, err := splitVKey(vkey)
	if err != nil {
		return nil, fmt.Errorf("witness key %s: %v: want the witness's vkey, name+hash+base64(type || key)", ShortKey(vkey), err)
	}
	switch typ {
	case TypeEd25519:
		if _, err := note.NewVerifier(vkey); err != nil { // checks the note key ID
			return nil, fmt.Errorf("witness key %s: an Ed25519 note key (type 0x01): %v", ShortKey(vkey), err)
		}
	case TypeEd25519Cosignature, TypeMLDSA44Cosignature:
	default:
		return nil, fmt.Errorf("witness key %s: unknown key type 0x%02x: want 0x04 (Ed25519 cosignature/v1), 0x06 (ML-DSA-44 cosignature/v1) or 0x01 (Ed25519)", ShortKey(vkey), typ)
	}
	v, err := fnote.NewVerifierForCosignatureV1(vkey)
	if err != nil {
		return nil, fmt.Errorf("witness key %s: an %s key: %v (wrong key length for the type?)", ShortKey(vkey), typeName(typ), err)
	}
	if typ != TypeEd25519 && v.KeyHash() != hash {
		return nil, fmt.Errorf("witness key %s: the key ID is %08x, but the name and %s key give %08x: the key or its name was altered or copied wrong", ShortKey(vkey), hash, typeName(typ), v.KeyHash())
	}
	return v, nil
}

// splitVKey returns a vkey's key ID, type byte and the key after it.
func splitVKey(vkey string) (hash uint32, typ byte, key []byte, err error) {
	name, rest, ok1 := strings.Cut(vkey, "+")
	hash16, key64, ok2 := strings.Cut(rest, "+")
	h, herr := strconv.ParseUint(hash16, 16, 32)
	b, kerr := base64.StdEncoding.DecodeString(key64)
	switch {
	case !ok1 || !ok2 || name == "":
		return 0, 0, nil, errors.New("not three fields joined by '+'")
	case len(hash16) != 8 || herr != nil:
		return 0, 0, nil, fmt.Errorf("key ID %q is not 8 hex digits", hash16)
	case kerr != nil || len(b) == 0:
		return 0, 0, nil, errors.New("the key is not standard base64 of a type byte and a key")
	}
	return uint32(h), b[0], b[1:], nil
}

func typeName(typ byte) string {
	if typ == TypeMLDSA44Cosignature {
		return "ML-DSA-44"
	}
	return "Ed25519"
}

// ShortKey returns vkey as an error message shows it: whole up to 80
// bytes, else its first 80 and "…" (an ML-DSA-44 vkey is about 1,770
// characters; its name and key ID come first).
func ShortKey(vkey string) string {
	const max = 80
	if len(vkey) <= max {
		return vkey
	}
	return vkey[:max] + "…"
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
		if _, err := Timestamp(s); err != nil {
			return nil, err
		}
		out = appendLine(out, s)
	}
	return out, nil
}

// Timestamp returns the time a cosignature/v1 line says it was made. It
// fails, wrapping ErrBadCosignature, if the line is too short to hold one
// or if the timestamp is above 2^63-1, which tlog-cosignature forbids.
// Zero (the Unix epoch) is a valid ML-DSA-44 timestamp: no claim of time.
func Timestamp(s note.Signature) (time.Time, error) {
	b, err := base64.StdEncoding.DecodeString(s.Base64)
	if err != nil || len(b) < 4+8 {
		return time.Time{}, fmt.Errorf("%w: the line by %s+%08x is too short for a cosignature/v1 timestamp", ErrBadCosignature, s.Name, s.Hash)
	}
	t := binary.BigEndian.Uint64(b[4:12])
	if t > math.MaxInt64 {
		return time.Time{}, fmt.Errorf("%w: the line by %s+%08x has the timestamp %d, above the 2^63-1 tlog-cosignature allows", ErrBadCosignature, s.Name, s.Hash, t)
	}
	return time.Unix(int64(t), 0), nil
}

// Cosigned returns checkpoint with the log's signature and every
// cosignature stored for its size, which stored returns (the Cosignatures
// method of a cosignature store, such as anchor.CosignatureStore): the
// note a ledger serves. It merges them with Merge.
func Cosigned(checkpoint []byte, logKey note.Verifier, stored func(size uint64) ([][]byte, error)) ([]byte, error) {
	cp, _, err := Open(checkpoint, logKey)
	if err != nil {
		return nil, err
	}
	cosigs, err := stored(cp.Size)
	if err != nil {
		return nil, fmt.Errorf("reading the cosignatures of size %d: %w", cp.Size, err)
	}
	return Merge(checkpoint, logKey, cosigs...)
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
