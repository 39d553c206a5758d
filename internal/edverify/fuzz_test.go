package edverify

import (
	"bytes"
	"crypto/ed25519"
	"flag"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var writeCorpus = flag.Bool("write-corpus", false, "write testdata/fuzz/FuzzVerify from seeds()")

// seed is one FuzzVerify input; its name says what it exercises, and
// names starting with "valid" are signatures crypto/ed25519 accepts.
type seed struct {
	name          string
	pub, msg, sig []byte
}

// seeds are the committed corpus of FuzzVerify: valid signatures and
// mutations of them, small-order A and R, non-canonical A and S.
func seeds() []seed {
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))
	pub := key.Public().(ed25519.PublicKey)
	msg := []byte(`{"arg_names":[],"seq":1}`)
	sig := ed25519.Sign(key, msg)
	idSig := append(identity(), make([]byte, 32)...)
	// An order-8 point (speccheck case 0's A and R).
	order8 := []byte{0xc7, 0x17, 0x6a, 0x70, 0x3d, 0x4d, 0xd8, 0x4f, 0xba, 0x3c, 0x0b, 0x76, 0x0d, 0x10, 0x67, 0x0f,
		0x2a, 0x20, 0x53, 0xfa, 0x2c, 0x39, 0xcc, 0xc6, 0x4e, 0xc7, 0xfd, 0x77, 0x92, 0xac, 0x03, 0xfa}
	return []seed{
		{"valid", pub, msg, sig},
		{"valid-empty-message", pub, nil, ed25519.Sign(key, nil)},
		{"mutated-R", pub, msg, flip(sig, 3)},
		{"mutated-S", pub, msg, flip(sig, 40)},
		{"mutated-message", pub, flip(msg, 0), sig},
		{"short-signature", pub, msg, sig[:63]},
		{"non-canonical-S", pub, msg, nonCanonicalS(sig)},
		{"valid-small-order-A-and-R", identity(), msg, idSig},
		{"valid-non-canonical-A", withSign(identity()), msg, idSig},
		{"non-canonical-R", identity(), msg, append(withSign(identity()), make([]byte, 32)...)},
		{"small-order-R", pub, msg, append(bytes.Clone(order8), sig[32:]...)},
		{"small-order-A", order8, msg, sig},
		{"no-point-A", leInt(big.NewInt(2)), msg, sig},
	}
}

// FuzzVerify holds Verify to crypto/ed25519.Verify on arbitrary keys,
// messages and signatures. Its corpus is seeds() (committed under
// testdata/fuzz/FuzzVerify; go test -run TestFuzzCorpus -write-corpus
// rewrites it) and every public vector in testdata.
func FuzzVerify(f *testing.F) {
	for _, v := range append(cctvVectors(f), speccheckVectors(f)...) {
		f.Add(v.pub, v.msg, v.sig)
	}
	f.Fuzz(func(t *testing.T, pub, msg, sig []byte) {
		k, err := NewKey(pub)
		if len(pub) != ed25519.PublicKeySize {
			if err == nil {
				t.Fatalf("NewKey accepts a %d-byte key", len(pub))
			}
			return // crypto/ed25519.Verify panics
		}
		if err != nil {
			t.Fatal(err)
		}
		if got, want := k.Verify(msg, sig), ed25519.Verify(pub, msg, sig); got != want {
			t.Fatalf("Verify = %v, crypto/ed25519.Verify = %v; pub %x msg %x sig %x", got, want, pub, msg, sig)
		}
	})
}

// TestFuzzCorpus checks that the committed corpus is seeds(), and that
// each seed's name is true of it: "valid…" seeds verify with
// crypto/ed25519, the others do not.
func TestFuzzCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzVerify")
	for _, s := range seeds() {
		enc := corpusFile(s)
		path := filepath.Join(dir, s.name)
		if *writeCorpus {
			if err := os.WriteFile(path, enc, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, enc) {
			t.Errorf("%s differs from seeds(); rewrite with -write-corpus", path)
		}
		if ok := ed25519.Verify(s.pub, s.msg, s.sig); ok != strings.HasPrefix(s.name, "valid") {
			t.Errorf("seed %s: crypto/ed25519.Verify = %v", s.name, ok)
		}
	}
}

// corpusFile encodes s as a "go test fuzz v1" file.
func corpusFile(s seed) []byte {
	return fmt.Appendf(nil, "go test fuzz v1\n[]byte(%s)\n[]byte(%s)\n[]byte(%s)\n",
		strconv.Quote(string(s.pub)), strconv.Quote(string(s.msg)), strconv.Quote(string(s.sig)))
}
