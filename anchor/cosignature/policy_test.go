package cosignature_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"

	"github.com/bankdoor/bankdoor/anchor/cosignature"
	"github.com/bankdoor/bankdoor/anchor/internal/testlog"
	"github.com/bankdoor/bankdoor/internal/weakkey"
)

// withLines returns checkpoint followed by the cosignature lines.
func withLines(cp []byte, lines ...[]byte) []byte {
	return slices.Concat(append([][]byte{cp}, lines...)...)
}

func TestPolicyAccepts(t *testing.T) {
	f := newFixture(t)
	cp := f.log.Checkpoint()
	p, err := cosignature.NewPolicy(f.logVKey, f.wVKeys[:2], 2) // witness 2 is not trusted
	if err != nil {
		t.Fatal(err)
	}
	msg := withLines(cp, f.cosign(t, cp, 0), f.cosign(t, cp, 1), f.cosign(t, cp, 2))
	v, err := p.Verify(msg)
	if err != nil {
		t.Fatal(err)
	}
	if v.Size != 5 || v.Origin != origin || len(v.Hash) != 32 {
		t.Errorf("checkpoint = %+v; want %s size 5", v.Checkpoint, origin)
	}
	if len(v.Cosigners) != 2 || !strings.HasPrefix(v.Cosigners[0].Key, "witness0.test+") || !strings.HasPrefix(v.Cosigners[1].Key, "witness1.test+") {
		t.Errorf("cosigners = %q; want witness0.test and witness1.test", v.Cosigners)
	}
	for _, c := range v.Cosigners {
		if time.Since(c.Time) > time.Minute || time.Until(c.Time) > time.Minute {
			t.Errorf("cosigner %v: the timestamp is not the time of signing (now)", c)
		}
	}
	if len(v.Ignored) != 1 || v.Ignored[0].Name != "witness2.test" {
		t.Errorf("ignored = %+v; want the untrusted witness2.test line reported", v.Ignored)
	}
}

func TestPolicyRejects(t *testing.T) {
	f := newFixture(t)
	cp := f.log.Checkpoint()
	c0, c1, c2 := f.cosign(t, cp, 0), f.cosign(t, cp, 1), f.cosign(t, cp, 2)
	f.log.Append("receipt", 1)
	next := f.log.Checkpoint()
	otherSkey, otherVKey := testlog.NewKey(t, origin)
	impostor := testlog.New(t, otherSkey)
	impostor.Append("receipt", 5)
	trust2 := f.wVKeys[:2]
	for _, c := range []struct {
		name     string
		msg      []byte
		logVKey  string
		quorum   int
		want     error
		mentions string
	}{
		{"forged cosignature", withLines(cp, c0, flipSignatureBit(t, c1)), f.logVKey, 1, cosignature.ErrBadCosignature, "witness1.test"},
		{"cosignature of another checkpoint", withLines(cp, c0, f.cosign(t, next, 1)), f.logVKey, 1, cosignature.ErrBadCosignature, "different checkpoint"},
		{"unknown witness counts for nothing", withLines(cp, c0, c2), f.logVKey, 2, cosignature.ErrQuorum, "witness2.test"},
		{"quorum not met", withLines(cp, c1), f.logVKey, 2, cosignature.ErrQuorum, "1 of the 2 trusted witnesses"},
		{"no cosignature", cp, f.logVKey, 1, cosignature.ErrQuorum, "none"},
		{"altered size", bytes.Replace(withLines(cp, c0, c1), []byte("\n5\n"), []byte("\n4\n"), 1), f.logVKey, 0, cosignature.ErrLogSignature, "altered"},
		{"signed by another log key", withLines(impostor.Checkpoint(), c0, c1), f.logVKey, 0, cosignature.ErrLogSignature, "no signature line by"},
		{"wrong --log-key", withLines(cp, c0, c1), otherVKey, 0, cosignature.ErrLogSignature, "no signature line by"},
		{"not a note", []byte("hello\n"), f.logVKey, 0, cosignature.ErrMalformed, "signed note"},
	} {
		p, err := cosignature.NewPolicy(c.logVKey, trust2, c.quorum)
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Verify(c.msg)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.mentions) {
			t.Errorf("%s: err = %v; want %v mentioning %q", c.name, err, c.want, c.mentions)
		}
	}
}

func TestNewPolicyRejects(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct {
		name     string
		logVKey  string
		wVKeys   []string
		quorum   int
		mentions string
	}{
		{"quorum above the keys", f.logVKey, f.wVKeys[:1], 2, "impossible"},
		{"negative quorum", f.logVKey, f.wVKeys[:1], -1, "impossible"},
		{"a key twice", f.logVKey, []string{f.wVKeys[0], f.wVKeys[0]}, 1, ": the key wraps the same public key as witness key witness0.test+"},
		{"bad witness key", f.logVKey, []string{"witness+00000000+AAAA"}, 0, "witness key"},
		{"bad log key", "nonsense", nil, 0, "log key"},
	} {
		if _, err := cosignature.NewPolicy(c.logVKey, c.wVKeys, c.quorum); err == nil || !strings.Contains(err.Error(), c.mentions) {
			t.Errorf("%s: err = %v; want an error mentioning %q", c.name, err, c.mentions)
		}
	}
}

// sameKey returns skey's private key under another name: its signer key
// and its verifier keys as a note Ed25519 key and as a cosignature/v1 key.
func sameKey(t *testing.T, skey, name string) (skey2, noteVKey, cosigVKey string) {
	t.Helper()
	f := strings.SplitN(skey, "+", 5) // PRIVATE+KEY+name+hash+key
	raw, err := base64.StdEncoding.DecodeString(f[len(f)-1])
	if len(f) != 5 || err != nil || len(raw) != 1+ed25519.SeedSize {
		t.Fatalf("signer key %q: %v", skey, err)
	}
	// note.GenerateKey takes the seed from the reader.
	skey2, noteVKey, err = note.GenerateKey(bytes.NewReader(raw[1:]), name)
	if err != nil {
		t.Fatal(err)
	}
	if cosigVKey, err = fnote.VKeyToCosignatureV1(noteVKey); err != nil {
		t.Fatal(err)
	}
	return skey2, noteVKey, cosigVKey
}

// cosignWith returns the cosignature/v1 line the signer key skey makes
// on checkpoint.
func cosignWith(t *testing.T, checkpoint []byte, skey string) []byte {
	t.Helper()
	s, err := fnote.NewSignerForCosignatureV1(skey)
	if err != nil {
		t.Fatal(err)
	}
	text, _, _ := bytes.Cut(checkpoint, []byte("\n\n"))
	signed, err := note.Sign(&note.Note{Text: string(text) + "\n"}, s)
	if err != nil {
		t.Fatal(err)
	}
	return signed[len(text)+2:]
}

// TestNewPolicyRefusesOneKeyTwice: witnesses are distinct public keys,
// and the log's key is never a witness's, whatever the names, key IDs
// and key types. Each policy, were it accepted, would take a checkpoint
// that fewer keys cosigned than its quorum counts: the test says so.
func TestNewPolicyRefusesOneKeyTwice(t *testing.T) {
	f := newFixture(t)
	cp := f.log.Checkpoint()
	aliasSkey, aliasNote, aliasCosig := sameKey(t, f.wSkeys[0], "alias.test")
	_, w0Note, _ := sameKey(t, f.wSkeys[0], "witness0.test")
	logSkey, _, logCosig := sameKey(t, f.logSkey, origin)
	logAliasSkey, _, logAliasCosig := sameKey(t, f.logSkey, "independent.test")
	for _, c := range []struct {
		name      string
		witnesses []string
		lines     [][]byte // the cosignatures that would meet the quorum
		cosigners string   // who made them
		later     string   // the entry refused
		earlier   string   // the entry it repeats
	}{
		{"one witness under two names", []string{f.wVKeys[0], aliasCosig},
			[][]byte{f.cosign(t, cp, 0), cosignWith(t, cp, aliasSkey)}, "witness0.test alone",
			"witness key alias.test+", "as witness key witness0.test+"},
		{"one witness under two names, one a note key", []string{f.wVKeys[0], aliasNote},
			[][]byte{f.cosign(t, cp, 0), cosignWith(t, cp, aliasSkey)}, "witness0.test alone",
			"witness key alias.test+", "as witness key witness0.test+"},
		{"one witness as its note key and its cosignature/v1 key", []string{w0Note, f.wVKeys[0]},
			[][]byte{f.cosign(t, cp, 0), f.cosign(t, cp, 0)}, "witness0.test alone, with one line,",
			"witness key witness0.test+", "as witness key witness0.test+"},
		{"the log key as a witness key", []string{f.logVKey},
			[][]byte{cosignWith(t, cp, logSkey)}, "the log alone",
			"witness key " + origin + "+", "as the log key " + origin + "+"},
		{"the log key in cosignature/v1 form", []string{f.wVKeys[0], logCosig},
			[][]byte{f.cosign(t, cp, 0), cosignWith(t, cp, logSkey)}, "witness0.test and the log",
			"witness key " + origin + "+", "as the log key " + origin + "+"},
		{"the log key under a witness's name", []string{logAliasCosig},
			[][]byte{cosignWith(t, cp, logAliasSkey)}, "the log alone",
			"witness key independent.test+", "as the log key " + origin + "+"},
	} {
		p, err := cosignature.NewPolicy(f.logVKey, c.witnesses, len(c.lines))
		if err == nil {
			_, verr := p.Verify(withLines(cp, c.lines...))
			t.Errorf("%s: NewPolicy accepted the keys; a checkpoint that %s cosigned then meets its quorum of %d (Verify: %v)", c.name, c.cosigners, len(c.lines), verr)
			continue
		}
		if !strings.HasPrefix(err.Error(), c.later) || !strings.Contains(err.Error(), "wraps the same public key "+c.earlier) {
			t.Errorf("%s: err = %v; want it to name %q and %q", c.name, err, c.later, c.earlier)
		}
		t.Logf("%s: %v", c.name, err)
	}
}

// TestPolicyCountsALineOnce: a cosignature line given twice is one
// cosignature.
func TestPolicyCountsALineOnce(t *testing.T) {
	f := newFixture(t)
	cp := f.log.Checkpoint()
	p, err := cosignature.NewPolicy(f.logVKey, f.wVKeys[:2], 2)
	if err != nil {
		t.Fatal(err)
	}
	c0 := f.cosign(t, cp, 0)
	if _, err := p.Verify(withLines(cp, c0, c0)); !errors.Is(err, cosignature.ErrQuorum) || !strings.Contains(err.Error(), "1 of the 2 trusted witnesses") {
		t.Errorf("witness0's line twice, quorum 2: err = %v; want ErrQuorum, 1 of the 2", err)
	}
	if _, err := p.Verify(withLines(cp, c0, f.cosign(t, cp, 1))); err != nil {
		t.Errorf("the control, both witnesses: %v", err)
	}
}

// TestNewPolicyRefusesSmallOrderKeys: a log or witness key of small order
// (here the identity point) is one under which anyone signs anything
// (package weakkey), so it is refused when read, in note and cosignature/v1
// form.
func TestNewPolicyRefusesSmallOrderKeys(t *testing.T) {
	f := newFixture(t)
	identity := append([]byte{1}, make([]byte, 31)...)
	weakNote, err := note.NewEd25519VerifierKey("weak.test", identity)
	if err != nil {
		t.Fatal(err)
	}
	weakCosig, err := fnote.VKeyToCosignatureV1(weakNote)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		log       string
		witnesses []string
	}{
		{"log key", weakNote, nil},
		{"witness note key", f.logVKey, []string{weakNote}},
		{"witness cosignature/v1 key", f.logVKey, []string{f.wVKeys[0], weakCosig}},
	} {
		if _, err := cosignature.NewPolicy(c.log, c.witnesses, 0); !errors.Is(err, weakkey.ErrSmallOrder) {
			t.Errorf("%s: NewPolicy = %v, want weakkey.ErrSmallOrder", c.name, err)
		}
	}
}
