package spool_test

import (
	"context"
	"testing"

	"github.com/bankdoor/bankdoor/ledger/spool"
)

// BenchmarkShip measures shipping a backlog into the real ledger, per
// receipt: one op is one receipt of a backlog of b.N, shipped in default
// batches (64) by one Sync. The receipts are written before the timer
// starts.
func BenchmarkShip(b *testing.B) {
	for _, bc := range []struct {
		name   string
		remote bool
	}{{"embedded", false}, {"remote", true}} {
		b.Run(bc.name, func(b *testing.B) {
			c := newChainTB(b)
			l := newLog(b, c.pub())
			var app spool.Appender = spool.Embedded{Log: l}
			if bc.remote {
				client, url := serve(b, l)
				app = spool.Remote{Client: client, URL: url}
			}
			c.write(b.N)
			s := c.shipper(app, nil)
			b.ResetTimer()
			if err := s.Sync(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if s.Shipped() != uint64(b.N) {
				b.Fatalf("shipped %d of %d", s.Shipped(), b.N)
			}
		})
	}
}

// BenchmarkNotify is what the deny path pays for the spool.
func BenchmarkNotify(b *testing.B) {
	c := newChainTB(b)
	s := c.shipper(newMemLedger(c.pub()), nil)
	for b.Loop() {
		s.Notify()
	}
}
