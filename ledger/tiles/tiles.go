// Package tiles is the ledger as a tiled transparency log, SPEC:
// https://c2sp.org/tlog-tiles: the signed checkpoint, the Merkle tree's
// hashes in tiles and the receipts in entry bundles, as static resources
// that any tlog-tiles client reads (golang.org/x/mod/sumdb/tlog, the
// transparency-dev clients). [Handler] serves them over HTTP and [Export]
// writes them as files that any web server or bucket can host; both read
// the hashes the ledger stored for every complete node and the receipt
// files it stored, never recomputing a hash.
//
// # Resources
//
// Hashing is RFC 6962 with SHA-256, as in package ledger: the leaves are
// the receipt files. Paths are relative to the log's prefix (the root of
// `bankdoor ledger serve`'s address):
//
//	checkpoint                  the latest signed checkpoint (C2SP tlog-checkpoint) with its
//	                            witness cosignatures; Content-Type: text/plain; charset=utf-8
//	tile/<L>/<N>[.p/<W>]        a Merkle tree tile; Content-Type: application/octet-stream
//	tile/entries/<N>[.p/<W>]    an entry bundle; Content-Type: application/octet-stream
//
// Tiles have height 8. The tile at level L, index N, holds the W hashes
// of the tree nodes at level 8·L with indexes 256·N to 256·N+W−1, each
// 32 bytes, concatenated: at level 0 the leaf hashes, above it the roots
// of full tiles of the level below. A full tile has W = 256 (8,192
// bytes) and no .p/<W>; a partial tile has 1 <= W <= 255 and the suffix
// .p/<W>. The entry bundle N holds the receipt files of leaves 256·N to
// 256·N+W−1, each as a big-endian uint16 length then its bytes (a
// receipt is at most 16 KiB, see receipt.MaxSize).
//
// <L> is decimal, 0 to 63, and <W> decimal, 1 to 255, both without
// leading zeros. <N> is decimal in groups of three digits, most
// significant first, every group but the last prefixed with "x" and no
// leading group of zeros: 1234067 is x001/x234/067, 5 is 005.
//
// For a tree of size s, level L has floor(s/256^(L+1)) full tiles and,
// if W = floor(s/256^L) mod 256 is not 0, a partial tile of width W. A
// tree of 70,000 leaves has 273 full level 0 tiles and 000.p/112 after
// them (tile/0/273.p/112), one full level 1 tile and tile/1/001.p/17,
// and tile/2/000.p/1; its entry bundles are tile/entries/000 to
// tile/entries/272 and tile/entries/273.p/112.
//
// # Example
//
// The two-leaf tree of package ledger's example, leaves "a" and "b" (one
// byte each, to keep it short; real leaves are receipt files), is one
// partial level 0 tile of width 2, tile/0/000.p/2, the two leaf hashes
// (64 bytes, here in hex):
//
//	022a6979e6dab7aa5ae4c3e5e45f7e977112a7e63593820dbec1ec738a24f93c
//	57eb35615d47f34ec714cacdf5fd74608a5e8e102724e80b24b287c0c27b6a31
//
// and one entry bundle, tile/entries/000.p/2, of 6 bytes:
//
//	00 01 61 00 01 62
//
// With 256 leaves, tile/0/000 holds the 256 leaf hashes, tile/1/000.p/1
// the root of the tree, and tile/entries/000 the 256 entries.
//
// # Serving
//
// [Handler] answers GET and HEAD, and any other method with 405. A path
// that is not one of the above, or names a tile in a non-canonical form
// (x000/001, 01, .p/0, .p/256, .p/07), is 400; a tile the tree does
// not hold yet is 404. Any partial tile of the current tree is served,
// so those of every earlier checkpoint stay available (the spec asks
// for them; they are prefixes of the full tile, never changed). Tiles
// and bundles, full or partial, never change once they exist, and are
// served with "Cache-Control: public, max-age=31536000, immutable"; the
// checkpoint with "Cache-Control: no-cache"; errors with "no-store", as
// a missing tile may exist a moment later. An entry bundle is gzipped
// (Content-Encoding: gzip) for a client whose Accept-Encoding takes gzip,
// as the spec recommends; [Export]'s files are not.
//
// # Errors
//
// [ParsePath] returns errors wrapping [ErrMalformed], [ParseBundle]
// (for clients of the format) errors wrapping [ErrBundle]; [Read] returns
// ErrMalformed for a tile that cannot be, [ErrNotFound] for one beyond
// the tree size, and otherwise the [Source]'s error.
package tiles

import (
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"math"
	"strconv"
	"strings"
)

// Tile geometry (c2sp.org/tlog-tiles).
const (
	Height   = 8              // levels of the tree one tile spans
	Width    = 1 << Height    // hashes (or entries) in a full tile
	HashSize = 32             // SHA-256
	MaxLevel = 63             // the highest level a path may name
	MaxEntry = math.MaxUint16 // the largest entry a bundle can hold
)

// Errors, for errors.Is.
var (
	ErrMalformed = errors.New("not a tlog-tiles path")
	ErrNotFound  = errors.New("beyond the tree")
)

// A Tile names one tile or entry bundle.
type Tile struct {
	Level   int    // 0 to MaxLevel; 0 for an entry bundle
	Entries bool   // an entry bundle (tile/entries/...) rather than hashes
	N       uint64 // index within the level
	W       int    // 1 to Width; Width is a full tile, less a partial one
}

// Path returns the tile's path relative to the log's prefix, e.g.
// "tile/0/x001/234.p/5" or "tile/entries/067".
func (t Tile) Path() string {
	b := []byte("tile/")
	if t.Entries {
		b = append(b, "entries"...)
	} else {
		b = strconv.AppendInt(b, int64(t.Level), 10)
	}
	b = appendN(append(b, '/'), t.N)
	if t.W != Width {
		b = strconv.AppendInt(append(b, ".p/"...), int64(t.W), 10)
	}
	return string(b)
}

// appendN appends n in 3-digit groups, all but the last prefixed by x.
func appendN(b []byte, n uint64) []byte {
	var groups [7]uint64 // math.MaxUint64 has 20 digits
	k := 0
	for {
		groups[k] = n % 1000
		k++
		if n /= 1000; n == 0 {
			break
		}
	}
	for i := k - 1; i >= 0; i-- {
		if i > 0 {
			b = append(b, 'x')
		}
		g := groups[i]
		b = append(b, byte('0'+g/100), byte('0'+g/10%10), byte('0'+g%10))
		if i > 0 {
			b = append(b, '/')
		}
	}
	return b
}

// ParsePath parses a tile or entry bundle path relative to the log's
// prefix, such as "tile/0/x001/234.p/5", accepting only the canonical
// form [Tile.Path] writes. Its errors wrap ErrMalformed.
func ParsePath(path string) (Tile, error) {
	t, ok := parsePath(path)
	if !ok {
		return Tile{}, fmt.Errorf("%w: %q; want tile/<L>/<N>[.p/<W>] or tile/entries/<N>[.p/<W>], N in 3-digit groups (x001/234), L 0..63, W 1..255", ErrMalformed, clip(path))
	}
	return t, nil
}

func parsePath(path string) (Tile, bool) {
	rest, ok := strings.CutPrefix(path, "tile/")
	if !ok || len(path) > 64 { // the longest: tile/entries/ + 7 groups + .p/255
		return Tile{}, false
	}
	level, rest, _ := strings.Cut(rest, "/")
	t := Tile{W: Width}
	if level == "entries" {
		t.Entries = true
	} else if t.Level, ok = decimal(level, MaxLevel); !ok {
		return Tile{}, false
	}
	if i := strings.Index(rest, ".p/"); i >= 0 {
		if t.W, ok = decimal(rest[i+3:], Width-1); !ok || t.W == 0 {
			return Tile{}, false
		}
		rest = rest[:i]
	}
	t.N, ok = parseN(rest)
	return t, ok
}

// decimal parses a decimal number from 0 to max without leading zeros.
func decimal(s string, max int) (int, bool) {
	if s == "" || len(s) > 1 && s[0] == '0' || len(s) > 3 {
		return 0, false
	}
	n := 0
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, n <= max
}

// parseN parses <N>: xDDD/ groups then DDD, with no leading x000 group.
func parseN(s string) (uint64, bool) {
	groups := strings.Split(s, "/")
	var n uint64
	for i, g := range groups {
		last := i == len(groups)-1
		if !last {
			var x bool
			if g, x = strings.CutPrefix(g, "x"); !x || (i == 0 && g == "000") {
				return 0, false
			}
		}
		if len(g) != 3 {
			return 0, false
		}
		d := uint64(0)
		for _, c := range []byte(g) {
			if c < '0' || c > '9' {
				return 0, false
			}
			d = d*10 + uint64(c-'0')
		}
		if n > (math.MaxUint64-d)/1000 {
			return 0, false
		}
		n = n*1000 + d
	}
	return n, true
}

// clip shortens a path quoted in an error.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// A Source is the stored log that tiles are read from. Its methods are
// called only for nodes and entries within a tree size the caller says
// the log has reached.
type Source interface {
	// NodeHashes returns the stored hashes of the count nodes (level,
	// start) to (level, start+count−1): node (level, i) is the root of
	// the complete subtree over leaves i·2^level to (i+1)·2^level − 1.
	NodeHashes(level uint, start, count uint64) ([][]byte, error)
	// Entries returns the count entries from leaf index start (or fewer,
	// which Read reports as an error).
	Entries(start, count uint64) ([][]byte, error)
}

// Read returns the contents of tile t of the tree of size: its hashes,
// or its entry bundle. It is ErrNotFound if the tree of size does not
// hold all of t (a partial tile of width W exists in every tree with at
// least W nodes in it), ErrMalformed if t is not a tile.
func Read(src Source, t Tile, size uint64) ([]byte, error) {
	if t.W < 1 || t.W > Width || t.Level < 0 || t.Level > MaxLevel || t.Entries && t.Level != 0 {
		return nil, fmt.Errorf("%w: %+v", ErrMalformed, t)
	}
	nodes := size >> (Height * uint(t.Level)) // nodes at the tile's tree level; 0 once the shift passes 63
	w := uint64(t.W)
	if w > nodes || t.N > (nodes-w)/Width {
		return nil, fmt.Errorf("%w: %s needs %d nodes at tree level %d, the tree of size %d has %d", ErrNotFound, t.Path(), satMulAdd(t.N, w), Height*t.Level, size, nodes)
	}
	if t.Entries {
		return readBundle(src, t)
	}
	hashes, err := src.NodeHashes(uint(Height*t.Level), t.N*Width, w)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", t.Path(), err)
	}
	if len(hashes) != t.W {
		return nil, fmt.Errorf("reading %s: %d hashes, want %d", t.Path(), len(hashes), t.W)
	}
	b := make([]byte, 0, t.W*HashSize)
	for i, h := range hashes {
		if len(h) != HashSize {
			return nil, fmt.Errorf("reading %s: hash %d is %d bytes, want %d", t.Path(), i, len(h), HashSize)
		}
		b = append(b, h...)
	}
	return b, nil
}

// satMulAdd is n·256 + w, or the largest uint64 if that overflows.
func satMulAdd(n, w uint64) uint64 {
	if n > (math.MaxUint64-w)/Width {
		return math.MaxUint64
	}
	return n*Width + w
}

func readBundle(src Source, t Tile) ([]byte, error) {
	entries, err := src.Entries(t.N*Width, uint64(t.W))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", t.Path(), err)
	}
	if len(entries) != t.W {
		return nil, fmt.Errorf("reading %s: %d entries, want %d", t.Path(), len(entries), t.W)
	}
	n := 0
	for i, e := range entries {
		if len(e) > MaxEntry {
			return nil, fmt.Errorf("reading %s: entry %d is %d bytes, more than a bundle holds (%d)", t.Path(), t.N*Width+uint64(i), len(e), MaxEntry)
		}
		n += 2 + len(e)
	}
	b := make([]byte, 0, n)
	for _, e := range entries {
		b = binary.BigEndian.AppendUint16(b, uint16(len(e)))
		b = append(b, e...)
	}
	return b, nil
}

// ErrBundle is the error of ParseBundle.
var ErrBundle = errors.New("malformed entry bundle")

// ParseBundle splits an entry bundle of w entries (each a big-endian
// uint16 length, then that many bytes). The entries share b's memory.
// Its errors wrap ErrBundle: w not 1 to Width, an entry cut short, more
// or fewer than w entries.
func ParseBundle(b []byte, w int) ([][]byte, error) {
	if w < 1 || w > Width {
		return nil, fmt.Errorf("%w: a bundle holds 1 to %d entries, not %d", ErrBundle, Width, w)
	}
	out := make([][]byte, 0, w)
	for len(b) > 0 {
		if len(b) < 2 || len(b)-2 < int(binary.BigEndian.Uint16(b)) {
			return nil, fmt.Errorf("%w: entry %d is cut short", ErrBundle, len(out))
		}
		if len(out) == w {
			return nil, fmt.Errorf("%w: more than %d entries", ErrBundle, w)
		}
		n := int(binary.BigEndian.Uint16(b))
		out, b = append(out, b[2:2+n:2+n]), b[2+n:]
	}
	if len(out) != w {
		return nil, fmt.Errorf("%w: %d entries, want %d", ErrBundle, len(out), w)
	}
	return out, nil
}

// ForSize yields every tile and entry bundle of the tree of size: level
// by level from 0, the full tiles in order, then the partial one if
// there is one; then the entry bundles the same way.
func ForSize(size uint64) iter.Seq[Tile] {
	return func(yield func(Tile) bool) {
		for level := 0; level <= MaxLevel; level++ {
			nodes := size >> (Height * uint(level))
			if nodes == 0 {
				break
			}
			if !yieldLevel(yield, Tile{Level: level}, nodes) {
				return
			}
		}
		yieldLevel(yield, Tile{Entries: true}, size)
	}
}

// yieldLevel yields the tiles like t of a level with nodes hashes; it
// is false if yield was.
func yieldLevel(yield func(Tile) bool, t Tile, nodes uint64) bool {
	for t.N = 0; t.N < nodes/Width; t.N++ {
		if t.W = Width; !yield(t) {
			return false
		}
	}
	if w := nodes % Width; w != 0 {
		t.W = int(w)
		return yield(t)
	}
	return true
}
