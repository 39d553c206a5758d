// Package weakkey refuses Ed25519 public keys that prove nothing.
//
// crypto/ed25519 verifies cofactorless, as RFC 8032 §5.1.7 reads, and
// accepts any point as a public key. Under a key A of small order (one of
// the eight points of the curve's torsion subgroup) [k]A takes at most eight
// values whatever the message, so signatures can be made without a private
// key: under the identity point, (R = identity, S = 0) verifies for every
// message. A receipt, checkpoint or cosignature under such a key is
// evidence of nothing, so every key bankdoor is told to trust is checked
// here first.
//
// The check compares encodings, as libsodium's does: the eight points have
// five y-coordinates (0, 1, -1 and two of order 8), y = 0 and y = 1 also
// have the non-canonical encodings p and p + 1 that crypto/ed25519 decodes,
// and the sign bit of x (bit 255) picks no other y. Keys of mixed order
// (a prime-order point plus a torsion point) are accepted, as only the
// holder of the prime-order part's scalar can sign under them.
package weakkey

import (
	"errors"
	"fmt"
)

// ErrSmallOrder is returned by Check for a key of small order.
var ErrSmallOrder = errors.New("the Ed25519 public key is a point of small order, under which anyone can sign anything")

// smallOrderY are the y-coordinates of the points of small order, as 32
// little-endian bytes with bit 255 clear, canonical and not.
var smallOrderY = [][32]byte{
	{0x00},     // y = 0: the two points of order 4
	{0x01},     // y = 1: the identity
	fill(0xec), // y = p - 1: the point of order 2
	fill(0xed), // y = p, a non-canonical 0
	fill(0xee), // y = p + 1, a non-canonical 1
	{0x26, 0xe8, 0x95, 0x8f, 0xc2, 0xb2, 0x27, 0xb0, 0x45, 0xc3, 0xf4, 0x89, 0xf2, 0xef, 0x98, 0xf0, // order 8
		0xd5, 0xdf, 0xac, 0x05, 0xd3, 0xc6, 0x33, 0x39, 0xb1, 0x38, 0x02, 0x88, 0x6d, 0x53, 0xfc, 0x05},
	{0xc7, 0x17, 0x6a, 0x70, 0x3d, 0x4d, 0xd8, 0x4f, 0xba, 0x3c, 0x0b, 0x76, 0x0d, 0x10, 0x67, 0x0f, // order 8
		0x2a, 0x20, 0x53, 0xfa, 0x2c, 0x39, 0xcc, 0xc6, 0x4e, 0xc7, 0xfd, 0x77, 0x92, 0xac, 0x03, 0x7a},
}

// fill returns first, then 30 bytes 0xff, then 0x7f: p - 1, p and p + 1
// for first 0xec, 0xed and 0xee (p = 2^255 - 19).
func fill(first byte) [32]byte {
	b := [32]byte{first}
	for i := 1; i < 31; i++ {
		b[i] = 0xff
	}
	b[31] = 0x7f
	return b
}

// Check returns an error if pub is not 32 bytes or is an encoding of a
// point of small order.
func Check(pub []byte) error {
	if len(pub) != 32 {
		return fmt.Errorf("the Ed25519 public key is %d bytes, want 32", len(pub))
	}
	y := [32]byte(pub)
	y[31] &= 0x7f
	for _, s := range smallOrderY {
		if y == s {
			return ErrSmallOrder
		}
	}
	return nil
}
