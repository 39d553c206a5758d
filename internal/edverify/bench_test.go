package edverify

import (
	"bytes"
	"crypto/ed25519"
	"testing"
)

// BenchmarkVerify compares one signature check of a receipt-sized
// message by crypto/ed25519 and by a Key.
func BenchmarkVerify(b *testing.B) {
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))
	pub := key.Public().(ed25519.PublicKey)
	msg := bytes.Repeat([]byte("r"), 450)
	sig := ed25519.Sign(key, msg)
	b.Run("stdlib", func(b *testing.B) {
		for b.Loop() {
			if !ed25519.Verify(pub, msg, sig) {
				b.Fatal("does not verify")
			}
		}
	})
	b.Run("Key", func(b *testing.B) {
		k, err := NewKey(pub)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if !k.Verify(msg, sig) {
				b.Fatal("does not verify")
			}
		}
	})
}

// BenchmarkNewKey measures decoding and expanding a key, the cost a
// cache of Keys saves on each signature.
func BenchmarkNewKey(b *testing.B) {
	pub := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize)).Public().(ed25519.PublicKey)
	for b.Loop() {
		if _, err := NewKey(pub); err != nil {
			b.Fatal(err)
		}
	}
}
