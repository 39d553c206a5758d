package receipt

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/bankdoor/bankdoor/internal/jcs"
)

// testKey is the example key of the package documentation: the Ed25519
// key whose seed is the bytes 0x00, 0x01, ..., 0x1f.
func testKey() ed25519.PrivateKey {
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = byte(i)
	}
	return ed25519.NewKeyFromSeed(seed)
}

func testPub() ed25519.PublicKey { return testKey().Public().(ed25519.PublicKey) }

// otherKey is a second key, for "signed by someone else" tests.
func otherKey() ed25519.PrivateKey {
	seed := make([]byte, ed25519.SeedSize)
	seed[0] = 0xff
	return ed25519.NewKeyFromSeed(seed)
}

func otherPub() ed25519.PublicKey { return otherKey().Public().(ed25519.PublicKey) }

func hexSHA256(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// exampleArgs are the arguments of the denied call in the documentation.
const exampleArgs = `{"to_account":"acc_mallory","amount_cents":100000}`

// examplePolicy stands for the policy file of the documentation's example.
const examplePolicy = "version: 1\nid: bankdoor-fixture-readonly\n"

// exampleReceipts returns the two receipts of the package documentation,
// unsigned, the second without its prev.
func exampleReceipts(t testing.TB) [2]*Receipt {
	args, err := jcs.SHA256([]byte(exampleArgs))
	if err != nil {
		t.Fatal(err)
	}
	base := Receipt{
		Decision:     Deny,
		Server:       "bank",
		ArgsSHA256:   args,
		PolicyID:     "bankdoor-fixture-readonly",
		PolicySHA256: hexSHA256(examplePolicy),
	}
	first, second := base, base
	first.Seq, first.Prev = 1, FirstPrev
	first.Time = time.Date(2026, 12, 2, 18, 42, 45, 123_000_000, time.UTC)
	first.Tool, first.Rule = "transfer", "name.write_word"
	first.Reason = `tool name token "transfer" is a payment/write word`
	first.ArgNames = []string{"to_account", "amount_cents"}
	second.Seq = 2
	second.Time = time.Date(2026, 12, 2, 18, 42, 46, 7_000_000, time.UTC)
	second.Tool, second.Rule = "get_transactions", "args.undeclared"
	second.Reason = `argument "action" is not declared in the policy`
	second.ArgNames = []string{"account_id", "action"}
	second.ArgsSHA256 = hexSHA256(`{"account_id":"acc_checking","action":"transfer"}`)
	return [2]*Receipt{&first, &second}
}

// exampleFiles signs the example receipts and returns their file bytes.
func exampleFiles(t testing.TB) [2][]byte {
	rs := exampleReceipts(t)
	a, err := Sign(rs[0], testKey())
	if err != nil {
		t.Fatal(err)
	}
	h := Hash(a)
	rs[1].Prev = hex.EncodeToString(h[:])
	b, err := Sign(rs[1], testKey())
	if err != nil {
		t.Fatal(err)
	}
	return [2][]byte{a, b}
}
