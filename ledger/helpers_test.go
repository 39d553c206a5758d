package ledger

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/bankdoor/bankdoor/internal/agentchain/chaintest"
	"github.com/bankdoor/bankdoor/internal/pgtest"
)

const testOrigin = "ledger.example/test"

// agent signs a chain of real receipts (package agentchain) with a
// deterministic key, stamped from a fixed time; shifting Start makes a
// restarted chain differ in bytes.
type agent = chaintest.Agent

func newAgent(n int) *agent {
	seed := make([]byte, ed25519.SeedSize)
	binary.BigEndian.PutUint64(seed, uint64(n)+1)
	return chaintest.New(ed25519.NewKeyFromSeed(seed), time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC))
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
	agents   *AgentKeys
	verifier note.Verifier
	opts     Options
	indexLag int // the leaf index's lag (see leafIndexer); 0 means Open's
}

func openTestLog(t testing.TB, maxBatch int, agents ...*agent) *testLog {
	t.Helper()
	return openTestLogOn(t, onBolt, maxBatch, agents...)
}

// A backend is a kind of store a test log can be in.
type backend string

const (
	onBolt     backend = "bolt"     // a bbolt file in t.TempDir()
	onPostgres backend = "postgres" // a new database of the test binary's PostgreSQL (pg)
)

// backends are the stores the tests of the Merkle tree and its proofs
// run on.
var backends = []backend{onBolt, onPostgres}

// pg is the test binary's PostgreSQL, started by the first test that
// needs it and stopped by TestMain.
var pg pgtest.Shared

// onBackends runs fn on each backend, in parallel subtests.
func onBackends(t *testing.T, fn func(*testing.T, backend)) {
	t.Parallel()
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			fn(t, b)
		})
	}
}

// openTestLogOn is openTestLog in a store of backend b.
func openTestLogOn(t testing.TB, b backend, maxBatch int, agents ...*agent) *testLog {
	t.Helper()
	s, v := testKeys(t)
	set := &AgentKeys{}
	for _, a := range agents {
		set.Enroll(a.Public())
	}
	tl := &testLog{path: filepath.Join(t.TempDir(), "ledger.db"), agents: set, verifier: v,
		opts: Options{Origin: testOrigin, Signer: s, Agents: set, MaxBatch: maxBatch}}
	if b == onPostgres {
		db := pg.NewDB(t)
		tl.path, tl.opts.DBPassword = db.URL, db.Password
	}
	tl.reopen(t)
	return tl
}

// reopen opens the log's file again (after Close).
func (tl *testLog) reopen(t testing.TB) {
	t.Helper()
	lag := tl.indexLag
	if lag == 0 {
		lag = defaultIndexLag
	}
	l, err := openPath(tl.path, tl.opts, lag)
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

// testVerifier is the verifier of testKeys's log key.
func testVerifier(t testing.TB) note.Verifier {
	t.Helper()
	_, v := testKeys(t)
	return v
}
