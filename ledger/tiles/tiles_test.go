package tiles_test

import (
	"context"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/bankdoor/bankdoor/internal/agentchain/chaintest"
	"github.com/bankdoor/bankdoor/internal/scratchlog"
	"github.com/bankdoor/bankdoor/ledger"
	"github.com/bankdoor/bankdoor/ledger/tiles"
)

const origin = "ledger.example/tiles-test"

// openLedger returns a real ledger holding n receipts of three agents'
// chains, appended in batches of 100, and the receipts in log order.
func openLedger(t testing.TB, n int) (*ledger.Log, [][]byte) {
	t.Helper()
	keys := &ledger.AgentKeys{}
	var agents []*chaintest.Agent
	for range 3 {
		a := chaintest.Generate(t, time.Date(2026, 12, 4, 8, 0, 0, 0, time.UTC))
		keys.Enroll(a.Public())
		agents = append(agents, a)
	}
	l, err := scratchlog.Open(filepath.Join(t.TempDir(), "ledger.db"), ledger.Options{Origin: origin, Agents: keys})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var all [][]byte
	for i := 0; len(all) < n; i++ {
		batch := agents[i%len(agents)].Chain(t, min(100, n-len(all)))
		if _, err := l.Append(context.Background(), batch); err != nil {
			t.Fatal(err)
		}
		all = append(all, batch...)
	}
	return l.Log, all
}

// xmodHashes is golang.org/x/mod/sumdb/tlog's own storage of the tree of
// records: what the tiles are checked against, computed from the leaves
// by other code than the ledger's.
type xmodHashes []tlog.Hash

func (h xmodHashes) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		out[i] = h[x]
	}
	return out, nil
}

func xmodTree(t testing.TB, records [][]byte) xmodHashes {
	t.Helper()
	var h xmodHashes
	for i, r := range records {
		add, err := tlog.StoredHashes(int64(i), r, h)
		if err != nil {
			t.Fatal(err)
		}
		h = append(h, add...)
	}
	return h
}

// xmodTile is t as x/mod names it (height 8).
func xmodTile(t tiles.Tile) tlog.Tile {
	return tlog.Tile{H: tiles.Height, L: t.Level, N: int64(t.N), W: t.W}
}

// TestReadMatchesXMod: every tile of trees of several sizes, read from the
// ledger's stored nodes, is the tile x/mod's tlog.ReadTileData computes
// from the leaves; every entry bundle holds the receipts in order.
func TestReadMatchesXMod(t *testing.T) {
	l, records := openLedger(t, 700)
	ref := xmodTree(t, records)
	for _, size := range []uint64{1, 255, 256, 257, 512, 600, 700} {
		n := 0
		for tile := range tiles.ForSize(size) {
			n++
			got, err := tiles.Read(l, tile, size)
			if err != nil {
				t.Fatalf("size %d: Read(%s): %v", size, tile.Path(), err)
			}
			if tile.Entries {
				want := records[tile.N*tiles.Width : tile.N*tiles.Width+uint64(tile.W)]
				entries, err := tiles.ParseBundle(got, tile.W)
				if err != nil {
					t.Fatalf("size %d: %s: %v", size, tile.Path(), err)
				}
				if !slices.EqualFunc(entries, want, func(a, b []byte) bool { return string(a) == string(b) }) {
					t.Fatalf("size %d: %s does not hold receipts %d.. in order", size, tile.Path(), tile.N*tiles.Width)
				}
				continue
			}
			want, err := tlog.ReadTileData(xmodTile(tile), ref)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Fatalf("size %d: %s differs from x/mod's tile", size, tile.Path())
			}
		}
		if n == 0 {
			t.Fatalf("size %d: ForSize yielded no tile", size)
		}
	}
}

// TestForSize: the spec's worked example, a tree of 70,000 leaves.
func TestForSize(t *testing.T) {
	var got []string
	for tile := range tiles.ForSize(70000) {
		if tile.Level == 0 && tile.N > 0 && tile.N < 272 { // the runs of full tiles, shortened
			continue
		}
		got = append(got, tile.Path())
	}
	want := []string{
		"tile/0/000", "tile/0/272", "tile/0/273.p/112",
		"tile/1/000", "tile/1/001.p/17",
		"tile/2/000.p/1",
		"tile/entries/000", "tile/entries/272", "tile/entries/273.p/112",
	}
	if !slices.Equal(got, want) {
		t.Errorf("ForSize(70000) =\n%q\nwant\n%q", got, want)
	}
	for tile := range tiles.ForSize(0) {
		t.Errorf("ForSize(0) yielded %s; an empty tree has no tiles", tile.Path())
	}
	var paths []string
	for tile := range tiles.ForSize(256) {
		paths = append(paths, tile.Path())
	}
	if want := []string{"tile/0/000", "tile/1/000.p/1", "tile/entries/000"}; !slices.Equal(paths, want) {
		t.Errorf("ForSize(256) = %q, want %q", paths, want)
	}
}

// TestReadBeyondTree: a tile the tree does not hold is ErrNotFound,
// whatever its index, even where index·256 overflows.
func TestReadBeyondTree(t *testing.T) {
	l, _ := openLedger(t, 300)
	for _, p := range []string{
		"tile/0/001", "tile/0/001.p/45", "tile/0/002.p/1", "tile/1/000.p/2", "tile/2/000.p/1", "tile/63/000.p/1",
		"tile/entries/001", "tile/entries/001.p/45", "tile/0/x018/x446/x744/x073/x709/x551/615",
	} {
		tile, err := tiles.ParsePath(p)
		if err != nil {
			t.Fatalf("ParsePath(%q): %v", p, err)
		}
		if _, err := tiles.Read(l, tile, l.Size()); !errors.Is(err, tiles.ErrNotFound) {
			t.Errorf("Read(%s) in a tree of 300: %v, want ErrNotFound", p, err)
		}
	}
	for _, p := range []string{"tile/0/000", "tile/0/001.p/44", "tile/0/001.p/1", "tile/1/000.p/1", "tile/entries/001.p/44"} {
		tile, _ := tiles.ParsePath(p)
		if _, err := tiles.Read(l, tile, l.Size()); err != nil {
			t.Errorf("Read(%s) in a tree of 300: %v", p, err)
		}
	}
}

// TestPathRoundTrip: Path writes what ParsePath reads, at the edges of
// the encoding.
func TestPathRoundTrip(t *testing.T) {
	for _, tile := range []tiles.Tile{
		{N: 0, W: 256}, {N: 999, W: 1}, {N: 1000, W: 255}, {Level: 63, N: 1234067, W: 256},
		{Entries: true, N: math.MaxUint64, W: 7}, {Level: 1, N: 1000000, W: 256},
	} {
		p := tile.Path()
		got, err := tiles.ParsePath(p)
		if err != nil || got != tile {
			t.Errorf("ParsePath(%q) = %+v, %v; want %+v", p, got, err, tile)
		}
	}
	if got := (tiles.Tile{N: 1234067, W: 256}).Path(); got != "tile/0/x001/x234/067" {
		t.Errorf("Path of tile 1234067 = %q, want the spec's x001/x234/067", got)
	}
}

// TestParsePathRejects: malformed and non-canonical paths.
func TestParsePathRejects(t *testing.T) {
	for _, p := range []string{
		"", "tile", "tile/", "tile/0", "tile/0/", "tile/0/0", "tile/0/00", "tile/0/0000", "tile/0/abc",
		"tile/00/000", "tile/01/000", "tile/64/000", "tile/-1/000", "tile/+1/000", "tile/ 0/000",
		"tile/0/x000/001", "tile/0/x001", "tile/0/001/002", "tile/0/x01/002", "tile/0/xx001/002", "tile/0/x1000/002",
		"tile/0/000.p/0", "tile/0/000.p/256", "tile/0/000.p/07", "tile/0/000.p/", "tile/0/000.p", "tile/0/000.p/1/2",
		"tile/0/000.p/-1", "tile/0/x001.p/5/000", "tile/0/000/", "/tile/0/000", "tile//0/000",
		"tile/entries/", "tile/entries/0", "tile/Entries/000", "tile/data/000", "tile/8/0/000",
		"tile/0/x018/x446/x744/x073/x709/x551/616", "tile/0/x100/x000/x000/x000/x000/x000/x000/000",
		"checkpoint", "tile/0/000\x00", "tile/0/٠٠٠",
	} {
		if tile, err := tiles.ParsePath(p); !errors.Is(err, tiles.ErrMalformed) {
			t.Errorf("ParsePath(%q) = %+v, %v; want ErrMalformed", p, tile, err)
		} else if !strings.Contains(err.Error(), "want tile/<L>/<N>") {
			t.Errorf("ParsePath(%q): %q does not say what a path looks like", p, err)
		}
	}
}

// TestExport: Export writes every tile of the size as Read gives it and
// the checkpoint; a failure part way leaves no checkpoint, and a second
// export never replaces a file.
func TestExport(t *testing.T) {
	l, _ := openLedger(t, 600)
	cp := l.Checkpoint()
	dir := t.TempDir()
	n, err := tiles.Export(context.Background(), dir, readAt(l, 600), cp, 600)
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for tile := range tiles.ForSize(600) {
		want++
		b, err := tiles.Read(l, tile, 600)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(tile.Path())))
		if err != nil || string(got) != string(b) {
			t.Fatalf("%s: the file differs from Read's tile (%v)", tile.Path(), err)
		}
	}
	if got, err := os.ReadFile(filepath.Join(dir, "checkpoint")); err != nil || string(got) != string(cp) || n != want {
		t.Fatalf("checkpoint %q (%v), %d tiles; want the log's and %d", got, err, n, want)
	}
	if _, err := tiles.Export(context.Background(), dir, readAt(l, 600), cp, 600); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("a second Export into the same directory: %v, want fs.ErrExist", err)
	}

	// The entry bundles' directory cannot be made: the hash tiles are
	// written, then Export stops, before the checkpoint.
	dir = t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "tile"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tile", "entries"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := tiles.Export(context.Background(), dir, readAt(l, 600), cp, 600); err == nil {
		t.Fatal("Export with tile/entries a file succeeded")
	}
	if _, err := os.Stat(filepath.Join(dir, "tile", "0", "000")); err != nil {
		t.Fatalf("the hash tiles before the failure: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "checkpoint")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a failed Export left a checkpoint (%v)", err)
	}
}

// readAt is Read of src at size, as Export takes it.
func readAt(src tiles.Source, size uint64) func(tiles.Tile) ([]byte, error) {
	return func(t tiles.Tile) ([]byte, error) { return tiles.Read(src, t, size) }
}
