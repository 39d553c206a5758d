// Package edverify checks Ed25519 signatures against a public key decoded
// once, and accepts exactly the signatures crypto/ed25519.Verify accepts.
//
// # What it accepts
//
// (*Key).Verify(msg, sig) is true exactly when crypto/ed25519.Verify(pub,
// msg, sig) is, for the 32-byte pub the Key was made from. That is the
// cofactorless verification equation of the standard library:
//
//   - sig is 64 bytes, R = sig[:32], S = sig[32:];
//   - S is canonical: as a little-endian integer it is below the group
//     order l (so the top three bits of sig[63] are zero);
//   - A is pub decoded as crypto/ed25519 (filippo.io/edwards25519's
//     Point.SetBytes) decodes it: the sign bit apart, the y coordinate is
//     read as a 255-bit integer and reduced mod p, so non-canonical
//     encodings of A (y ≥ p, or x = 0 with the sign bit set) are accepted
//     as the standard library accepts them; small-order and mixed-order A
//     are accepted; a pub that is no point on the curve makes every
//     signature fail;
//   - k = SHA-512(R ‖ pub ‖ msg) mod l, hashing pub and R as given, not
//     re-encoded;
//   - [S]B − [k]A is computed and its canonical encoding compared with R
//     byte for byte, so a non-canonical encoding of R never verifies and a
//     small-order R verifies only when the equation holds exactly.
//
// No cofactored (batch) equation is used: it accepts signatures the
// standard library rejects (the "low_order_residue" vectors of C2SP CCTV).
//
// # How
//
// The arithmetic is github.com/oasisprotocol/curve25519-voi's ed25519 with
// an expanded public key (−A and its precomputed multiples, made once by
// NewKey) and its VerifyOptionsStdLib preset: small-order A and R allowed,
// non-canonical A allowed, non-canonical R rejected, cofactorless
// equation with a byte comparison of R. It decodes A with the same rule as
// the standard library (field element from the low 255 bits, not reduced
// first; square root; negate by the sign bit) and checks S with the same
// bound. The tests hold Verify to crypto/ed25519.Verify on the C2SP CCTV
// ed25519 vectors and the "Taming the many EdDSAs" speccheck cases
// (testdata), and FuzzVerify compares the two on arbitrary keys, messages
// and signatures.
package edverify

import (
	"crypto/ed25519"
	"fmt"

	voi "github.com/oasisprotocol/curve25519-voi/primitives/ed25519"
)

// Key is an Ed25519 public key decoded once, for checking many signatures.
// It is safe for concurrent use: Verify does not change it.
type Key struct {
	pub  ed25519.PublicKey
	exp  *voi.ExpandedPublicKey // nil: pub is no point; nothing verifies
	opts voi.Options            // voi's VerifyOptionsStdLib: verify as crypto/ed25519 does
}

// NewKey decodes pub, which must be 32 bytes (crypto/ed25519.Verify
// panics on any other length; NewKey returns an error). A 32-byte pub that
// is not the encoding of a curve point gives a Key that verifies nothing,
// as crypto/ed25519.Verify returns false for every signature by it.
func NewKey(pub []byte) (*Key, error) {
	if len(pub) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("ed25519 public key is %d bytes, not %d", len(pub), ed25519.PublicKeySize)
	}
	k := &Key{
		pub: ed25519.PublicKey(append([]byte(nil), pub...)),
		opts: voi.Options{Verify: &voi.VerifyOptions{
			AllowSmallOrderA:   true,
			AllowSmallOrderR:   true,
			AllowNonCanonicalA: true,
			CofactorlessVerify: true, // and so non-canonical R is rejected
		}},
	}
	if exp, err := voi.NewExpandedPublicKey(voi.PublicKey(k.pub)); err == nil {
		k.exp = exp
	}
	return k, nil
}

// Public returns the public key's 32 bytes. The caller must not change
// them.
func (k *Key) Public() ed25519.PublicKey { return k.pub }

// Verify reports whether sig is a valid Ed25519 signature of msg by the
// key: exactly when crypto/ed25519.Verify(k.Public(), msg, sig) is true.
func (k *Key) Verify(msg, sig []byte) bool {
	if k.exp == nil || len(sig) != ed25519.SignatureSize {
		return false
	}
	return voi.VerifyExpandedWithOptions(k.exp, msg, sig, &k.opts)
}
