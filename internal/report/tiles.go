package report

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/bankdoor/bankdoor/ledger/tiles"
)

// tilesReadID is the id of the full tile row; the entry bundle row's is
// tilesReadID + "-entries".
const tilesReadID = "tiles-read"

// tileLog is a report log as package tiles serves it.
type tileLog struct{ *benchLog }

func (t tileLog) Checkpoint() ([]byte, error) { return t.Log.Checkpoint(), nil }

// TileReads serves a log of size receipts (at least 256, so it has a full
// tile) with the tlog-tiles handler (package ledger/tiles) on a loopback
// HTTP/1.1 server and times n GETs each of random full level 0 tiles, of
// random full entry bundles as they are (Accept-Encoding: identity), and
// of the same gzipped (Go's client asks for gzip and unzips), each answer
// read whole, over one kept-alive connection. Before the clock starts,
// x/mod's tlog reads every full level 0 tile and verifies it against the
// signed checkpoint; each timed tile must be that tile, and each timed
// bundle's entries must hash to its leaves.
func (lb *LedgerBench) TileReads(ctx context.Context, size uint64, n int) ([]Measurement, error) {
	size = max(size, tiles.Width)
	lb.progress("ledger: tlog-tiles reads, %d tiles and 2 x %d entry bundles of a log of %d receipts", n, n, size)
	bl, err := lb.openLog("tiles", 0)
	if err != nil {
		return nil, err
	}
	defer bl.Close()
	as, err := bl.agents(2)
	if err != nil {
		return nil, err
	}
	if err := lb.grow(ctx, bl, as, size); err != nil {
		return nil, err
	}
	srv := httptest.NewServer(tiles.Handler(tileLog{bl}, nil))
	defer srv.Close()
	c := &tileClient{base: srv.URL, http: srv.Client()}
	leaves, err := c.verifiedLeaves(bl, size)
	if err != nil {
		return nil, err
	}
	rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), size))
	var lat [3][]time.Duration // hash tiles, bundles, gzipped bundles
	for range n {
		i := rnd.IntN(len(leaves))
		for k, t := range []tiles.Tile{{N: uint64(i), W: tiles.Width}, {Entries: true, N: uint64(i), W: tiles.Width}, {Entries: true, N: uint64(i), W: tiles.Width}} {
			d, b, err := c.timedGet(ctx, t.Path(), k == 2)
			if err == nil && !t.Entries && string(b) != string(leaves[i]) {
				err = errors.New("differs from the tile verified against the checkpoint")
			} else if err == nil && t.Entries {
				err = checkBundle(b, leaves[i])
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", t.Path(), err)
			}
			lat[k] = append(lat[k], d)
		}
	}
	note := fmt.Sprintf("GET over loopback HTTP/1.1 from a log of %d receipts (%d full tiles), in process", size, len(leaves))
	row := func(id, what string, lat []time.Duration) Measurement {
		return Measurement{ID: id, Section: "ledger", What: what, Status: StatusMeasured, Unit: "µs", N: n, Dist: Distribution(lat, time.Microsecond), Note: note}
	}
	return []Measurement{
		row(tilesReadID, "tlog-tiles read of a full level 0 tile (256 stored hashes, 8 KiB), verified", lat[0]),
		row(tilesReadID+"-entries", "tlog-tiles read of a full entry bundle (256 receipts), uncompressed, verified", lat[1]),
		row(tilesReadID+"-entries-gzip", "tlog-tiles read of a full entry bundle (256 receipts), gzipped by the server and unzipped by the client, verified", lat[2]),
	}, nil
}

// tileClient GETs tlog-tiles paths from base.
type tileClient struct {
	base string
	http *http.Client
}

// timedGet GETs path, asking for gzip or not, and times it until the
// whole answer is read (and, with gzip, unzipped).
func (c *tileClient) timedGet(ctx context.Context, path string, gzip bool) (time.Duration, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/"+path, nil)
	if err != nil {
		return 0, nil, err
	}
	if !gzip {
		req.Header.Set("Accept-Encoding", "identity") // the transport then adds no gzip
	}
	start := time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	d := time.Since(start)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET /%s: %s: %s", path, resp.Status, b)
	}
	if err == nil && gzip != resp.Uncompressed {
		err = fmt.Errorf("GET /%s: gzipped %v, want %v", path, resp.Uncompressed, gzip)
	}
	return d, b, err
}

// Height, ReadTiles and SaveTiles make the client x/mod's tlog.TileReader.
func (c *tileClient) Height() int { return tiles.Height }

func (c *tileClient) ReadTiles(ts []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(ts))
	for i, t := range ts {
		var err error
		if _, out[i], err = c.timedGet(context.Background(), tiles.Tile{Level: t.L, N: uint64(t.N), W: t.W}.Path(), false); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (c *tileClient) SaveTiles([]tlog.Tile, [][]byte) {}

// verifiedLeaves returns the full level 0 tiles of the log's checkpoint,
// read by x/mod's tlog, which verifies them against the signed root.
func (c *tileClient) verifiedLeaves(bl *benchLog, size uint64) ([][]byte, error) {
	cp, err := bl.checkpoint()
	if err != nil {
		return nil, err
	}
	if cp.Size != size {
		return nil, fmt.Errorf("checkpoint of size %d, want %d", cp.Size, size)
	}
	tree := tlog.Tree{N: int64(cp.Size), Hash: tlog.Hash(cp.Hash)}
	hr := tlog.TileHashReader(tree, c)
	if root, err := tlog.TreeHash(tree.N, hr); err != nil || root != tree.Hash {
		return nil, fmt.Errorf("the root recomputed from the tiles (%v, %v) is not the checkpoint's", root, err)
	}
	out := make([][]byte, size/tiles.Width)
	for i := range out {
		if out[i], err = tlog.ReadTileData(tlog.Tile{H: tiles.Height, N: int64(i), W: tiles.Width}, hr); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// checkBundle checks that the entries of bundle hash to the leaves of
// tile.
func checkBundle(bundle, tile []byte) error {
	entries, err := tiles.ParseBundle(bundle, tiles.Width)
	if err != nil {
		return err
	}
	for i, e := range entries {
		if h := tlog.RecordHash(e); string(h[:]) != string(tile[i*tiles.HashSize:(i+1)*tiles.HashSize]) {
			return fmt.Errorf("entry %d does not hash to leaf %d of the tile", i, i)
		}
	}
	return nil
}
