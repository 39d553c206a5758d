package receipt

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bankdoor/bankdoor/internal/agentkey"
)

// openWith returns a key function for Open that gives pub for any receipt.
func openWith(pub ed25519.PublicKey) func(*Receipt) (ed25519.PublicKey, error) {
	return func(*Receipt) (ed25519.PublicKey, error) { return pub, nil }
}

// slowAccepts is what Open must agree with: Parse, then Verify.
func slowAccepts(b []byte, pub ed25519.PublicKey) error {
	r, err := Parse(b)
	if err != nil {
		return err
	}
	return r.Verify(pub)
}

// TestOpenSignsWhatVerifySigns checks the claim Open rests on: the file
// less its sig member is, byte for byte, the message Verify re-encodes.
func TestOpenSignsWhatVerifySigns(t *testing.T) {
	files := exampleFiles(t)
	for _, b := range files {
		r, sig, err := parse(b)
		if err != nil {
			t.Fatal(err)
		}
		want, err := r.encode(false)
		if err != nil {
			t.Fatal(err)
		}
		if got := signedPart(b, sig); !bytes.Equal(got, want) {
			t.Fatalf("signed part of the file:\n%s\nVerify's message:\n%s", got, want)
		}
		if !bytes.HasPrefix(b[sig[0]:], []byte(`,"sig":"`)) {
			t.Fatalf("sig span starts %q, want the comma before \"sig\"", b[sig[0]:min(sig[1], sig[0]+8)])
		}
		if _, err := Open(b, openWith(testPub())); err != nil {
			t.Fatalf("Open: %v", err)
		}
	}
}

func TestOpenRefusals(t *testing.T) {
	file := exampleFiles(t)[0]
	// The key function's error comes back unchanged, and it sees the receipt.
	refused := errors.New("not enrolled")
	var saw *Receipt
	_, err := Open(file, func(r *Receipt) (ed25519.PublicKey, error) { saw = r; return nil, refused })
	if err != refused {
		t.Fatalf("Open with a refusing key function: err = %v, want it unchanged", err)
	}
	if saw == nil || saw.Seq != 1 || saw.KeyID == "" {
		t.Fatalf("key function saw %+v, want the parsed receipt", saw)
	}
	// A key that is not the one key_id names.
	if _, err := Open(file, openWith(otherPub())); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Fatalf("Open with another key: err = %v, want a key_id mismatch", err)
	}
	if _, err := Open(file, openWith(ed25519.PublicKey("short"))); err == nil {
		t.Fatal("Open with a 5-byte key: accepted")
	}
	// Signed by another key, claiming the real key_id.
	r, err := Parse(file)
	if err != nil {
		t.Fatal(err)
	}
	forged := *r
	b, err := Sign(&forged, otherKey())
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.Replace(b, []byte(forged.KeyID), []byte(r.KeyID), 1)
	if _, err := Open(b, openWith(testPub())); !errors.Is(err, ErrSignature) {
		t.Fatalf("Open of a forged signature: err = %v, want ErrSignature", err)
	}
	if err := slowAccepts(b, testPub()); !errors.Is(err, ErrSignature) {
		t.Fatalf("Verify of a forged signature: err = %v, want ErrSignature", err)
	}
}

// FuzzOpen checks that Open accepts exactly what Parse and Verify accept,
// so that its shortcut (verifying the file's bytes, not a re-encoding)
// lets nothing more through, and that it never panics.
func FuzzOpen(f *testing.F) {
	for _, b := range exampleFiles(f) {
		f.Add(b)
	}
	// The committed corpus of FuzzParse too: valid and broken receipts.
	dir := filepath.Join("testdata", "fuzz", "FuzzParse")
	entries, err := os.ReadDir(dir)
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		f.Add(corpusBytes(f, filepath.Join(dir, e.Name())))
	}
	pub := testPub()
	f.Fuzz(func(t *testing.T, b []byte) {
		_, fast := Open(b, openWith(pub))
		slow := slowAccepts(b, pub)
		if (fast == nil) != (slow == nil) {
			t.Fatalf("Open: %v; Parse and Verify: %v; for %q", fast, slow, b)
		}
	})
}

// TestOpenEd25519 pins what a receipt signature is: whatever
// crypto/ed25519.Verify accepts, the auditors' verifier, on edge cases
// of the public vectors (C2SP CCTV, ed25519-speccheck) made receipts. S
// must be below the group order, so no one without the key turns a
// receipt into a second valid file with another hash; R is compared byte
// for byte, so a non-canonical R fails, as it would not with the
// cofactored (ZIP-215) equation. A small-order public key verifies a
// signature of any receipt: only where keys are enrolled can that be
// refused.
func TestOpenEd25519(t *testing.T) {
	file := exampleFiles(t)[0]
	r, err := Parse(file)
	if err != nil {
		t.Fatal(err)
	}
	idSig := append(identity(), make([]byte, 32)...) // R = identity, S = 0
	// An order-8 point (speccheck case 0's A and R).
	order8, _ := hex.DecodeString("c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa")
	for _, tc := range []struct {
		name string
		pub  ed25519.PublicKey
		sig  []byte
		want bool
	}{
		{"valid", testPub(), r.Sig, true},
		{"non-canonical S (S + l)", testPub(), nonCanonicalS(r.Sig), false},
		{"S with the top bit set", testPub(), withSign(r.Sig), false},
		{"small-order R", testPub(), append(bytes.Clone(order8), r.Sig[32:]...), false},
		{"small-order A, identity R, S = 0", identity(), idSig, true},
		{"non-canonical A (identity, sign bit set)", withSign(identity()), idSig, true},
		{"non-canonical R (identity, sign bit set)", identity(), append(withSign(identity()), make([]byte, 32)...), false},
		{"small-order A, another key's signature", order8, r.Sig, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := *r
			c.KeyID, c.Sig = agentkey.KeyID(tc.pub), tc.sig
			b, err := c.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			msg, err := c.encode(false)
			if err != nil {
				t.Fatal(err)
			}
			if std := ed25519.Verify(tc.pub, msg, tc.sig); std != tc.want {
				t.Fatalf("crypto/ed25519.Verify = %v, the table says %v", std, tc.want)
			}
			_, err = Open(b, openWith(tc.pub))
			if (err == nil) != tc.want || (err != nil && !errors.Is(err, ErrSignature)) {
				t.Errorf("Open: %v, want accepted = %v", err, tc.want)
			}
			if err := slowAccepts(b, tc.pub); (err == nil) != tc.want {
				t.Errorf("Parse and Verify: %v, want accepted = %v", err, tc.want)
			}
		})
	}
}

// identity is the canonical encoding of the neutral element, y = 1.
func identity() []byte { return leInt(big.NewInt(1)) }

// leInt is x as 32 little-endian bytes.
func leInt(x *big.Int) []byte {
	b := x.FillBytes(make([]byte, 32))
	slices.Reverse(b)
	return b
}

// withSign returns b with the top bit of its 32nd byte set: the sign of x
// in a point's encoding, the top bit of S in a signature's.
func withSign(b []byte) []byte {
	b = bytes.Clone(b)
	b[31] |= 0x80
	return b
}

// nonCanonicalS returns sig with S replaced by S + l, which is below 2^253
// and so passes a first check of S's top bits.
func nonCanonicalS(sig []byte) []byte {
	l, _ := new(big.Int).SetString("27742317777372353535851937790883648493", 10)
	l.Add(l, new(big.Int).Lsh(big.NewInt(1), 252))
	be := bytes.Clone(sig[32:])
	slices.Reverse(be)
	s := new(big.Int).SetBytes(be)
	return append(bytes.Clone(sig[:32]), leInt(s.Add(s, l))...)
}
