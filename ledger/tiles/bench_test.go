package tiles_test

import (
	"testing"

	"github.com/bankdoor/bankdoor/ledger/tiles"
)

// BenchmarkRead: reading one full tile of each kind from the ledger's
// bbolt file, without HTTP.
func BenchmarkRead(b *testing.B) {
	l, _ := openLedger(b, 2560)
	for _, c := range []struct {
		name string
		tile tiles.Tile
	}{
		{"hashes", tiles.Tile{N: 5, W: tiles.Width}},
		{"entries", tiles.Tile{Entries: true, N: 5, W: tiles.Width}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := tiles.Read(l, c.tile, l.Size()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
