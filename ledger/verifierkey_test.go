package ledger

import (
	"strings"
	"testing"
)

// TestVerifierKeyWithPlusInBase64: the base64 of a signer key may hold
// "+", which also separates the key's fields. About half of all keys do.
func TestVerifierKeyWithPlusInBase64(t *testing.T) {
	t.Parallel()
	plus := 0
	for range 64 {
		skey, vkey, err := GenerateKey("example.com/log")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Count(skey, "+") > 4 {
			plus++
		}
		got, err := VerifierKey(skey)
		if err != nil || got != vkey {
			t.Fatalf("VerifierKey(%s) = %q, %v; want %q", skey, got, err, vkey)
		}
	}
	if plus == 0 {
		t.Fatal("no key of 64 had a '+' in its base64")
	}
}
