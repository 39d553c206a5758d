package ledger

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/bankdoor/bankdoor/internal/agentkey"
	"github.com/bankdoor/bankdoor/ledger/receipt"
)

const testOrigin = "ledger.example/test"

// agentSet is an Agents backed by a map.
type agentSet struct {
	mu   sync.Mutex
	keys map[string]ed25519.PublicKey
}

func (a *agentSet) Lookup(keyID string) (ed25519.PublicKey, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	k, ok := a.keys[keyID]
	return k, ok
}

func (a *agentSet) enroll(pub ed25519.PublicKey) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.keys == nil {
		a.keys = map[string]ed25519.PublicKey{}
	}
	a.keys[agentkey.KeyID(pub)] = pub
}

// agent signs a chain of real receipts with a deterministic key.
type agent struct {
	priv  ed25519.PrivateKey
	keyID string
	seq   uint64
	prev  string
	epoch time.Duration // shifts receipt times, so a restarted chain differs in bytes
}

func newAgent(n int) *agent {
	seed := make([]byte, ed25519.SeedSize)
	binary.BigEndian.PutUint64(seed, uint64(n)+1)
	priv := ed25519.NewKeyFromSeed(seed)
	return &agent{priv: priv, keyID: agentkey.KeyID(priv.Public().(ed25519.PublicKey)), prev: receipt.FirstPrev}
}

func (a *agent) pub() ed25519.PublicKey { return a.priv.Public().(ed25519.PublicKey) }

// sign returns the receipt with the given seq and prev, without moving
// the agent's chain.
func (a *agent) sign(t testing.TB, seq uint64, prev string) []byte {
	t.Helper()
	r := &receipt.Receipt{
		Seq:          seq,
		Time:         time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC).Add(a.epoch + time.Duration(seq)*time.Millisecond),
		Decision:     receipt.Deny,
		Server:       "bank",
		Tool:         "transfer",
		Rule:         "name.write_word",
		Reason:       `tool name token "transfer" is a payment/write word`,
		ArgNames:     []string{"amount_cents", "to_account"},
		ArgsSHA256:   hex.EncodeToString(make([]byte, 32)),
		PolicyID:     "bankdoor-fixture-readonly",
		PolicySHA256: hex.EncodeToString(make([]byte, 32)),
		Prev:         prev,
	}
	b, err := receipt.Sign(r, a.priv)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// next returns the agent's next receipt and moves its chain on.
func (a *agent) next(t testing.TB) []byte {
	t.Helper()
	b := a.sign(t, a.seq+1, a.prev)
	a.seq++
	h := receipt.Hash(b)
	a.prev = hex.EncodeToString(h[:])
	return b
}

// chain returns the agent's next n receipts.
func (a *agent) chain(t testing.TB, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = a.next(t)
	}
	return out
}

// testKeys returns a fixed log signer and its verifier.
func testKeys(t testing.TB) (note.Signer, note.Verifier) {
	t.Helper()
	seed := make([]byte, ed25519.SeedSize)
	seed[0] = 0x42
	vkey, err := note.NewEd25519VerifierKey(testOrigin, ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	skey := signerKey(t, testOrigin, seed)
	s, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return s, v
}

// signerKey builds a note signer key from a seed, the encoding
// note.GenerateKey uses.
func signerKey(t testing.TB, name string, seed []byte) string {
	t.Helper()
	pub := ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
	vkey, err := note.NewEd25519VerifierKey(name, pub)
	if err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return skeyString(name, v.KeyHash(), seed)
}

// testLog is a Log in a temporary directory with its agents.
type testLog struct {
	*Log
	path     string
	agents   *agentSet
	verifier note.Verifier
	opts     Options
}

func openTestLog(t testing.TB, maxBatch int, agents ...*agent) *testLog {
	t.Helper()
	s, v := testKeys(t)
	set := &agentSet{}
	for _, a := range agents {
		set.enroll(a.pub())
	}
	tl := &testLog{path: filepath.Join(t.TempDir(), "ledger.db"), agents: set, verifier: v,
		opts: Options{Origin: testOrigin, Signer: s, Agents: set, MaxBatch: maxBatch}}
	tl.reopen(t)
	return tl
}

// reopen opens the log's file again (after Close).
func (tl *testLog) reopen(t testing.TB) {
	t.Helper()
	l, err := Open(tl.path, tl.opts)
	if err != nil {
		t.Fatal(err)
	}
	tl.Log = l
	t.Cleanup(func() { l.Close() })
}

func (tl *testLog) mustAppend(t testing.TB, receipts ...[]byte) []uint64 {
	t.Helper()
	idx, err := tl.Append(context.Background(), receipts)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	return idx
}

// skeyString formats a note signer key: PRIVATE+KEY+name+hash+base64(1 || seed).
func skeyString(name string, hash uint32, seed []byte) string {
	return fmt.Sprintf("PRIVATE+KEY+%s+%08x+%s", name, hash, base64.StdEncoding.EncodeToString(append([]byte{1}, seed...)))
}
