package tiles_test

import (
	"encoding/hex"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/bankdoor/bankdoor/ledger/tiles"
)

// xmodSource is a Source over x/mod's stored hashes of records: the
// hashes of a tree of one-byte leaves, which no ledger holds.
type xmodSource struct {
	hashes  xmodHashes
	records [][]byte
}

func (s xmodSource) NodeHashes(level uint, start, count uint64) ([][]byte, error) {
	out := make([][]byte, count)
	for i := range out {
		h, err := s.hashes.ReadHashes([]int64{tlog.StoredHashIndex(int(level), int64(start)+int64(i))})
		if err != nil {
			return nil, err
		}
		out[i] = h[0][:]
	}
	return out, nil
}

func (s xmodSource) Entries(start, count uint64) ([][]byte, error) {
	return s.records[start : start+count], nil
}

// TestDocExample: the package doc's two-leaf example, byte for byte.
func TestDocExample(t *testing.T) {
	records := [][]byte{[]byte("a"), []byte("b")}
	src := xmodSource{xmodTree(t, records), records}
	tile, err := tiles.Read(src, tiles.Tile{W: 2}, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := "022a6979e6dab7aa5ae4c3e5e45f7e977112a7e63593820dbec1ec738a24f93c" +
		"57eb35615d47f34ec714cacdf5fd74608a5e8e102724e80b24b287c0c27b6a31"
	if got := hex.EncodeToString(tile); got != want {
		t.Errorf("tile/0/000.p/2 = %s, the doc says %s", got, want)
	}
	bundle, err := tiles.Read(src, tiles.Tile{Entries: true, W: 2}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(bundle); got != strings.ReplaceAll("00 01 61 00 01 62", " ", "") {
		t.Errorf("tile/entries/000.p/2 = %s, the doc says 00 01 61 00 01 62", got)
	}
}
