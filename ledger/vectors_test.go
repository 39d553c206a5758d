package ledger

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/proof"
	"golang.org/x/mod/sumdb/note"
)

var update = flag.Bool("update", false, "rewrite testdata/vectors.json")

// vectors is the layout of testdata/vectors.json: a small log of real
// receipts, its checkpoint at every size, and every inclusion and
// consistency proof, so another implementation (the verifier, a tool in
// another language) can be checked against this one. Hashes and proofs
// are standard base64, as in the checkpoint note.
type vectors struct {
	Comment     string              `json:"comment"`
	Origin      string              `json:"origin"`
	LogVkey     string              `json:"log_vkey"`
	AgentPublic []byte              `json:"agent_public_key"`
	Leaves      []string            `json:"leaves"`      // the receipt files, as text
	Checkpoints []string            `json:"checkpoints"` // index i: the note for size i+1
	Inclusion   []inclusionVector   `json:"inclusion"`
	Consistency []consistencyVector `json:"consistency"`
}

type inclusionVector struct {
	Index uint64   `json:"index"`
	Size  uint64   `json:"size"`
	Proof [][]byte `json:"proof"`
}

type consistencyVector struct {
	From  uint64   `json:"from"`
	To    uint64   `json:"to"`
	Proof [][]byte `json:"proof"`
}

const vectorLeaves = 7

// makeVectors appends vectorLeaves receipts one at a time to a log signed
// with the documentation's example key and records what it serves.
func makeVectors(t *testing.T) vectors {
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = byte(i)
	}
	const origin = "bank.example/ledger"
	skey := signerKey(t, origin, seed)
	s, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	vkey, _ := VerifierKey(skey)
	a := newAgent(1)
	agents := &AgentKeys{}
	agents.Enroll(a.Public())
	l, err := Open(filepath.Join(t.TempDir(), "ledger.db"), Options{Origin: origin, Signer: s, Agents: agents})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	v := vectors{
		Comment: "bankdoor ledger vectors: leaves are receipt files; checkpoints[i] is the signed note at size i+1; " +
			"proofs are RFC 6962 (inclusion: audit path of leaf index in the tree of size; consistency: from size to size)",
		Origin: origin, LogVkey: vkey, AgentPublic: a.Public(),
	}
	for range vectorLeaves {
		r := a.Next(t)
		if _, err := l.Append(context.Background(), [][]byte{r}); err != nil {
			t.Fatal(err)
		}
		v.Leaves = append(v.Leaves, string(r))
		v.Checkpoints = append(v.Checkpoints, string(l.Checkpoint()))
	}
	for size := uint64(1); size <= vectorLeaves; size++ {
		for i := range size {
			p, err := l.InclusionProof(i, size)
			if err != nil {
				t.Fatal(err)
			}
			v.Inclusion = append(v.Inclusion, inclusionVector{i, size, p})
			c, err := l.ConsistencyProof(i+1, size)
			if err != nil {
				t.Fatal(err)
			}
			v.Consistency = append(v.Consistency, consistencyVector{i + 1, size, c})
		}
	}
	return v
}

// TestVectors checks that the log still serves exactly the committed
// vectors (go test -run TestVectors -update rewrites them), and that
// every vector verifies with the log's key and transparency-dev/merkle.
func TestVectors(t *testing.T) {
	t.Parallel()
	got, err := json.MarshalIndent(makeVectors(t), "", "\t")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", "vectors.json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("the log no longer serves %s; if the change is intended, run go test -run TestVectors -update", path)
	}
	var v vectors
	if err := json.Unmarshal(want, &v); err != nil {
		t.Fatal(err)
	}
	verifyVectors(t, v)
}

func verifyVectors(t *testing.T, v vectors) {
	verifier, err := LoadVerifier(v.LogVkey)
	if err != nil {
		t.Fatal(err)
	}
	roots := make([][]byte, len(v.Checkpoints)+1)
	for i, n := range v.Checkpoints {
		cp, _, _, err := log.ParseCheckpoint([]byte(n), v.Origin, verifier)
		if err != nil || cp.Size != uint64(i+1) {
			t.Fatalf("checkpoint %d: %v", i, err)
		}
		roots[i+1] = cp.Hash
	}
	for _, c := range v.Inclusion {
		leaf := hasher.HashLeaf([]byte(v.Leaves[c.Index]))
		if err := proof.VerifyInclusion(hasher, c.Index, c.Size, leaf, c.Proof, roots[c.Size]); err != nil {
			t.Errorf("inclusion vector (%d, %d): %v", c.Index, c.Size, err)
		}
	}
	for _, c := range v.Consistency {
		if err := proof.VerifyConsistency(hasher, c.From, c.To, c.Proof, roots[c.From], roots[c.To]); err != nil {
			t.Errorf("consistency vector (%d, %d): %v", c.From, c.To, err)
		}
	}
}
