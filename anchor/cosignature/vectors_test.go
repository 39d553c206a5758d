package cosignature_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/mldsa"
	"github.com/rogpeppe/go-internal/txtar"
	"github.com/transparency-dev/formats/log"
	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"

	"github.com/bankdoor/bankdoor/anchor/cosignature"
)

// vectors reads a txtar file of testdata; see the comment at its top for
// where it comes from.
func vectors(t *testing.T, name string) map[string]string {
	t.Helper()
	a, err := txtar.ParseFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	files := make(map[string]string)
	for _, f := range a.Files {
		files[f.Name] = string(f.Data)
	}
	return files
}

// specMessage is the ML-DSA-44 cosigned_message of c2sp.org/tlog-cosignature,
// written out here from the specification, not by the formats package that
// Verify uses, so that the two are checked against each other.
func specMessage(name string, timestamp uint64, origin string, size uint64, hash []byte) []byte {
	m := []byte("subtree/v1\n\x00")
	m = append(append(m, byte(len(name))), name...)
	m = binary.BigEndian.AppendUint64(m, timestamp)
	m = append(append(m, byte(len(origin))), origin...)
	m = binary.BigEndian.AppendUint64(m, 0) // start
	m = binary.BigEndian.AppendUint64(m, size)
	return append(m, hash...)
}

// checkSpec verifies an ML-DSA-44 cosignature line over checkpoint text
// with filippo.io/mldsa directly: key ID, then the signature over
// specMessage, as tlog-cosignature defines them.
func checkSpec(t *testing.T, vkey, text string, s note.Signature) uint64 {
	t.Helper()
	name, rest, _ := strings.Cut(vkey, "+")
	_, key64, _ := strings.Cut(rest, "+")
	key, err := base64.StdEncoding.DecodeString(key64)
	if err != nil || len(key) != 1+1312 || key[0] != 0x06 {
		t.Fatalf("vkey %.60s…: want type 0x06 and a 1312-byte key, got %d bytes, %v", vkey, len(key), err)
	}
	id := sha256.Sum256(append([]byte(name+"\n"), key...))
	sig, err := base64.StdEncoding.DecodeString(s.Base64)
	if err != nil || len(sig) != 4+8+2420 {
		t.Fatalf("signature of %d bytes (%v); want key ID, timestamp and a 2420-byte ML-DSA-44 signature", len(sig), err)
	}
	if !bytes.Equal(sig[:4], id[:4]) || s.Hash != binary.BigEndian.Uint32(id[:4]) {
		t.Fatalf("key ID %x; want SHA-256(name || \\n || 0x06 || key)[:4] = %x", sig[:4], id[:4])
	}
	pub, err := mldsa.NewPublicKey(mldsa.MLDSA44(), key[1:])
	if err != nil {
		t.Fatal(err)
	}
	var cp log.Checkpoint
	if _, err := cp.Unmarshal([]byte(text)); err != nil {
		t.Fatal(err)
	}
	ts := binary.BigEndian.Uint64(sig[4:12])
	if err := mldsa.Verify(pub, specMessage(name, ts, cp.Origin, cp.Size, cp.Hash), sig[12:], nil); err != nil {
		t.Fatalf("ML-DSA-44 over the specification's cosigned_message: %v", err)
	}
	return ts
}

// signatures returns a note's text and its signature lines, unverified.
func signatures(t *testing.T, msg string) (string, []note.Signature) {
	t.Helper()
	_, err := note.Open([]byte(msg), note.VerifierList())
	var u *note.UnverifiedNoteError
	if !errors.As(err, &u) {
		t.Fatalf("parsing the note: %v", err)
	}
	return u.Note.Text, u.Note.UnverifiedSigs
}

// TestTorchwoodVector: the ML-DSA-44 signature torchwood made (an
// implementation other than the formats package) verifies as a
// cosignature/v1 line of its key, and over the specification's message.
func TestTorchwoodVector(t *testing.T) {
	v := vectors(t, "torchwood-mldsa.txtar")
	vkey := strings.TrimSuffix(v["mldsa.vkey"], "\n")
	w, err := cosignature.NewWitnessVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	if w.Name() != "example.com/mldsa-log" || w.KeyHash() != 0xb5df45c5 {
		t.Errorf("verifier %s+%08x; want example.com/mldsa-log+b5df45c5", w.Name(), w.KeyHash())
	}
	text, sigs := signatures(t, v["checkpoint"])
	if ts := checkSpec(t, vkey, text, sigs[0]); ts != 0 {
		t.Errorf("timestamp %d; torchwood's log signs with 0", ts)
	}
	lines := v["checkpoint"][len(text)+1:]
	got, err := cosignature.Verify([]byte(text+"\n"), []byte(lines), w)
	if err != nil || string(got) != lines {
		t.Fatalf("Verify = %q, %v; want the line", got, err)
	}
	if ts, err := cosignature.Timestamp(sigs[0]); err != nil || ts.Unix() != 0 {
		t.Errorf("Timestamp = %v, %v; want the epoch (0: no claim of time)", ts, err)
	}
}

// mixed is the omniwitness vector: a checkpoint cosigned by an Ed25519 and
// an ML-DSA-44 omniwitness.
type mixed struct {
	logKey, ed, pq, checkpoint string
}

func mixedVector(t *testing.T) mixed {
	v := vectors(t, "omniwitness-mixed.txtar")
	trim := func(s string) string { return strings.TrimSuffix(s, "\n") }
	return mixed{trim(v["log.vkey"]), trim(v["witness-ed25519.vkey"]), trim(v["witness-mldsa.vkey"]), v["checkpoint"]}
}

func (m mixed) policy(t *testing.T, quorum int, witnesses ...string) *cosignature.Policy {
	t.Helper()
	p, err := cosignature.NewPolicy(m.logKey, witnesses, quorum)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// without returns the checkpoint without the line by name.
func (m mixed) without(name string) string {
	var b strings.Builder
	for line := range strings.Lines(m.checkpoint) {
		if !strings.HasPrefix(line, "— "+name+" ") {
			b.WriteString(line)
		}
	}
	return b.String()
}

// TestOmniwitnessVector: the real omniwitness's ML-DSA-44 cosignature
// verifies over the specification's message; with one Ed25519 and one
// ML-DSA-44 witness trusted, quorum 2 passes, and either cosignature
// alone fails it.
func TestOmniwitnessVector(t *testing.T) {
	m := mixedVector(t)
	text, sigs := signatures(t, m.checkpoint)
	for _, s := range sigs {
		if s.Name == "witness.example/mldsa" {
			if ts := checkSpec(t, m.pq, text, s); ts == 0 {
				t.Error("the omniwitness's ML-DSA-44 cosignature has timestamp 0; want the time it cosigned")
			}
		}
	}
	p := m.policy(t, 2, m.ed, m.pq)
	v, err := p.Verify([]byte(m.checkpoint))
	if err != nil || len(v.Cosigners) != 2 || v.Size != 7 {
		t.Fatalf("quorum 2 of Ed25519 + ML-DSA-44: %+v, %v", v, err)
	}
	for _, name := range []string{"witness.example/ed25519", "witness.example/mldsa"} {
		_, err := p.Verify([]byte(m.without(name)))
		if !errors.Is(err, cosignature.ErrQuorum) || !strings.Contains(err.Error(), "1 of the 2 trusted witnesses") {
			t.Errorf("quorum 2 without %s's line: %v; want ErrQuorum, 1 of 2", name, err)
		}
	}
	if _, err := m.policy(t, 1, m.pq).Verify([]byte(m.without("witness.example/ed25519"))); err != nil {
		t.Errorf("quorum 1 of the ML-DSA-44 witness alone: %v", err)
	}
}

// mldsaLine returns the ML-DSA-44 witness's line of the vector with its
// decoded signature changed by edit.
func (m mixed) mldsaLine(t *testing.T, edit func(sig []byte) []byte) string {
	t.Helper()
	_, sigs := signatures(t, m.checkpoint)
	for _, s := range sigs {
		if s.Name == "witness.example/mldsa" {
			sig, err := base64.StdEncoding.DecodeString(s.Base64)
			if err != nil {
				t.Fatal(err)
			}
			return fmt.Sprintf("— %s %s\n", s.Name, base64.StdEncoding.EncodeToString(edit(sig)))
		}
	}
	t.Fatal("no ML-DSA-44 line in the vector")
	return ""
}

// TestMLDSATampered: each change to the ML-DSA-44 cosignature is refused
// with an error that says what is wrong.
func TestMLDSATampered(t *testing.T) {
	m := mixedVector(t)
	logSigned := m.without("witness.example/ed25519")
	logSigned = logSigned[:strings.Index(logSigned, "— witness.example/mldsa ")]
	big := make([]byte, 8)
	binary.BigEndian.PutUint64(big, math.MaxInt64+1)
	for _, c := range []struct {
		name     string
		edit     func(sig []byte) []byte
		want     error
		mentions string
	}{
		{"flipped bit in the signature", func(s []byte) []byte { s[100] ^= 1; return s }, cosignature.ErrBadCosignature, "does not verify over this checkpoint"},
		{"flipped bit in the timestamp", func(s []byte) []byte { s[11] ^= 1; return s }, cosignature.ErrBadCosignature, "does not verify over this checkpoint"},
		{"truncated signature", func(s []byte) []byte { return s[:len(s)-1] }, cosignature.ErrBadCosignature, "does not verify over this checkpoint"},
		{"signature only (no key ID, no timestamp)", func(s []byte) []byte { return s[12:] }, cosignature.ErrQuorum, "carries key ID"},
		{"wrong key ID", func(s []byte) []byte { s[0] ^= 0x80; return s }, cosignature.ErrQuorum, "carries key ID"},
		{"an Ed25519-sized signature", func(s []byte) []byte { return s[:4+8+64] }, cosignature.ErrBadCosignature, "does not verify over this checkpoint"},
	} {
		msg := logSigned + m.mldsaLine(t, c.edit)
		_, err := m.policy(t, 1, m.pq).Verify([]byte(msg))
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.mentions) {
			t.Errorf("%s: err = %v; want %v mentioning %q", c.name, err, c.want, c.mentions)
		}
	}
	// A line for the same tree under a checkpoint with an extension line:
	// the ML-DSA-44 signature would still verify (it covers no extension),
	// so such checkpoints are refused.
	text, rest, _ := strings.Cut(m.checkpoint, "\n\n")
	_, err := m.policy(t, 1, m.pq).Verify([]byte(text + "\nextension\n\n" + rest))
	if !errors.Is(err, cosignature.ErrMalformed) && !errors.Is(err, cosignature.ErrLogSignature) {
		t.Errorf("checkpoint with an extension line: %v; want it refused", err)
	}
}

// TestMLDSATimestampAbove2To63: a valid ML-DSA-44 signature whose
// timestamp is above 2^63-1 (made with the formats package's signer, which
// does not stop it) is refused, as tlog-cosignature forbids it.
func TestMLDSATimestampAbove2To63(t *testing.T) {
	f := newFixture(t)
	skey, vkey, err := fnote.GenerateMLDSAKey("witness-pq.test")
	if err != nil {
		t.Fatal(err)
	}
	s, err := fnote.NewMLDSASigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	cp := f.log.Checkpoint()
	c, _, err := cosignature.Open(cp, f.logKey(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, ts := range []uint64{math.MaxInt64, math.MaxInt64 + 1} {
		sig, err := s.SignSubtree(ts, c.Origin, 0, c.Size, c.Hash)
		if err != nil {
			t.Fatal(err)
		}
		line := fmt.Sprintf("— %s %s\n", s.Name(), base64.StdEncoding.EncodeToString(append(binary.BigEndian.AppendUint32(nil, s.KeyHash()), sig...)))
		p, err := cosignature.NewPolicy(f.logVKey, []string{vkey}, 1)
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Verify(append(cp, line...))
		if ts <= math.MaxInt64 && err != nil {
			t.Errorf("timestamp 2^63-1: %v; want accepted", err)
		}
		if ts > math.MaxInt64 && (!errors.Is(err, cosignature.ErrBadCosignature) || !strings.Contains(err.Error(), "above the 2^63-1")) {
			t.Errorf("timestamp 2^63: %v; want ErrBadCosignature naming 2^63-1", err)
		}
	}
}

// TestNewWitnessVerifierRejects: vkeys with the wrong type byte, key ID or
// key length are refused, naming what is wrong.
func TestNewWitnessVerifierRejects(t *testing.T) {
	m := mixedVector(t)
	name, rest, _ := strings.Cut(m.pq, "+")
	hash, key64, _ := strings.Cut(rest, "+")
	key, _ := base64.StdEncoding.DecodeString(key64)
	vkey := func(hash string, key []byte) string {
		return name + "+" + hash + "+" + base64.StdEncoding.EncodeToString(key)
	}
	with := func(typ byte, key []byte) []byte { return append([]byte{typ}, key[1:]...) }
	for _, c := range []struct {
		name, vkey, mentions string
	}{
		{"type 0x04 with an ML-DSA-44 key", vkey(hash, with(0x04, key)), "an Ed25519 key: malformed verifier id"},
		{"type 0x01 with an ML-DSA-44 key", vkey(hash, with(0x01, key)), "an Ed25519 note key (type 0x01)"},
		{"unknown type 0x07", vkey(hash, with(0x07, key)), "unknown key type 0x07"},
		{"wrong key ID", vkey("00000000", key), "the key ID is 00000000, but the name and ML-DSA-44 key give 89b47603"},
		{"truncated key", vkey(hash, key[:len(key)-1]), "an ML-DSA-44 key: malformed verifier id"},
		{"key ID not hex", vkey("89b4760g", key), "is not 8 hex digits"},
		{"the name alone", name, "not three fields"},
	} {
		_, err := cosignature.NewWitnessVerifier(c.vkey)
		if err == nil || !strings.Contains(err.Error(), c.mentions) {
			t.Errorf("%s: err = %v; want it to mention %q", c.name, err, c.mentions)
		} else if len(err.Error()) > 400 {
			t.Errorf("%s: the error is %d bytes long; want the key shortened", c.name, len(err.Error()))
		}
	}
}
