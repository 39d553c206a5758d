package tiles_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/bankdoor/bankdoor/internal/agentchain/chaintest"
	"github.com/bankdoor/bankdoor/ledger"
	"github.com/bankdoor/bankdoor/ledger/tiles"
)

// servedLog is a ledger as Handler serves it, its checkpoint as stored.
type servedLog struct{ *ledger.Log }

func (s servedLog) Checkpoint() ([]byte, error) { return s.Log.Checkpoint(), nil }

// httpTiles is x/mod's tlog.TileReader over a served log.
type httpTiles struct{ url string }

func (h httpTiles) Height() int { return tiles.Height }

func (h httpTiles) ReadTiles(ts []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(ts))
	for i, t := range ts {
		var err error
		if out[i], err = get(h.url + "/tile/" + strings.TrimPrefix(t.Path(), "tile/8/")); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (h httpTiles) SaveTiles([]tlog.Tile, [][]byte) {}

func get(url string) ([]byte, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s: %s", url, resp.Status, b)
	}
	return b, err
}

// TestServedWhileAppending: while receipts are appended, every
// checkpoint the handler serves has its tiles served too, and they hash
// to its root (x/mod's tlog reads and verifies them): a client never
// sees a checkpoint ahead of the tiles.
func TestServedWhileAppending(t *testing.T) {
	skey, vkey, err := ledger.GenerateKey(origin)
	if err != nil {
		t.Fatal(err)
	}
	signer, _ := note.NewSigner(skey)
	verifier, _ := note.NewVerifier(vkey)
	keys := &ledger.AgentKeys{}
	a := chaintest.Generate(t, time.Date(2026, 12, 4, 8, 0, 0, 0, time.UTC))
	keys.Enroll(a.Public())
	l, err := ledger.Open(filepath.Join(t.TempDir(), "ledger.db"), ledger.Options{Origin: origin, Signer: signer, Agents: keys})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	srv := httptest.NewServer(tiles.Handler(servedLog{l}, nil))
	defer srv.Close()

	batches := make([][][]byte, 30)
	for i := range batches {
		batches[i] = a.Chain(t, 37)
	}
	done := make(chan error, 1)
	go func() {
		for _, b := range batches {
			if _, err := l.Append(context.Background(), b); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	reads := 0
	for finished := false; !finished; reads++ {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			finished = true // one more read, of the last checkpoint
		default:
		}
		b, err := get(srv.URL + "/checkpoint")
		if err != nil {
			t.Fatal(err)
		}
		cp, _, _, err := log.ParseCheckpoint(b, origin, verifier)
		if err != nil {
			t.Fatal(err)
		}
		tree := tlog.Tree{N: int64(cp.Size), Hash: tlog.Hash(cp.Hash)}
		if root, err := tlog.TreeHash(tree.N, tlog.TileHashReader(tree, httpTiles{srv.URL})); err != nil || root != tree.Hash {
			t.Fatalf("checkpoint of size %d (read %d): the root from its served tiles is %v (%v)", cp.Size, reads, root, err)
		}
		if finished && cp.Size != 30*37 {
			t.Fatalf("last checkpoint of size %d, want %d", cp.Size, 30*37)
		}
	}
	t.Logf("%d checkpoints read and verified from their tiles while appending", reads)
}
