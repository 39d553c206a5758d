package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/bankdoor/bankdoor/ledger/tiles"
)

// maxTileBytes bounds one answer of a tlog-tiles server: a full entry
// bundle of receipts of at most 16 KiB is about 4 MiB; a bundle can be
// no larger than 256 entries of 65,537 bytes.
const maxTileBytes = tiles.Width * (2 + tiles.MaxEntry)

// tileSource is the log export --tiles copies.
type tileSource interface {
	Checkpoint() ([]byte, error)
	// Tiles returns how to read the tiles of tree, the tree of a
	// checkpoint that verified.
	Tiles(tree tlog.Tree) func(tiles.Tile) ([]byte, error)
}

// storedTiles reads an embedded ledger's file: its stored hashes.
type storedTiles struct{ cosignedLog }

func (s storedTiles) Tiles(tree tlog.Tree) func(tiles.Tile) ([]byte, error) {
	return func(t tiles.Tile) ([]byte, error) { return tiles.Read(s.Log, t, uint64(tree.N)) }
}

// exportTiles writes a log as tlog-tiles static files (package tiles):
// its checkpoint, checked with the keys, and every tile and entry bundle
// of its tree. From an embedded ledger's file (--ledger-db) they are read
// from its stored hashes; from a ledger server or any tlog-tiles log
// (--ledger URL), from its tiles API, each tile verified against the
// checkpoint by x/mod's tlog and each bundle against its tile before it
// is written.
func exportTiles(e *env, remote *remoteFlags, db, keyFile string, pol *policyFlags, dir string, bundleFlags bool) int {
	if bundleFlags {
		return exitErr(e, exitUsage, hint(errors.New("--tiles exports the whole log, not one agent's bundle: --key-id and --out do not go with it"),
			"drop --key-id and --out, or drop --tiles"))
	}
	if err := checkExportFlags(remote, db, keyFile); err != nil {
		return exitErr(e, exitUsage, err)
	}
	var src tileSource
	var open func() error
	if remote.url != "" {
		m, err := newTileMirror(remote)
		if err != nil {
			return exitErr(e, exitUsage, err)
		}
		src = m
	} else {
		es, err := exportSource(remote, db, keyFile, pol)
		if err != nil {
			return exitErr(e, exitUsage, err)
		}
		defer func() { es.close() }()
		open = func() error {
			err := es.open()
			src = storedTiles{es.log}
			return err
		}
	}
	p, err := pol.policy() // with --ledger-db, exportSource set the log key
	if err != nil {
		return exitErr(e, exitUsage, err)
	}
	if err := checkOut("tiles", dir); err != nil {
		return exitErr(e, exitFailure, err)
	}
	if open != nil {
		if err := open(); err != nil {
			return exitErr(e, exitFailure, err)
		}
	}
	cp, err := src.Checkpoint()
	if err != nil {
		return exitErr(e, exitFailure, fmt.Errorf("the ledger's checkpoint: %w", err))
	}
	v, err := p.Verify(cp)
	if err != nil {
		return exitErr(e, exitFailure, exportHint(fmt.Errorf("the ledger's checkpoint: %w", err), db))
	}
	if err := writable(dir); err != nil {
		return exitErr(e, exitFailure, hint(fmt.Errorf("--tiles %s: %w", dir, err), "give --tiles a directory this user can create and write"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), exportTimeout)
	defer cancel()
	tree := tlog.Tree{N: int64(v.Size), Hash: tlog.Hash(v.Hash)}
	n, err := tiles.Export(ctx, dir, src.Tiles(tree), cp, v.Size)
	if err != nil {
		return exitErr(e, exitFailure, hint(fmt.Errorf("--tiles %s: %w", dir, err),
			"%s holds no checkpoint, so no client will read it: remove it and export again", dir))
	}
	fmt.Fprintf(e.stdout, "%s: the checkpoint of %s at size %d and its %d tiles and entry bundles (c2sp.org/tlog-tiles); serve the directory with any web server\n",
		dir, v.Origin, v.Size, n)
	return exitOK
}

// writable makes dir if need be and checks that a file can be made in
// it, so that an export that cannot be written fails before its first
// tile, not after.
func writable(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".bankdoor-write-check-*")
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(f.Name())
}

// tileMirror reads a tlog-tiles log over HTTP: a ledger server's tiles
// API, or a static copy of one.
type tileMirror struct {
	base  string // the log's prefix, without a trailing slash
	http  *http.Client
	token string // bearer token, if any

	mu    sync.Mutex
	saved map[tlog.Tile][]byte // tiles x/mod has verified
}

func newTileMirror(f *remoteFlags) (*tileMirror, error) {
	u, hc, token, err := f.endpoint()
	if err != nil {
		return nil, err
	}
	return &tileMirror{base: strings.TrimSuffix(u.String(), "/"), http: hc, token: token, saved: map[tlog.Tile][]byte{}}, nil
}

func (m *tileMirror) Checkpoint() ([]byte, error) { return m.get("checkpoint") }

// get fetches path under the log's prefix.
func (m *tileMirror) get(path string) ([]byte, error) {
	req, err := http.NewRequest(http.MethodGet, m.base+"/"+path, nil)
	if err != nil {
		return nil, err
	}
	if m.token != "" {
		req.Header.Set("Authorization", "Bearer "+m.token)
	}
	resp, err := m.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxTileBytes+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("GET /%s: %w", path, err)
	case resp.StatusCode == http.StatusUnauthorized:
		return nil, hint(fmt.Errorf("GET /%s: %s", path, resp.Status), "set an environment variable to a bearer token the ledger accepts and name it with --ledger-token-env VAR")
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("GET /%s: %s: %s", path, resp.Status, strings.TrimSpace(string(b[:min(len(b), 200)])))
	case len(b) > maxTileBytes:
		return nil, fmt.Errorf("GET /%s: more than %d bytes, larger than any tile", path, maxTileBytes)
	}
	return b, nil
}

// Height, ReadTiles and SaveTiles make the mirror x/mod's tlog.TileReader.
func (m *tileMirror) Height() int { return tiles.Height }

func (m *tileMirror) ReadTiles(ts []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(ts))
	for i, t := range ts {
		m.mu.Lock()
		b, ok := m.saved[t]
		m.mu.Unlock()
		if !ok {
			var err error
			if b, err = m.get(tiles.Tile{Level: t.L, N: uint64(t.N), W: t.W}.Path()); err != nil {
				return nil, err
			}
		}
		out[i] = b
	}
	return out, nil
}

func (m *tileMirror) SaveTiles(ts []tlog.Tile, data [][]byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, t := range ts {
		m.saved[t] = data[i]
	}
}

// Tiles reads each tile through x/mod's TileHashReader, which verifies
// it against tree's root, and each entry bundle's entries against the
// leaf hashes of its verified level 0 tile.
func (m *tileMirror) Tiles(tree tlog.Tree) func(tiles.Tile) ([]byte, error) {
	hr := tlog.TileHashReader(tree, m)
	return func(t tiles.Tile) ([]byte, error) {
		xt := tlog.Tile{H: tiles.Height, L: t.Level, N: int64(t.N), W: t.W}
		b, err := tlog.ReadTileData(xt, hr)
		if err != nil || !t.Entries {
			return b, tileErr(t, err)
		}
		leaves := b
		if b, err = m.get(t.Path()); err != nil {
			return nil, err
		}
		entries, err := tiles.ParseBundle(b, t.W)
		if err != nil {
			return nil, tileErr(t, err)
		}
		for i, e := range entries {
			if h := tlog.RecordHash(e); string(h[:]) != string(leaves[i*tiles.HashSize:(i+1)*tiles.HashSize]) {
				return nil, fmt.Errorf("%s from %s: entry %d does not hash to its leaf in the verified tile: the log served a wrong entry", t.Path(), m, i)
			}
		}
		return b, nil
	}
}

// tileErr says which tile err is about and that it failed verification.
func tileErr(t tiles.Tile, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s does not verify against the checkpoint: %w", t.Path(), err)
}

// String keeps a password the URL may hold out of messages.
func (m *tileMirror) String() string {
	u, err := url.Parse(m.base)
	if err != nil {
		return "the ledger"
	}
	return u.Redacted()
}
