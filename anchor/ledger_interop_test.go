package anchor_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/bankdoor/bankdoor/anchor"
	"github.com/bankdoor/bankdoor/anchor/anchortest"
	"github.com/bankdoor/bankdoor/anchor/cosignature"
	"github.com/bankdoor/bankdoor/internal/agentkey"
	"github.com/bankdoor/bankdoor/ledger"
	"github.com/bankdoor/bankdoor/ledger/receipt"
	"golang.org/x/mod/sumdb/note"
)

// oneAgent enrolls a single agent key.
type oneAgent struct{ pub ed25519.PublicKey }

func (a oneAgent) Lookup(keyID string) (ed25519.PublicKey, bool) {
	return a.pub, keyID == agentkey.KeyID(a.pub)
}

// openLedger opens a new ledger file in dir with the log key skey.
func openLedger(t testing.TB, dir, skey string, agent ed25519.PublicKey) *ledger.Log {
	t.Helper()
	signer, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Open(filepath.Join(dir, "ledger.db"), ledger.Options{
		Origin: signer.Name(), Signer: signer, Agents: oneAgent{agent}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// appendReceipts appends the agent's receipts seq first..last, chained.
func appendReceipts(t testing.TB, l *ledger.Log, priv ed25519.PrivateKey, first, last uint64, prev string) string {
	t.Helper()
	var batch [][]byte
	for seq := first; seq <= last; seq++ {
		b, err := receipt.Sign(&receipt.Receipt{
			Seq: seq, Time: time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC).Add(time.Duration(seq) * time.Millisecond),
			Decision: receipt.Deny, Server: "bank", Tool: "transfer", Rule: "name.write_word",
			Reason: "payment word", ArgsSHA256: hex.EncodeToString(make([]byte, 32)),
			PolicyID: "bankdoor-fixture-readonly", PolicySHA256: hex.EncodeToString(make([]byte, 32)), Prev: prev,
		}, priv)
		if err != nil {
			t.Fatal(err)
		}
		h := receipt.Hash(b)
		prev = hex.EncodeToString(h[:])
		batch = append(batch, b)
	}
	if _, err := l.Append(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	return prev
}

// TestOmniwitnessLedger anchors the real ledger (bbolt file) to the real
// omniwitness, then recreates the ledger from scratch with the same key and
// fewer receipts: the witness's refusal is reported as a possible rollback.
func TestOmniwitnessLedger(t *testing.T) {
	s := newSetup(t)
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	l := openLedger(t, t.TempDir(), s.skey, pub)
	store := anchortest.NewMemStore()
	a := s.anchorer(t, l, store)
	ctx := context.Background()
	prev := receipt.FirstPrev
	for _, last := range []uint64{4, 11, 30} {
		prev = appendReceipts(t, l, priv, l.Size()+1, last, prev)
		if err := a.Anchor(ctx, l.Checkpoint()); err != nil {
			t.Fatalf("anchoring the ledger at size %d: %v", l.Size(), err)
		}
		served, err := cosignature.Cosigned(l.Checkpoint(), s.logKey, store.Cosignatures)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := policy(t, s).Verify(served); err != nil {
			t.Fatalf("size %d: served note: %v", l.Size(), err)
		}
	}

	recreated := openLedger(t, t.TempDir(), s.skey, pub)
	appendReceipts(t, recreated, priv, 1, 9, receipt.FirstPrev) // receipts 10..30 are gone
	for name, st := range map[string]anchor.CosignatureStore{"kept store": store, "lost store": anchortest.NewMemStore()} {
		err := s.anchorer(t, recreated, st).Anchor(ctx, recreated.Checkpoint())
		if !errors.Is(err, anchor.ErrPossibleRollback) {
			t.Errorf("%s: anchoring the recreated ledger of size 9: err = %v; want ErrPossibleRollback", name, err)
		}
	}
}

// TestRunWithLedgerWatch runs the anchoring loop as `bankdoor ledger serve`
// will: woken by the ledger's Watch channel, anchoring each new batch.
func TestRunWithLedgerWatch(t *testing.T) {
	s := newSetup(t)
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	l := openLedger(t, t.TempDir(), s.skey, pub)
	store := anchortest.NewMemStore()
	a := s.anchorer(t, l, store)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- a.Run(ctx, l.Watch) }()
	prev := receipt.FirstPrev
	for _, last := range []uint64{3, 20, 21} {
		prev = appendReceipts(t, l, priv, l.Size()+1, last, prev)
		deadline := time.Now().Add(10 * time.Second)
		for size, _, _ := store.Latest(s.witness.Name); size != last; size, _, _ = store.Latest(s.witness.Name) {
			if time.Now().After(deadline) {
				t.Fatalf("the witness's cosignature of size %d was not stored within 10s (latest %d)", last, size)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run returned %v; want context.Canceled", err)
	}
}
