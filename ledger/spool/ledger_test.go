package spool_test

// The spool against the real ledger: a ledger.Log in a bbolt file, in
// process (Embedded) and behind the real Connect handler over HTTP/1.1
// (Remote).

import (
	"context"
	"crypto/ed25519"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/google/go-cmp/cmp"

	"github.com/bankdoor/bankdoor/internal/scratchlog"
	"github.com/bankdoor/bankdoor/ledger"
	"github.com/bankdoor/bankdoor/ledger/receipt"
	"github.com/bankdoor/bankdoor/ledger/rpc"
	"github.com/bankdoor/bankdoor/ledger/spool"
	"github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1/ledgerv1connect"
)

const testOrigin = "spool.test/ledger"

// enrolled is the set of agents with keys pubs.
func enrolled(pubs ...ed25519.PublicKey) *ledger.AgentKeys {
	keys := &ledger.AgentKeys{}
	for _, p := range pubs {
		keys.Enroll(p)
	}
	return keys
}

// newLog opens a new log with a new log key (package scratchlog),
// enrolling pubs; it is closed when the test ends.
func newLog(t testing.TB, pubs ...ed25519.PublicKey) *ledger.Log {
	t.Helper()
	l, err := scratchlog.Open(filepath.Join(t.TempDir(), "ledger.db"), ledger.Options{Origin: testOrigin, Agents: enrolled(pubs...)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l.Log
}

// checkLogHolds fails the test unless the log's entries are
// exactly the directory's receipts 1..n, in order.
func checkLogHolds(t *testing.T, l *ledger.Log, c *chain, n int) {
	t.Helper()
	entries, err := l.Entries(0, 1000)
	if err != nil && !errors.Is(err, ledger.ErrRange) {
		t.Fatal(err)
	}
	var want [][]byte
	for seq := 1; seq <= n; seq++ {
		want = append(want, readFile(t, filepath.Join(c.dir, receipt.FileName(uint64(seq)))))
	}
	if diff := cmp.Diff(want, entries); diff != "" {
		t.Errorf("log entries are not receipts 1..%d in order (-want +got):\n%s", n, diff)
	}
	h, ok, err := l.Head(context.Background(), keyID(c.pub()))
	if err != nil || (n > 0 && (!ok || h.Seq != uint64(n))) {
		t.Errorf("log head = %+v, %v, %v; want seq %d", h, ok, err, n)
	}
}

func TestEmbeddedLedger(t *testing.T) {
	c := newChain(t)
	// The log is reopened with its key, so this test keeps the key.
	skey, _, err := ledger.GenerateKey(testOrigin)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ledger.db")
	open := func() *ledger.Log {
		l, err := ledger.Open(path, ledger.Options{Origin: testOrigin, Signer: signer, Agents: enrolled(c.pub())})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	l := open()
	c.write(7)
	if err := c.shipper(spool.Embedded{Log: l}, nil, func(cfg *spool.Config) { cfg.MaxBatch = 3 }).Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkLogHolds(t, l, c, 7)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	// Restart: the log reopened, more receipts, a new shipper.
	l = open()
	defer l.Close()
	c.write(4)
	if err := c.shipper(spool.Embedded{Log: l}, nil).Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkLogHolds(t, l, c, 11)
}

func TestEmbeddedLedgerRefusesUnknownKey(t *testing.T) {
	c := newChain(t)
	l := newLog(t) // no agent enrolled
	c.write(2)
	err := c.shipper(spool.Embedded{Log: l}, nil).Sync(context.Background())
	if !errors.Is(err, spool.ErrRefused) || !errors.Is(err, ledger.ErrUnknownKey) {
		t.Fatalf("Sync = %v, want ErrRefused wrapping ledger.ErrUnknownKey", err)
	}
	checkLogHolds(t, l, c, 0)
}

// serve serves l with the real handler over HTTP/1.1 and returns a client.
func serve(t testing.TB, l *ledger.Log) (ledgerv1connect.LedgerServiceClient, string) {
	t.Helper()
	svc := rpc.New(l, nil)
	path, h := svc.Handler(nil)
	mux := httptestMux(path, h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return ledgerv1connect.NewLedgerServiceClient(srv.Client(), srv.URL), srv.URL
}

func TestRemoteLedger(t *testing.T) {
	c := newChain(t)
	l := newLog(t, c.pub())
	client, url := serve(t, l)
	remote := spool.Remote{Client: client, URL: url}
	c.write(5)
	if err := c.shipper(remote, nil, func(cfg *spool.Config) { cfg.MaxBatch = 2 }).Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.write(3)
	s := c.shipper(remote, nil)
	if err := s.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkLogHolds(t, l, c, 8)
	if s.Shipped() != 8 {
		t.Errorf("Shipped() = %d, want 8", s.Shipped())
	}
}

func TestRemoteLedgerRefusals(t *testing.T) {
	t.Run("unknown key", func(t *testing.T) {
		c := newChain(t)
		l := newLog(t)
		client, url := serve(t, l)
		c.write(1)
		err := c.shipper(spool.Remote{Client: client, URL: url}, nil).Sync(context.Background())
		if !errors.Is(err, spool.ErrRefused) {
			t.Fatalf("Sync = %v, want ErrRefused", err)
		}
		checkLogHolds(t, l, c, 0)
	})
	t.Run("not a ledger", func(t *testing.T) {
		srv := httptest.NewServer(httptestMux("/elsewhere/", nil))
		defer srv.Close()
		c := newChain(t)
		c.write(1)
		err := c.shipper(spool.Remote{Client: ledgerv1connect.NewLedgerServiceClient(srv.Client(), srv.URL), URL: srv.URL}, nil).
			Sync(context.Background())
		if !errors.Is(err, spool.ErrRefused) {
			t.Fatalf("Sync = %v, want ErrRefused", err)
		}
	})
	t.Run("unreachable is retried, not refused", func(t *testing.T) {
		srv := httptest.NewServer(nil)
		url := srv.URL
		srv.Close()
		c := newChain(t)
		c.write(1)
		err := c.shipper(spool.Remote{Client: ledgerv1connect.NewLedgerServiceClient(srv.Client(), url), URL: url}, nil).
			Sync(context.Background())
		if err == nil || errors.Is(err, spool.ErrRefused) {
			t.Fatalf("Sync = %v, want a retryable error", err)
		}
	})
}

func httptestMux(path string, h http.Handler) *http.ServeMux {
	mux := http.NewServeMux()
	if h != nil {
		mux.Handle(path, h)
	}
	return mux
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
