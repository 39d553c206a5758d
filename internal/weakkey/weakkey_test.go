package weakkey

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"testing"

	"filippo.io/edwards25519"
)

// identity is the encoding of the identity point, y = 1.
var identity = append([]byte{1}, make([]byte, 31)...)

// TestControlForgery shows what Check stops: under the identity point,
// crypto/ed25519 accepts (R = identity, S = 0) as a signature of anything.
func TestControlForgery(t *testing.T) {
	sig := append(bytes.Clone(identity), make([]byte, 32)...)
	for _, msg := range []string{"", "receipt", "bankdoor approval v1\n{}"} {
		if !ed25519.Verify(identity, []byte(msg), sig) {
			t.Fatalf("the forgery of %q does not verify: the control shows nothing", msg)
		}
	}
}

// TestCheckRefusesEveryTorsionPoint derives the eight points of small order
// with filippo.io/edwards25519 (the arithmetic crypto/ed25519 is built on,
// here only in the test): the multiples of a point of order 8, checked by
// doubling. Each, in either sign and in any encoding crypto/ed25519
// decodes, is refused.
func TestCheckRefusesEveryTorsionPoint(t *testing.T) {
	t8, err := new(edwards25519.Point).SetBytes(smallOrderY[5][:])
	if err != nil {
		t.Fatal(err)
	}
	if o := order(t8); o != 8 {
		t.Fatalf("the point has order %d, want 8", o)
	}
	p := edwards25519.NewIdentityPoint()
	seen := map[[32]byte]bool{}
	for range 8 {
		p.Add(p, t8)
		enc := [32]byte(p.Bytes())
		seen[enc] = true
		for _, sign := range []byte{0, 0x80} {
			k := enc
			k[31] = k[31]&0x7f | sign
			if err := Check(k[:]); !errors.Is(err, ErrSmallOrder) {
				t.Errorf("Check(%x) = %v, want ErrSmallOrder", k, err)
			}
		}
	}
	if len(seen) != 8 {
		t.Fatalf("%d distinct points, want 8", len(seen))
	}
	// Every entry of the list decodes to a point of small order.
	for _, y := range smallOrderY {
		q, err := new(edwards25519.Point).SetBytes(y[:])
		if err != nil {
			t.Errorf("%x: not a point: %v", y, err)
		} else if order(q) > 8 {
			t.Errorf("%x: not of small order", y)
		}
	}
}

// order returns the order of p if it is at most 8, else 9.
func order(p *edwards25519.Point) int {
	q := new(edwards25519.Point).Set(p)
	for n := 1; n <= 8; n++ {
		if q.Equal(edwards25519.NewIdentityPoint()) == 1 {
			return n
		}
		q.Add(q, p)
	}
	return 9
}

func TestCheckAccepts(t *testing.T) {
	pub, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(pub); err != nil {
		t.Errorf("Check(a generated key) = %v", err)
	}
	// A key with a torsion component is still one only its owner signs
	// under (cofactorless verification); crypto/ed25519 accepts it too.
	a, _ := new(edwards25519.Point).SetBytes(pub)
	t8, _ := new(edwards25519.Point).SetBytes(smallOrderY[5][:])
	if err := Check(new(edwards25519.Point).Add(a, t8).Bytes()); err != nil {
		t.Errorf("Check(a key of mixed order) = %v", err)
	}
}

func TestCheckRefusesLength(t *testing.T) {
	for _, pub := range [][]byte{nil, make([]byte, 31), make([]byte, 33)} {
		if err := Check(pub); err == nil {
			t.Errorf("Check(%d bytes) = nil, want an error", len(pub))
		}
	}
}
