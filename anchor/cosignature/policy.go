package cosignature

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"
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
// between 0 and the number of witness keys, and no key may be given twice
// (it would be counted twice).
func NewPolicy(logVKey string, witnessVKeys []string, quorum int) (*Policy, error) {
	logKey, err := NewLogVerifier(logVKey)
	if err != nil {
		return nil, err
	}
	p := &Policy{Log: logKey, Quorum: quorum}
	seen := make(map[string]bool)
	for _, k := range witnessVKeys {
		v, err := NewWitnessVerifier(k)
		if err != nil {
			return nil, err
		}
		id := keyID(v)
		if seen[id] {
			return nil, fmt.Errorf("witness key %s is given twice: give each witness key once", id)
		}
		seen[id] = true
		p.Witnesses = append(p.Witnesses, v)
	}
	if quorum < 0 || quorum > len(p.Witnesses) {
		return nil, fmt.Errorf("witness quorum %d is impossible with %d witness key(s): give a quorum from 0 to %d, or more witness keys", quorum, len(p.Witnesses), len(p.Witnesses))
	}
	return p, nil
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
