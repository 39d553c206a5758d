package main_test

// The tlog-tiles read API (package ledger/tiles) read by a client nobody
// here wrote: golang.org/x/mod/sumdb/tlog verifies every tile against
// the checkpoint, recomputes the root and checks the proofs. The only
// code of this file on the client side maps x/mod's tile names to
// tlog-tiles paths and splits entry bundles.

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"connectrpc.com/connect"
	"github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	ledgerv1 "github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1"
)

// tileServer is x/mod's tlog.TileReader for a tlog-tiles log at url. It
// keeps the tiles x/mod saves once it has verified them, as the
// interface intends, so that 10,000 proofs do not fetch a tile each.
type tileServer struct {
	t     *testing.T
	url   string
	mu    sync.Mutex
	saved map[tlog.Tile][]byte
}

func newTileServer(t *testing.T, url string) *tileServer {
	return &tileServer{t: t, url: url, saved: map[tlog.Tile][]byte{}}
}

func (s *tileServer) Height() int { return 8 }

// tilesPath maps x/mod's tile name (tile/8/L/N[.p/W], tile/8/data/N for
// entries) to the tlog-tiles path (tile/L/N[.p/W], tile/entries/N).
func tilesPath(t tlog.Tile) string {
	p := strings.TrimPrefix(t.Path(), "tile/8/")
	if t.L == -1 {
		p = "entries" + strings.TrimPrefix(p, "data")
	}
	return "tile/" + p
}

func (s *tileServer) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		s.mu.Lock()
		b, ok := s.saved[t]
		s.mu.Unlock()
		if ok {
			out[i] = b
			continue
		}
		var err error
		if out[i], err = s.get(tilesPath(t)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (s *tileServer) SaveTiles(tiles []tlog.Tile, data [][]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, t := range tiles {
		s.saved[t] = data[i]
	}
}

func (s *tileServer) get(path string) ([]byte, error) {
	resp, err := http.Get(s.url + "/" + path)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /%s: %s: %s", path, resp.Status, b)
	}
	return b, nil
}

// readTree fetches the checkpoint, verifies its log signature with
// x/mod's note and returns the note and the tree it commits to.
func (s *tileServer) readTree(vkey string) ([]byte, tlog.Tree) {
	s.t.Helper()
	b, err := s.get("checkpoint")
	if err != nil {
		s.t.Fatal(err)
	}
	return b, checkpointTree(s.t, b, vkey)
}

// checkpointTree verifies the checkpoint note n with vkey (x/mod's note)
// and parses its text (transparency-dev/formats).
func checkpointTree(t *testing.T, n []byte, vkey string) tlog.Tree {
	t.Helper()
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := note.Open(n, note.VerifierList(v))
	if err != nil {
		t.Fatalf("the checkpoint does not verify with the log key: %v\n%s", err, n)
	}
	var cp log.Checkpoint
	if _, err := cp.Unmarshal([]byte(msg.Text)); err != nil {
		t.Fatal(err)
	}
	var h tlog.Hash
	copy(h[:], cp.Hash)
	return tlog.Tree{N: int64(cp.Size), Hash: h}
}

// checkTiles reads the whole log at url as a tlog-tiles client: the
// checkpoint verifies, the root recomputed from the tiles is the
// checkpoint's, every entry (compared with want, the receipts by index)
// has an inclusion proof from the tiles that checks, and the tree is
// consistent with old, an earlier checkpoint. All checks are x/mod's.
func checkTiles(t *testing.T, url, vkey string, want [][]byte, old tlog.Tree) {
	t.Helper()
	s := newTileServer(t, url)
	_, tree := s.readTree(vkey)
	if tree.N != int64(len(want)) {
		t.Fatalf("the checkpoint is of size %d, want %d", tree.N, len(want))
	}
	hr := tlog.TileHashReader(tree, s)
	root, err := tlog.TreeHash(tree.N, hr)
	if err != nil || root != tree.Hash {
		t.Fatalf("the root recomputed from the tiles is %v (%v), the checkpoint's %v", root, err, tree.Hash)
	}
	for n := int64(0); n*256 < tree.N; n++ {
		tile := tlog.Tile{H: 8, L: -1, N: n, W: int(min(256, tree.N-n*256))}
		data, err := s.ReadTiles([]tlog.Tile{tile})
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range splitEntryBundle(t, data[0], tile.W) {
			index := n*256 + int64(i)
			if !bytes.Equal(e, want[index]) {
				t.Fatalf("entry %d of %s is not the receipt appended at index %d", i, tilesPath(tile), index)
			}
			p, err := tlog.ProveRecord(tree.N, index, hr)
			if err != nil {
				t.Fatalf("inclusion proof of entry %d from the tiles: %v", index, err)
			}
			if err := tlog.CheckRecord(p, tree.N, tree.Hash, index, tlog.RecordHash(e)); err != nil {
				t.Fatalf("inclusion proof of entry %d: %v", index, err)
			}
		}
	}
	p, err := tlog.ProveTree(tree.N, old.N, hr)
	if err != nil {
		t.Fatalf("consistency proof %d -> %d from the tiles: %v", old.N, tree.N, err)
	}
	if err := tlog.CheckTree(p, tree.N, tree.Hash, old.N, old.Hash); err != nil {
		t.Fatalf("consistency %d -> %d: %v", old.N, tree.N, err)
	}
}

// splitEntryBundle splits a tlog-tiles entry bundle: each entry a
// big-endian uint16 length, then its bytes.
func splitEntryBundle(t *testing.T, b []byte, w int) [][]byte {
	t.Helper()
	var out [][]byte
	for len(b) >= 2 {
		n := int(binary.BigEndian.Uint16(b))
		if len(b) < 2+n {
			break
		}
		out, b = append(out, b[2:2+n]), b[2+n:]
	}
	if len(b) != 0 || len(out) != w {
		t.Fatalf("entry bundle of %d entries with %d bytes left over, want %d entries", len(out), len(b), w)
	}
	return out
}

// appendAll appends the agents' chains round-robin, batch receipts at a
// time, until the log holds upTo receipts; it returns the receipts in log
// order.
func appendAll(t *testing.T, s *ledgerServer, chains [][][]byte, sent []int, upTo int, log [][]byte) [][]byte {
	t.Helper()
	c := s.client()
	for i := 0; len(log) < upTo; i = (i + 1) % len(chains) {
		n := min(250, len(chains[i])-sent[i], upTo-len(log))
		if n == 0 {
			continue
		}
		batch := chains[i][sent[i] : sent[i]+n]
		resp, err := c.Append(t.Context(), appendRequest(batch...))
		if err != nil {
			t.Fatal(err)
		}
		for k, idx := range resp.Msg.Indexes {
			if idx != uint64(len(log)) {
				t.Fatalf("receipt acknowledged at index %d, want %d", idx, len(log))
			}
			log = append(log, batch[k])
		}
		sent[i] += n
	}
	return log
}

// TestTilesReadByXMod: a 10,000-receipt log served by bankdoor ledger
// serve, and the same log exported with export --tiles and served by a
// plain http.FileServer, both read and verified by x/mod's tlog; the
// served one also keeps the partial tiles of an earlier checkpoint.
func TestTilesReadByXMod(t *testing.T) {
	t.Parallel()
	w := newLedgerWorld(t)
	var chains [][][]byte
	for range 4 {
		chains = append(chains, newChainAgent(t, w).receipts(t, 2500))
	}
	sent := make([]int, len(chains))
	s := w.serve()
	vkey := w.logVKey()
	log := appendAll(t, s, chains, sent, 3000, nil)
	_, old := newTileServer(t, s.url).readTree(vkey)
	if old.N != 3000 {
		t.Fatalf("checkpoint after 3,000 receipts is of size %d", old.N)
	}
	log = appendAll(t, s, chains, sent, 10000, log)

	checkTiles(t, s.url, vkey, log, old)
	// The partial tiles of the size 3,000 checkpoint are still served.
	hr := tlog.TileHashReader(old, newTileServer(t, s.url))
	if root, err := tlog.TreeHash(old.N, hr); err != nil || root != old.Hash {
		t.Fatalf("the tree of the kept checkpoint, recomputed from its tiles after the log grew: %v (%v), want %v", root, err, old.Hash)
	}
	resp, err := s.client().GetCheckpoint(t.Context(), connect.NewRequest(&ledgerv1.GetCheckpointRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	served, _ := newTileServer(t, s.url).readTree(vkey)
	if !bytes.Equal(served, resp.Msg.Checkpoint) {
		t.Fatalf("GET /checkpoint serves\n%s\nGetCheckpoint\n%s", served, resp.Msg.Checkpoint)
	}
	// export --tiles from the server: its tiles, verified, make the same
	// files as from its file below.
	mirror := filepath.Join(w.dir, "mirror")
	if code, out := runBankdoor(t, w.dir, "export", "--ledger", s.url, "--log-key", vkey, "--tiles", mirror); code != 0 {
		t.Fatalf("bankdoor export --ledger URL --tiles: exit %d\n%s", code, out)
	}
	if code := s.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("ledger serve exited %d:\n%s", code, s.output())
	}

	dir := filepath.Join(w.dir, "tiles")
	if code, out := runBankdoor(t, w.dir, "export", "--ledger-db", w.db, "--ledger-key", w.key, "--tiles", dir); code != 0 {
		t.Fatalf("bankdoor export --tiles: exit %d\n%s", code, out)
	}
	fsrv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(fsrv.Close)
	checkTiles(t, fsrv.URL, vkey, log, old)
	exported, err := os.ReadFile(filepath.Join(dir, "checkpoint"))
	if err != nil || !bytes.Equal(exported, served) {
		t.Fatalf("the exported checkpoint is\n%s\nthe served one\n%s (%v)", exported, served, err)
	}
	if a, b := treeFiles(t, dir), treeFiles(t, mirror); !maps.Equal(a, b) || len(a) != 1+2*40+1 {
		t.Fatalf("export --tiles from the file wrote %d files, from the server %d (or they differ); want the same %d", len(a), len(b), 1+2*40+1)
	}

	// A log that serves one wrong hash is not mirrored: the tile fails
	// x/mod's verification, and no checkpoint is written.
	if err := os.WriteFile(filepath.Join(dir, "tile", "0", "017"), flipped(t, filepath.Join(dir, "tile", "0", "017"), 100), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(w.dir, "bad")
	code, out := runBankdoor(t, w.dir, "export", "--ledger", fsrv.URL, "--log-key", vkey, "--tiles", bad)
	if code != 1 || !strings.Contains(out, "does not verify against the checkpoint") {
		t.Fatalf("export --tiles from a log serving a wrong tile: exit %d, want 1 saying a tile does not verify\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(bad, "checkpoint")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a refused mirror left a checkpoint (%v)", err)
	}
	// Nor one that serves a wrong entry: its leaf hash is not the tile's.
	tile17 := filepath.Join(dir, "tile", "0", "017")
	if err := os.WriteFile(tile17, flipped(t, tile17, 100), 0o644); err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(dir, "tile", "entries", "005")
	if err := os.WriteFile(bundle, flipped(t, bundle, 100), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out = runBankdoor(t, w.dir, "export", "--ledger", fsrv.URL, "--log-key", vkey, "--tiles", filepath.Join(w.dir, "bad2"))
	if code != 1 || !strings.Contains(out, "tile/entries/005 from "+fsrv.URL+": entry 0 does not hash to its leaf") {
		t.Fatalf("export --tiles from a log serving a wrong entry: exit %d, want 1 naming entry 0 of tile/entries/005\n%s", code, out)
	}
}

// TestTilesRequests: what ledger serve answers each kind of request of
// the tlog-tiles API, in a log of 300 receipts: the status, the content
// type and caching the spec asks for, and a clear error for a malformed
// path, a tile beyond the tree and a method other than GET or HEAD.
func TestTilesRequests(t *testing.T) {
	t.Parallel()
	w := newLedgerWorld(t)
	chain := newChainAgent(t, w).receipts(t, 300)
	s := w.serve()
	appendAll(t, s, [][][]byte{chain}, []int{0}, 300, nil)
	const (
		octets    = "application/octet-stream"
		text      = "text/plain; charset=utf-8"
		immutable = "public, max-age=31536000, immutable"
	)
	for _, c := range []struct {
		method, path string
		code         int
		ctype, cache string
		len          int    // of the body, if not 0
		says         string // in the error body
	}{
		{"GET", "/checkpoint", 200, text, "no-cache", 0, ""},
		{"GET", "/tile/0/000", 200, octets, immutable, 8192, ""},
		{"HEAD", "/tile/0/000", 200, octets, immutable, 0, ""},
		{"GET", "/tile/0/001.p/44", 200, octets, immutable, 44 * 32, ""},
		{"GET", "/tile/0/001.p/1", 200, octets, immutable, 32, ""}, // every partial of the tree stays served
		{"GET", "/tile/1/000.p/1", 200, octets, immutable, 32, ""},
		{"GET", "/tile/entries/001.p/44", 200, octets, immutable, 0, ""},
		{"GET", "/tile/0/001", 404, "", "no-store", 0, "beyond the tree"},
		{"GET", "/tile/0/001.p/45", 404, "", "no-store", 0, "beyond the tree"},
		{"GET", "/tile/0/x001/000", 404, "", "no-store", 0, "beyond the tree"},
		{"GET", "/tile/2/000.p/1", 404, "", "no-store", 0, "beyond the tree"},
		{"GET", "/tile/entries/002", 404, "", "no-store", 0, "beyond the tree"},
		{"GET", "/tile/0/x018/x446/x744/x073/x709/x551/615", 404, "", "no-store", 0, "beyond the tree"},
		{"GET", "/tile/0/000.p/0", 400, "", "no-store", 0, "not a tlog-tiles path"},
		{"GET", "/tile/0/000.p/256", 400, "", "no-store", 0, "not a tlog-tiles path"},
		{"GET", "/tile/0/000.p/01", 400, "", "no-store", 0, "not a tlog-tiles path"},
		{"GET", "/tile/0/x000/001", 400, "", "no-store", 0, "not a tlog-tiles path"},
		{"GET", "/tile/0/01", 400, "", "no-store", 0, "not a tlog-tiles path"},
		{"GET", "/tile/0/0001", 400, "", "no-store", 0, "not a tlog-tiles path"},
		{"GET", "/tile/00/000", 400, "", "no-store", 0, "not a tlog-tiles path"},
		{"GET", "/tile/64/000", 400, "", "no-store", 0, "not a tlog-tiles path"},
		{"GET", "/tile/data/000", 400, "", "no-store", 0, "not a tlog-tiles path"},
		{"GET", "/tile/8/0/000", 400, "", "no-store", 0, "not a tlog-tiles path"}, // x/mod's own path format
		{"GET", "/tile/0/x018/x446/x744/x073/x709/x551/616", 400, "", "no-store", 0, "not a tlog-tiles path"},
		{"GET", "/tile/", 400, "", "no-store", 0, "not a tlog-tiles path"},
		{"POST", "/tile/0/000", 405, "", "no-store", 0, "use GET"},
		{"PUT", "/tile/0/000", 405, "", "no-store", 0, "use GET"},
		{"DELETE", "/tile/entries/000", 405, "", "no-store", 0, "use GET"},
		{"POST", "/checkpoint", 405, "", "no-store", 0, "use GET"},
	} {
		req, err := http.NewRequest(c.method, s.url+c.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		name := c.method + " " + c.path
		switch h := resp.Header; {
		case resp.StatusCode != c.code:
			t.Errorf("%s: %s %q, want %d", name, resp.Status, body, c.code)
		case c.ctype != "" && h.Get("Content-Type") != c.ctype:
			t.Errorf("%s: Content-Type %q, want %q", name, h.Get("Content-Type"), c.ctype)
		case h.Get("Cache-Control") != c.cache:
			t.Errorf("%s: Cache-Control %q, want %q", name, h.Get("Cache-Control"), c.cache)
		case c.len != 0 && len(body) != c.len:
			t.Errorf("%s: %d bytes, want %d", name, len(body), c.len)
		case c.method == "HEAD" && (len(body) != 0 || resp.ContentLength != 8192):
			t.Errorf("%s: %d bytes of body, Content-Length %d; want none and 8192", name, len(body), resp.ContentLength)
		case !strings.Contains(string(body), c.says):
			t.Errorf("%s: %q does not say %q", name, body, c.says)
		case resp.StatusCode == 405 && h.Get("Allow") != "GET, HEAD":
			t.Errorf("%s: Allow %q, want \"GET, HEAD\"", name, h.Get("Allow"))
		}
	}
	// Entry bundles are gzipped for a client that accepts it, and are the
	// same bytes once decompressed.
	plain := getWith(t, s.url+"/tile/entries/000", "identity")
	zipped := getWith(t, s.url+"/tile/entries/000", "gzip")
	if plain.enc != "" || zipped.enc != "gzip" || zipped.vary != "Accept-Encoding" {
		t.Errorf("Content-Encoding %q for identity, %q (Vary %q) for gzip; want none, and gzip with Vary: Accept-Encoding", plain.enc, zipped.enc, zipped.vary)
	}
	zr, err := gzip.NewReader(bytes.NewReader(zipped.body))
	if err != nil {
		t.Fatal(err)
	}
	unzipped, err := io.ReadAll(zr)
	if err != nil || !bytes.Equal(unzipped, plain.body) || len(zipped.body) >= len(plain.body)/2 {
		t.Errorf("the gzipped bundle (%d bytes) unzips to %d bytes (%v), want the %d-byte bundle, in less than half", len(zipped.body), len(unzipped), err, len(plain.body))
	}
	if out := s.output(); strings.Contains(out, "panic") || strings.Contains(out, "level=ERROR") {
		t.Errorf("the server logged:\n%s", out)
	}
}

type answer struct {
	body      []byte
	enc, vary string
}

// getWith GETs url with Accept-Encoding enc, which the transport then
// leaves to the caller to decode.
func getWith(t *testing.T, url, enc string) answer {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept-Encoding", enc)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s (%v)", url, resp.Status, err)
	}
	return answer{b, resp.Header.Get("Content-Encoding"), resp.Header.Get("Vary")}
}

// TestTilesAuth: the tiles API is open like the read RPCs, unless
// --auth-reads, when it needs a token like them.
func TestTilesAuth(t *testing.T) {
	t.Parallel()
	w := newLedgerWorld(t)
	const token = "tiles-e2e-token-0123456789abcdef"
	tokens := filepath.Join(w.dir, "tokens")
	if err := os.WriteFile(tokens, []byte("auditor "+token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	get := func(url, tok string) (int, string) {
		req, _ := http.NewRequest("GET", url, nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	open := w.serve("--token-file", tokens)
	if code, body := get(open.url+"/checkpoint", ""); code != 200 {
		t.Errorf("GET /checkpoint without --auth-reads, no token: %d %s, want 200", code, body)
	}
	open.stop(syscall.SIGTERM)
	closed := w.serve("--token-file", tokens, "--auth-reads")
	for _, p := range []string{"/checkpoint", "/tile/0/000.p/1", "/tile/entries/000"} {
		if code, body := get(closed.url+p, ""); code != 401 || !strings.Contains(body, p+" requires authentication") {
			t.Errorf("GET %s with --auth-reads, no token: %d %q, want 401 saying it requires authentication", p, code, body)
		}
		if code, body := get(closed.url+p, "wrong-token-0123456789"); code != 401 {
			t.Errorf("GET %s with --auth-reads, a wrong token: %d %q, want 401", p, code, body)
		}
	}
	if code, body := get(closed.url+"/checkpoint", token); code != 200 {
		t.Errorf("GET /checkpoint with --auth-reads and the token: %d %s, want 200", code, body)
	}
}

// treeFiles returns the files under dir by path, with their contents.
func treeFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		rel, _ := filepath.Rel(dir, path)
		files[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// flipped returns the file at path with the low bit of byte off flipped.
func flipped(t *testing.T, path string, off int) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[off] ^= 1
	return b
}
