package cosignature

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"

	"github.com/bankdoor/bankdoor/internal/weakkey"
)

// Policy says whose signatures make a checkpoint trusted: the log's key, and
// at least Quorum of the Witnesses' keys. It is what
// `bankdoor verify --checkpoint FILE --log-key VKEY --witness-key VKEY... --witness-quorum N`
// applies.
type Policy struct {
	Log       note.Verifier
	Witnesses []note.Verifier // distinct keys
	Quorum    int             // 0 <= Quorum <= len(Witnesses)
}

// NewPolicy parses the log's vkey and the witnesses' vkeys. The quorum must be
// between 0 and the number of witness keys, and the keys must be distinct
// (see KeySet): a witness key given twice, under any names or key types,
// would count one cosignature twice, and the log's key as a witness's
// would let the log alone meet the quorum.
func NewPolicy(logVKey string, witnessVKeys []string, quorum int) (*Policy, error) {
	logKey, err := NewLogVerifier(logVKey)
	if err != nil {
		return nil, err
	}
	p := &Policy{Log: logKey, Quorum: quorum}
	var keys KeySet
	if err := keys.Add(logVKey, true, "the log key "+keyID(logKey)); err != nil {
		return nil, err
	}
	for _, k := range witnessVKeys {
		v, err := NewWitnessVerifier(k)
		if err != nil {
			return nil, err
		}
		id := "witness key " + vkeyID(k)
		if err := keys.Add(k, false, id); err != nil {
			return nil, fmt.Errorf("%s: %w", id, err)
		}
		p.Witnesses = append(p.Witnesses, v)
	}
	if quorum < 0 || quorum > len(p.Witnesses) {
		return nil, fmt.Errorf("witness quorum %d is impossible with %d witness key(s): give a quorum from 0 to %d, or more witness keys", quorum, len(p.Witnesses), len(p.Witnesses))
	}
	return p, nil
}

// A KeySet is the public keys of the logs and witnesses a verifier trusts,
// added as they are read. A public key is one signer whatever the name,
// key ID and type byte of the vkey that wraps it (a note Ed25519 key and
// its cosignature/v1 key are one), so Add refuses a witness key that wraps
// another witness's public key, whose one cosignature would count twice, a
// witness key that wraps a log's or a log key that wraps a witness's, which
// would let the log alone meet a quorum, and a log key given twice. The
// zero KeySet is empty.
type KeySet struct {
	held map[string]heldKey // public key -> the entry that added it
}

type heldKey struct {
	where string
	log   bool
}

// Add adds the public key vkey wraps: a log's if log is true, else a
// witness's. where names the entry in the caller's terms ("line 2"); the
// error of a later entry that wraps the same public key names it.
func (s *KeySet) Add(vkey string, log bool, where string) error {
	_, typ, key, err := splitVKey(vkey)
	if err != nil {
		return fmt.Errorf("key %s: %v", ShortKey(vkey), err)
	}
	if typ == TypeEd25519 || typ == TypeEd25519Cosignature {
		if err := weakkey.Check(key); err != nil {
			return fmt.Errorf("key %s: %w", ShortKey(vkey), err)
		}
	}
	prev, dup := s.held[string(key)]
	if !dup {
		if s.held == nil {
			s.held = make(map[string]heldKey)
		}
		s.held[string(key)] = heldKey{where: where, log: log}
		return nil
	}
	what, why := "the key", "duplicate witnesses are not allowed"
	if log {
		what = "the log key"
	}
	switch {
	case log && prev.log:
		why = "duplicate logs are not allowed"
	case log || prev.log:
		why = "a log's key is never a witness's, or the log alone would meet the quorum"
	}
	return fmt.Errorf("%s wraps the same public key as %s's: %s", what, prev.where, why)
}

// vkeyID returns the name and key ID of vkey as they are written.
func vkeyID(vkey string) string {
	name, rest, _ := strings.Cut(vkey, "+")
	hash, _, _ := strings.Cut(rest, "+")
	return name + "+" + hash
}

// Verified is a checkpoint that satisfied a Policy.
type Verified struct {
	log.Checkpoint
	Note      *note.Note
	Cosigners []Cosigner       // trusted witnesses whose cosignature verified, in Policy order
	Ignored   []note.Signature // lines by keys the policy does not know; they count for nothing
}

// Cosigner is a trusted witness whose cosignature verified.
type Cosigner struct {
	Key  string    // "name+hash" of the witness key
	Time time.Time // when the witness says it cosigned (cosignature/v1 timestamp; the Unix epoch if it states none)
}

func (c Cosigner) String() string {
	if c.Time.Unix() == 0 { // an ML-DSA-44 cosignature may state no time
		return c.Key + " (no timestamp)"
	}
	return c.Key + " at " + c.Time.UTC().Format(time.RFC3339)
}

// Verify checks the checkpoint note msg against the policy and returns the
// parsed checkpoint, which must have no extension lines. The error wraps ErrMalformed, ErrLogSignature,
// ErrBadCosignature (a line by a trusted witness key that does not verify over
// this checkpoint) or ErrQuorum. Lines by unknown keys are ignored and
// reported in Verified.Ignored.
func (p *Policy) Verify(msg []byte) (*Verified, error) {
	cp, n, err := Open(msg, p.Log)
	if err != nil {
		return nil, err
	}
	if n.Text != string(cp.Marshal()) {
		return nil, fmt.Errorf("%w: the checkpoint has extension lines after the root hash, which an ML-DSA-44 cosignature does not cover and bankdoor's ledger never writes", ErrMalformed)
	}
	v := &Verified{Checkpoint: *cp, Note: n}
	var names []string
	for _, w := range p.Witnesses {
		c, ok, err := cosigned(msg, p.Log, w)
		if err != nil {
			return nil, err
		}
		if ok {
			v.Cosigners = append(v.Cosigners, c)
			names = append(names, c.Key)
		}
	}
	v.Ignored = unknown(n.UnverifiedSigs, p.Witnesses)
	if len(v.Cosigners) < p.Quorum {
		return v, fmt.Errorf("%w: %d of the %d trusted witnesses cosigned %s size %d (cosigned by: %s), %d required; ignored %d line(s) by unknown keys%s%s",
			ErrQuorum, len(v.Cosigners), len(p.Witnesses), cp.Origin, cp.Size, listOrNone(names), p.Quorum, len(v.Ignored), ignoredNames(v.Ignored), p.otherKeys(v.Ignored))
	}
	return v, nil
}

// otherKeys explains ignored lines that carry a trusted witness's name
// but another key ID: a key the policy does not trust, or a line whose
// key ID was altered.
func (p *Policy) otherKeys(ignored []note.Signature) string {
	var b strings.Builder
	for _, s := range ignored {
		for _, w := range p.Witnesses {
			if s.Name == w.Name() {
				fmt.Fprintf(&b, "; the line by %s carries key ID %08x, not the trusted key's %08x: it was made with another key of that name, or altered", s.Name, s.Hash, w.KeyHash())
			}
		}
	}
	return b.String()
}

// cosigned reports whether msg carries a valid signature by witness. Each
// witness is checked on its own so that one bad line names its own key.
func cosigned(msg []byte, logKey, witness note.Verifier) (Cosigner, bool, error) {
	n, err := note.Open(msg, note.VerifierList(logKey, witness))
	var invalid *note.InvalidSignatureError
	if errors.As(err, &invalid) {
		return Cosigner{}, false, fmt.Errorf("%w: the line by witness %s+%08x does not verify over this checkpoint: it is forged, corrupted, or a cosignature of a different checkpoint", ErrBadCosignature, invalid.Name, invalid.Hash)
	}
	if err != nil {
		return Cosigner{}, false, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	for _, s := range n.Sigs {
		if s.Name == witness.Name() && s.Hash == witness.KeyHash() {
			t, err := Timestamp(s)
			return Cosigner{Key: keyID(witness), Time: t}, err == nil, err
		}
	}
	return Cosigner{}, false, nil
}

// unknown returns the signatures made by none of the witnesses.
func unknown(sigs []note.Signature, witnesses []note.Verifier) []note.Signature {
	var out []note.Signature
	for _, s := range sigs {
		known := false
		for _, w := range witnesses {
			known = known || (s.Name == w.Name() && s.Hash == w.KeyHash())
		}
		if !known {
			out = append(out, s)
		}
	}
	return out
}

func keyID(v note.Verifier) string { return fmt.Sprintf("%s+%08x", v.Name(), v.KeyHash()) }

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func ignoredNames(sigs []note.Signature) string {
	var names []string
	for _, s := range sigs {
		names = append(names, fmt.Sprintf("%s+%08x", s.Name, s.Hash))
	}
	if len(names) == 0 {
		return ""
	}
	return " (" + strings.Join(names, ", ") + ")"
}
