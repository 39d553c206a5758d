package agentchain_test

import (
	"bytes"
	"crypto/ed25519"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bankdoor/bankdoor/internal/agentchain"
	"github.com/bankdoor/bankdoor/ledger/receipt"
	"github.com/bankdoor/bankdoor/verifier"
)

// TestChainVerifies: a chain written as a receipts directory passes the
// offline verifier with the agent's key, and fails with another key.
func TestChainVerifies(t *testing.T) {
	a, err := agentchain.Generate()
	if err != nil {
		t.Fatal(err)
	}
	rs, err := a.Chain(5)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for i, b := range rs {
		if err := os.WriteFile(filepath.Join(dir, receipt.FileName(uint64(i)+1)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := verifier.VerifyDir(dir, a.Public(), verifier.Options{})
	if err != nil {
		t.Fatalf("VerifyDir of the chain: %v", err)
	}
	if len(rep.Receipts) != 5 || rep.LastSeq != 5 {
		t.Errorf("verified %d receipts to seq %d, want 5", len(rep.Receipts), rep.LastSeq)
	}
	other, err := agentchain.Generate()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := verifier.VerifyDir(dir, other.Public(), verifier.Options{}); err == nil {
		t.Error("the chain verifies with another agent's key")
	}
}

// TestSignLeavesTheChain: Sign makes the receipt asked for without moving
// the chain; Next then makes seq 1 linked to FirstPrev, stamped Start+1ms.
func TestSignLeavesTheChain(t *testing.T) {
	a := agentchain.New(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize)))
	a.Start = time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	if _, err := a.Sign(4, strings.Repeat("ab", 32)); err != nil {
		t.Fatal(err)
	}
	if a.Seq != 0 || a.Prev != receipt.FirstPrev {
		t.Fatalf("after Sign: seq %d prev %q; want the chain untouched", a.Seq, a.Prev)
	}
	b, err := a.Next()
	if err != nil {
		t.Fatal(err)
	}
	r, err := receipt.Open(b, func(*receipt.Receipt) (ed25519.PublicKey, error) { return a.Public(), nil })
	if err != nil {
		t.Fatal(err)
	}
	if r.Seq != 1 || r.Prev != receipt.FirstPrev || !r.Time.Equal(a.Start.Add(time.Millisecond)) {
		t.Errorf("first receipt: seq %d prev %q time %v; want 1, FirstPrev, Start+1ms", r.Seq, r.Prev, r.Time)
	}
}
