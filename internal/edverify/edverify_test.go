package edverify

import (
	"bytes"
	"compress/gzip"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	voi "github.com/oasisprotocol/curve25519-voi/primitives/ed25519"
)

// vector is one public Ed25519 verification case.
type vector struct {
	name          string
	pub, msg, sig []byte
}

// cctvVectors reads the C2SP CCTV ed25519 vectors (testdata/README.md).
func cctvVectors(t testing.TB) []vector {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "cctv-ed25519vectors.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var raw []struct {
		Number        int
		Key, Sig, Msg string
	}
	if err := json.NewDecoder(z).Decode(&raw); err != nil {
		t.Fatal(err)
	}
	var vs []vector
	for _, r := range raw {
		vs = append(vs, vector{"cctv-" + strconv.Itoa(r.Number), unhex(t, r.Key), []byte(r.Msg), unhex(t, r.Sig)})
	}
	return vs
}

// speccheckVectors reads the "Taming the many EdDSAs" cases
// (novifinancial/ed25519-speccheck cases.json; testdata/README.md).
func speccheckVectors(t testing.TB) []vector {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "speccheck-cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var raw []struct {
		Message   string `json:"message"`
		PubKey    string `json:"pub_key"`
		Signature string `json:"signature"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	var vs []vector
	for i, r := range raw {
		vs = append(vs, vector{"speccheck-" + strconv.Itoa(i), unhex(t, r.PubKey), unhex(t, r.Message), unhex(t, r.Signature)})
	}
	return vs
}

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestVectors holds Verify to crypto/ed25519.Verify on every public
// vector, and checks that the vectors can tell verifiers apart: some
// verify, some do not, and some would verify with the cofactored (ZIP-215,
// batch) equation, which the standard library rejects.
func TestVectors(t *testing.T) {
	for _, set := range []struct {
		name string
		vs   []vector
	}{{"cctv", cctvVectors(t)}, {"speccheck", speccheckVectors(t)}} {
		t.Run(set.name, func(t *testing.T) {
			var accepted, rejected, cofactoredDiffers int
			for _, v := range set.vs {
				want := ed25519.Verify(v.pub, v.msg, v.sig)
				k, err := NewKey(v.pub)
				if err != nil {
					t.Fatalf("%s: NewKey: %v", v.name, err)
				}
				if got := k.Verify(v.msg, v.sig); got != want {
					t.Errorf("%s: Verify = %v, crypto/ed25519.Verify = %v", v.name, got, want)
				}
				if want {
					accepted++
				} else {
					rejected++
				}
				zip215 := &voi.Options{Verify: voi.VerifyOptionsZIP_215}
				if voi.VerifyWithOptions(voi.PublicKey(v.pub), v.msg, v.sig, zip215) != want {
					cofactoredDiffers++
				}
			}
			t.Logf("%d vectors: %d accepted, %d rejected by crypto/ed25519; the cofactored equation differs on %d",
				len(set.vs), accepted, rejected, cofactoredDiffers)
			if accepted == 0 || rejected == 0 || cofactoredDiffers == 0 {
				t.Errorf("vectors do not tell verifiers apart: %d accepted, %d rejected, cofactored differs on %d",
					accepted, rejected, cofactoredDiffers)
			}
		})
	}
}

// TestKeys holds Keys made from edge-case public keys to the standard
// library: each signature verifies with the Key exactly when
// crypto/ed25519.Verify accepts it, and want records what that is, so the
// table shows it exercises acceptance as well as refusal.
func TestKeys(t *testing.T) {
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))
	msg := []byte("receipt bytes")
	valid := ed25519.Sign(key, msg)
	identitySig := append(identity(), make([]byte, 32)...) // R = identity, S = 0
	for _, tc := range []struct {
		name  string
		pub   []byte
		sig   []byte
		point bool // pub decodes to a curve point
		want  bool // crypto/ed25519.Verify accepts sig
	}{
		{"valid", key.Public().(ed25519.PublicKey), valid, true, true},
		{"valid key, altered signature", key.Public().(ed25519.PublicKey), flip(valid, 5), true, false},
		{"identity A (small order)", identity(), identitySig, true, true},
		{"identity A, sign bit set (non-canonical)", withSign(identity()), identitySig, true, true},
		{"identity A as y = p+1 (non-canonical)", leInt(new(big.Int).Add(fieldP(), big.NewInt(1))), identitySig, true, true},
		{"y = 2: no point", leInt(big.NewInt(2)), identitySig, false, false},
		{"y = p+2: no point", leInt(new(big.Int).Add(fieldP(), big.NewInt(2))), identitySig, false, false},
		{"no point, valid signature of another key", leInt(big.NewInt(2)), valid, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if p := isPoint(tc.pub); p != tc.point {
				t.Fatalf("pub decodes to a point: %v, the table says %v", p, tc.point)
			}
			std := ed25519.Verify(tc.pub, msg, tc.sig)
			if std != tc.want {
				t.Fatalf("crypto/ed25519.Verify = %v, the table says %v", std, tc.want)
			}
			k, err := NewKey(tc.pub)
			if err != nil {
				t.Fatal(err)
			}
			if got := k.Verify(msg, tc.sig); got != std {
				t.Errorf("Verify = %v, crypto/ed25519.Verify = %v", got, std)
			}
			if !bytes.Equal(k.Public(), tc.pub) {
				t.Errorf("Public = %x, want %x", k.Public(), tc.pub)
			}
		})
	}
}

// isPoint reports whether some x makes (x, y) a point of edwards25519,
// -x² + y² = 1 + d·x²·y², for the y of the encoding b (its low 255 bits,
// reduced mod p, as crypto/ed25519 reads it): whether
// (y² - 1) / (d·y² + 1) is a square mod p (Euler's criterion).
func isPoint(b []byte) bool {
	p := fieldP()
	le := bytes.Clone(b)
	le[31] &= 0x7f
	slices.Reverse(le)
	y := new(big.Int).SetBytes(le)
	d := new(big.Int).Mul(big.NewInt(-121665), new(big.Int).ModInverse(big.NewInt(121666), p))
	y2 := new(big.Int).Mul(y, y)
	u := new(big.Int).Sub(y2, big.NewInt(1))
	v := new(big.Int).Add(new(big.Int).Mul(d, y2), big.NewInt(1))
	x2 := u.Mul(u, new(big.Int).ModInverse(v.Mod(v, p), p))
	x2.Mod(x2, p)
	if x2.Sign() == 0 {
		return true
	}
	e := new(big.Int).Rsh(new(big.Int).Sub(p, big.NewInt(1)), 1)
	return new(big.Int).Exp(x2, e, p).Cmp(big.NewInt(1)) == 0
}

// TestNewKeyLength checks that NewKey refuses keys that are not 32 bytes,
// on which crypto/ed25519.Verify panics.
func TestNewKeyLength(t *testing.T) {
	for _, n := range []int{0, 31, 33, 64} {
		if _, err := NewKey(make([]byte, n)); err == nil {
			t.Errorf("NewKey accepts a %d-byte key", n)
		}
	}
}

// TestKeyCopies checks that a Key does not share the caller's bytes.
func TestKeyCopies(t *testing.T) {
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))
	pub := bytes.Clone(key.Public().(ed25519.PublicKey))
	k, err := NewKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	pub[0] ^= 1
	if !k.Verify([]byte("m"), ed25519.Sign(key, []byte("m"))) {
		t.Error("changing the caller's slice changed the Key")
	}
}

// identity is the canonical encoding of the neutral element, y = 1.
func identity() []byte { return leInt(big.NewInt(1)) }

// fieldP is 2^255 - 19.
func fieldP() *big.Int {
	p := new(big.Int).Lsh(big.NewInt(1), 255)
	return p.Sub(p, big.NewInt(19))
}

// groupL is the order of the prime-order subgroup, 2^252 + 27742317777372353535851937790883648493.
func groupL() *big.Int {
	l, _ := new(big.Int).SetString("27742317777372353535851937790883648493", 10)
	return l.Add(l, new(big.Int).Lsh(big.NewInt(1), 252))
}

// leInt is x as 32 little-endian bytes.
func leInt(x *big.Int) []byte {
	b := x.FillBytes(make([]byte, 32))
	slices.Reverse(b)
	return b
}

func withSign(b []byte) []byte {
	b = bytes.Clone(b)
	b[31] |= 0x80
	return b
}

func flip(b []byte, i int) []byte {
	b = bytes.Clone(b)
	b[i] ^= 1
	return b
}

// nonCanonicalS returns sig with S replaced by S + l, which is below 2^253
// and so passes the standard library's first check of S's top bits.
func nonCanonicalS(sig []byte) []byte {
	be := bytes.Clone(sig[32:])
	slices.Reverse(be)
	s := new(big.Int).SetBytes(be)
	return append(bytes.Clone(sig[:32]), leInt(s.Add(s, groupL()))...)
}
