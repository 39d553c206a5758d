package anchor_test

import (
	"context"
	"testing"

	"github.com/bankdoor/bankdoor/anchor/anchortest"
	"github.com/bankdoor/bankdoor/anchor/internal/testlog"
)

// BenchmarkAnchorLatency measures one new checkpoint to a verified, stored
// cosignature from the real omniwitness on 127.0.0.1 (SQLite storage): parse
// and check the log's signature, fetch the consistency proof, POST
// add-checkpoint, verify the cosignature, Put it.
//
//	go test -run '^$' -bench AnchorLatency -benchtime 200x ./anchor/
func BenchmarkAnchorLatency(b *testing.B) {
	s := newSetup(b)
	l, store := testlog.New(b, s.skey), anchortest.NewMemStore()
	a := s.anchorer(b, l, store)
	ctx := context.Background()
	l.Append("receipt", 1000)
	if err := a.Anchor(ctx, l.Checkpoint()); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		b.StopTimer()
		l.Append("receipt", 10)
		cp := l.Checkpoint()
		b.StartTimer()
		if err := a.Anchor(ctx, cp); err != nil {
			b.Fatal(err)
		}
	}
	if size, _, _ := store.Latest(s.witness.Name); size != l.Size() {
		b.Fatalf("stored size %d; want %d", size, l.Size())
	}
}
