// Package testlog is an in-memory Merkle log for the anchor's tests: RFC 6962
// hashing and proofs from github.com/transparency-dev/merkle, C2SP
// tlog-checkpoint notes signed with a real Ed25519 note key. It stands in for
// the ledger, which has the same Checkpoint and ConsistencyProof methods.
package testlog

import (
	"crypto/rand"
	"fmt"
	"sync"
	"testing"

	"github.com/transparency-dev/formats/log"
	fnote "github.com/transparency-dev/formats/note"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/merkle/testonly"
	"golang.org/x/mod/sumdb/note"
)

// Log is an append-only Merkle log that signs a checkpoint of its whole tree.
type Log struct {
	signer note.Signer
	mu     sync.Mutex
	tree   *testonly.Tree
}

// NewKey returns a new Ed25519 note key pair for origin.
func NewKey(tb testing.TB, origin string) (skey, vkey string) {
	tb.Helper()
	skey, vkey, err := note.GenerateKey(rand.Reader, origin)
	if err != nil {
		tb.Fatal(err)
	}
	return skey, vkey
}

// NewWitnessKey returns a new witness key pair: the signer key and its
// cosignature/v1 verifier key, as omniwitness and the tlog-cosignature spec use.
func NewWitnessKey(tb testing.TB, name string) (skey, vkey string) {
	tb.Helper()
	skey, vkey = NewKey(tb, name)
	vkey, err := fnote.VKeyToCosignatureV1(vkey)
	if err != nil {
		tb.Fatal(err)
	}
	return skey, vkey
}

// New returns an empty log that signs with skey; the origin is the key name.
func New(tb testing.TB, skey string) *Log {
	tb.Helper()
	s, err := note.NewSigner(skey)
	if err != nil {
		tb.Fatal(err)
	}
	return &Log{signer: s, tree: testonly.New(rfc6962.DefaultHasher)}
}

// Append adds n entries whose contents start with prefix.
func (l *Log) Append(prefix string, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range n {
		l.tree.AppendData(fmt.Appendf(nil, "%s %d %d", prefix, l.tree.Size(), i))
	}
}

// Size returns the number of entries.
func (l *Log) Size() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.tree.Size()
}

// Checkpoint returns the signed checkpoint of the whole tree.
func (l *Log) Checkpoint() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	cp := log.Checkpoint{Origin: l.signer.Name(), Size: l.tree.Size(), Hash: l.tree.Hash()}
	msg, err := note.Sign(&note.Note{Text: string(cp.Marshal())}, l.signer)
	if err != nil {
		panic(err) // a valid signer and text cannot fail
	}
	return msg
}

// ConsistencyProof proves the tree of size from is a prefix of size to.
func (l *Log) ConsistencyProof(from, to uint64) ([][]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if from > to || to > l.tree.Size() {
		return nil, fmt.Errorf("consistency proof %d -> %d out of range: the log has %d entries", from, to, l.tree.Size())
	}
	return l.tree.ConsistencyProof(from, to)
}
