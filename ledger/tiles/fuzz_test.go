package tiles_test

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/bankdoor/bankdoor/ledger/tiles"
)

// FuzzParsePath: ParsePath never panics, accepts only what Path writes
// (one spelling per tile), and, for hash tiles x/mod can name, agrees
// with x/mod's own strict parser (tlog.ParseTilePath, whose paths carry
// the height: tile/8/L/N).
func FuzzParsePath(f *testing.F) {
	for _, p := range []string{
		"tile/0/000", "tile/0/x001/x234/067.p/5", "tile/entries/000.p/255", "tile/63/999",
		"tile/0/x000/001", "tile/0/000.p/0", "tile/0/000.p/256", "tile/01/000", "tile/0/01",
	} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		tile, err := tiles.ParsePath(p)
		if err != nil {
			if !errors.Is(err, tiles.ErrMalformed) {
				t.Fatalf("ParsePath(%q): %v, which does not wrap ErrMalformed", p, err)
			}
		} else if got := tile.Path(); got != p {
			t.Fatalf("ParsePath(%q) = %+v, whose Path is %q", p, tile, got)
		}
		rest, ok := strings.CutPrefix(p, "tile/")
		if !ok || strings.HasPrefix(rest, "entries/") || strings.HasPrefix(rest, "data/") {
			return
		}
		xt, xerr := tlog.ParseTilePath("tile/8/" + rest)
		if xerr != nil || xt.L > tiles.MaxLevel || xt.N >= 1<<53 {
			return // x/mod refuses it, or it is outside tlog-tiles' levels, or big enough to differ in overflow
		}
		if err != nil || tile.Level != xt.L || tile.N != uint64(xt.N) || tile.W != xt.W {
			t.Fatalf("x/mod parses tile/8/%s as %+v; ParsePath(%q) = %+v, %v", rest, xt, p, tile, err)
		}
	})
}

// FuzzParseBundle: ParseBundle never panics; what it accepts has w
// entries whose framing adds up to the input exactly.
func FuzzParseBundle(f *testing.F) {
	f.Add([]byte{0, 2, 'h', 'i', 0, 0}, 2)
	f.Add([]byte{0, 3, 'h', 'i'}, 1)
	f.Add([]byte{}, 0)
	f.Add([]byte{0, 0}, 257)
	f.Add([]byte{0, 0, 0}, 1)
	f.Fuzz(func(t *testing.T, b []byte, w int) {
		entries, err := tiles.ParseBundle(b, w)
		if err != nil {
			if !errors.Is(err, tiles.ErrBundle) {
				t.Fatalf("ParseBundle: %v, which does not wrap ErrBundle", err)
			}
			return
		}
		n := 0
		for _, e := range entries {
			n += 2 + len(e)
		}
		if len(entries) != w || n != len(b) {
			t.Fatalf("ParseBundle(%x, %d): %d entries covering %d bytes", b, w, len(entries), n)
		}
	})
}
