package anchor_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"testing"

	"github.com/bankdoor/bankdoor/ledger/receipt"
)

// BenchmarkAnchorLatencyLedger is BenchmarkAnchorLatency with the real
// ledger: its bbolt file serves the consistency proofs and durably stores
// each cosignature (one fsynced transaction), as in bankdoor ledger
// serve --witness.
//
//	go test -run '^$' -bench AnchorLatencyLedger -benchtime 200x ./anchor/
func BenchmarkAnchorLatencyLedger(b *testing.B) {
	s := newSetup(b)
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	l := openLedger(b, b.TempDir(), s.skey, pub)
	a := s.anchorer(b, l, l.CosignatureStore())
	ctx := context.Background()
	prev := appendReceipts(b, l, priv, 1, 100, receipt.FirstPrev)
	if err := a.Anchor(ctx, l.Checkpoint()); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		b.StopTimer()
		prev = appendReceipts(b, l, priv, l.Size()+1, l.Size()+10, prev)
		cp := l.Checkpoint()
		b.StartTimer()
		if err := a.Anchor(ctx, cp); err != nil {
			b.Fatal(err)
		}
	}
	if size, _, _ := l.CosignatureStore().Latest(s.witness.Name); size != l.Size() {
		b.Fatalf("stored size %d; want %d", size, l.Size())
	}
}
