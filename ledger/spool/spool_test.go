package spool_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/bankdoor/bankdoor/internal/agentkey"
	"github.com/bankdoor/bankdoor/ledger/receipt"
	"github.com/bankdoor/bankdoor/ledger/spool"
	"github.com/bankdoor/bankdoor/proxy"
)

func keyID(pub ed25519.PublicKey) string { return agentkey.KeyID(pub) }

// chain is a real receipts directory with a real key and writer.
type chain struct {
	t   testing.TB
	dir string
	key ed25519.PrivateKey
	w   *receipt.Writer
}

func newChain(t *testing.T) *chain { return newChainTB(t) }

func newChainTB(t testing.TB) *chain {
	t.Helper()
	_, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	return openChain(t, filepath.Join(t.TempDir(), "receipts"), key)
}

func openChain(t testing.TB, dir string, key ed25519.PrivateKey) *chain {
	t.Helper()
	w, err := receipt.OpenWriter(dir, key)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return &chain{t: t, dir: dir, key: key, w: w}
}

func (c *chain) pub() ed25519.PublicKey { return c.key.Public().(ed25519.PublicKey) }

// write writes n deny receipts.
func (c *chain) write(n int) {
	c.t.Helper()
	for range n {
		if _, _, err := c.w.Write(denyReceipt()); err != nil {
			c.t.Fatal(err)
		}
	}
}

func denyReceipt() *receipt.Receipt {
	return &receipt.Receipt{
		Decision: receipt.Deny, Server: "bank", Tool: "transfer", Rule: "name.write_word", Reason: "test",
		ArgNames: []string{}, ArgsSHA256: strings.Repeat("a", 64), PolicyID: "p", PolicySHA256: strings.Repeat("b", 64),
	}
}

// shipper returns a Shipper for c with fast timings, logging to log if
// it is not nil.
func (c *chain) shipper(l spool.Appender, log *bytes.Buffer, tweak ...func(*spool.Config)) *spool.Shipper {
	c.t.Helper()
	cfg := spool.Config{
		Dir: c.dir, KeyID: keyID(c.pub()), Ledger: l,
		MinBackoff: time.Millisecond, MaxBackoff: 20 * time.Millisecond,
		Poll: time.Hour, FinalTimeout: 2 * time.Second,
	}
	if log != nil {
		cfg.Logger = slog.New(slog.NewTextHandler(&lockedWriter{w: log}, nil))
	}
	for _, f := range tweak {
		f(&cfg)
	}
	s, err := spool.New(cfg)
	if err != nil {
		c.t.Fatal(err)
	}
	return s
}

type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func seqs(n int) []uint64 {
	var out []uint64
	for i := 1; i <= n; i++ {
		out = append(out, uint64(i))
	}
	return out
}

func TestSyncShipsInOrderInBatches(t *testing.T) {
	for _, tc := range []struct {
		name               string
		receipts, maxBatch int
		maxBytes           int
		wantAppends        int
	}{
		{"none", 0, 3, 0, 0},
		{"one batch", 3, 3, 0, 1},
		{"batches by count", 10, 3, 0, 4},
		{"batches by bytes", 4, 100, 1, 4}, // each receipt is over 1 byte: one per batch
		{"default batch", 70, 0, 0, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newChain(t)
			l := newMemLedger(c.pub())
			c.write(tc.receipts)
			s := c.shipper(l, nil, func(cfg *spool.Config) { cfg.MaxBatch, cfg.MaxBatchBytes = tc.maxBatch, tc.maxBytes })
			if err := s.Sync(context.Background()); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(seqs(tc.receipts), l.seqs()); diff != "" {
				t.Errorf("ledger seqs (-want +got):\n%s", diff)
			}
			if l.appends != tc.wantAppends {
				t.Errorf("%d Append calls, want %d", l.appends, tc.wantAppends)
			}
			if got := s.Shipped(); got != uint64(tc.receipts) {
				t.Errorf("Shipped() = %d, want %d", got, tc.receipts)
			}
		})
	}
}

// TestSkipsSubdirectories: another agent's chain in a subdirectory of the
// receipts directory (DIR/AGENT) is neither shipped with it nor in its
// way, and ships on its own.
func TestSkipsSubdirectories(t *testing.T) {
	c := newChain(t)
	_, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	sub := openChain(t, filepath.Join(c.dir, "agent-b"), key)
	sub.write(3)
	c.write(2)
	for _, tc := range []struct {
		c    *chain
		want int
	}{{c, 2}, {sub, 3}} {
		l := newMemLedger(tc.c.pub())
		if err := tc.c.shipper(l, nil).Sync(context.Background()); err != nil {
			t.Fatalf("%s: %v", tc.c.dir, err)
		}
		if diff := cmp.Diff(seqs(tc.want), l.seqs()); diff != "" {
			t.Errorf("%s: ledger seqs (-want +got):\n%s", tc.c.dir, diff)
		}
	}
}

func TestResumesFromLedgerHead(t *testing.T) {
	c := newChain(t)
	l := newMemLedger(c.pub())
	c.write(4)
	if err := c.shipper(l, nil).Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.write(5)
	before := l.appends
	s := c.shipper(l, nil, func(cfg *spool.Config) { cfg.MaxBatch = 100 })
	if err := s.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(seqs(9), l.seqs()); diff != "" {
		t.Errorf("ledger seqs (-want +got):\n%s", diff)
	}
	// One Append for receipts 5..9: had the new shipper started at seq 1,
	// the ledger would still hold each once, but it would take more calls.
	if got := l.appends - before; got != 1 {
		t.Errorf("the restarted shipper made %d Append calls, want 1 (seq 5..9)", got)
	}
}

// TestExactlyOnceAcrossRestarts interleaves writes, shippers that stop
// and start, and a batch whose answer is lost after the ledger stored it.
func TestExactlyOnceAcrossRestarts(t *testing.T) {
	c := newChain(t)
	l := newMemLedger(c.pub())
	total := 0
	for round := range 6 {
		n := round + 1
		c.write(n)
		total += n
		s := c.shipper(l, nil, func(cfg *spool.Config) { cfg.MaxBatch = 2 })
		if round%2 == 1 {
			l.loseReply = true
			if err := s.Sync(context.Background()); err == nil || errors.Is(err, spool.ErrRefused) {
				t.Fatalf("round %d: Sync with a lost reply = %v, want a retryable error", round, err)
			}
		}
		if err := s.Sync(context.Background()); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
	if diff := cmp.Diff(seqs(total), l.seqs()); diff != "" {
		t.Errorf("ledger seqs (-want +got):\n%s", diff)
	}
}

func TestLedgerDownThenUp(t *testing.T) {
	c := newChain(t)
	l := newMemLedger(c.pub())
	l.setDown(errors.New("connection refused"))
	var log bytes.Buffer
	s := c.shipper(l, &log)
	stop := run(t, s)
	for range 5 {
		c.write(1)
		s.Notify()
	}
	waitHeadCalls(t, l, 3) // several tries while the ledger is down
	if got := s.Shipped(); got != 0 {
		t.Fatalf("Shipped() = %d while the ledger is down", got)
	}
	l.setDown(nil)
	waitShipped(t, s, 5)
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if diff := cmp.Diff(seqs(5), l.seqs()); diff != "" {
		t.Errorf("ledger seqs (-want +got):\n%s", diff)
	}
	out := log.String()
	if n := strings.Count(out, "connection refused"); n != 1 {
		t.Errorf("the outage was logged %d times, want once:\n%s", n, out)
	}
	if !strings.Contains(out, "ledger reachable again") {
		t.Errorf("the recovery was not logged:\n%s", out)
	}
}

// TestRunPolls: receipts written without a Notify are shipped at the next
// poll.
func TestRunPolls(t *testing.T) {
	c := newChain(t)
	l := newMemLedger(c.pub())
	s := c.shipper(l, nil, func(cfg *spool.Config) { cfg.Poll = 5 * time.Millisecond })
	stop := run(t, s)
	waitSynced(t, l)
	c.write(3)
	waitShipped(t, s, 3)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// run starts s.Run and returns a function that stops it and returns its
// error.
func run(t *testing.T, s *spool.Shipper) func() error {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	stopped := false
	stop := func() error {
		cancel()
		if stopped {
			return nil
		}
		stopped = true
		select {
		case err := <-done:
			return err
		case <-time.After(30 * time.Second):
			t.Fatal("Run did not return after its context ended")
			return nil
		}
	}
	t.Cleanup(func() { stop() })
	return stop
}

func waitShipped(t *testing.T, s *spool.Shipper, seq uint64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for s.Shipped() < seq {
		if time.Now().After(deadline) {
			t.Fatalf("Shipped() = %d, want %d", s.Shipped(), seq)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestRefusalStopsTheChain: each case makes the ledger or the directory
// refuse; Sync must fail with ErrRefused, say what to do, log it once and
// never call Append again.
func TestRefusalStopsTheChain(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, c *chain) *memLedger
		want  string // in the error
	}{
		{"unknown key", func(t *testing.T, c *chain) *memLedger {
			c.write(2)
			return newMemLedger()
		}, "is not enrolled"},
		{"forked chain", func(t *testing.T, c *chain) *memLedger {
			// Another directory, same key: the ledger holds its seq 1..2.
			other := openChain(t, filepath.Join(t.TempDir(), "other"), c.key)
			other.write(2)
			l := newMemLedger(c.pub())
			if err := other.shipper(l, nil).Sync(context.Background()); err != nil {
				t.Fatal(err)
			}
			c.write(3)
			return l
		}, "forked"},
		{"ledger ahead of the directory", func(t *testing.T, c *chain) *memLedger {
			c.write(3)
			l := newMemLedger(c.pub())
			if err := c.shipper(l, nil).Sync(context.Background()); err != nil {
				t.Fatal(err)
			}
			c.w.Close()
			for _, seq := range []uint64{2, 3} {
				remove(t, c, seq)
			}
			return l
		}, "ends at seq 1"},
		{"damaged receipt", func(t *testing.T, c *chain) *memLedger {
			c.write(3)
			truncate(t, filepath.Join(c.dir, receipt.FileName(2)))
			return newMemLedger(c.pub())
		}, "000002.json"},
		{"missing first receipt", func(t *testing.T, c *chain) *memLedger {
			c.write(3)
			remove(t, c, 1)
			return newMemLedger(c.pub())
		}, "000001.json is missing"},
		{"missing receipt after the head", func(t *testing.T, c *chain) *memLedger {
			c.write(2)
			l := newMemLedger(c.pub())
			if err := c.shipper(l, nil).Sync(context.Background()); err != nil {
				t.Fatal(err)
			}
			c.write(4)
			remove(t, c, 5)
			return l
		}, "000005.json is missing"},
		{"another key's receipt", func(t *testing.T, c *chain) *memLedger {
			c.write(1)
			other := newChain(t)
			other.write(2)
			c.w.Close()
			b := readFile(t, filepath.Join(other.dir, receipt.FileName(2)))
			if err := os.WriteFile(filepath.Join(c.dir, receipt.FileName(2)), b, 0o600); err != nil {
				t.Fatal(err)
			}
			return newMemLedger(c.pub(), other.pub())
		}, "000002.json: it holds seq 2 of key_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newChain(t)
			l := tc.setup(t, c)
			var log bytes.Buffer
			s := c.shipper(l, &log)
			err := s.Sync(context.Background())
			if !errors.Is(err, spool.ErrRefused) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Sync = %v, want ErrRefused naming %q", err, tc.want)
			}
			appends, atRefusal := l.appends, l.seqs()
			for range 3 {
				if err2 := s.Sync(context.Background()); !errors.Is(err2, spool.ErrRefused) {
					t.Fatalf("Sync after a refusal = %v, want the refusal again", err2)
				}
			}
			if l.appends != appends {
				t.Errorf("Append was called %d more times after the refusal", l.appends-appends)
			}
			if n := strings.Count(log.String(), "STOPPED"); n != 1 {
				t.Errorf("the refusal was logged %d times, want once:\n%s", n, log.String())
			}
			if diff := cmp.Diff(atRefusal, l.seqs()); diff != "" {
				t.Errorf("the ledger changed after the refusal (-before +after):\n%s", diff)
			}
		})
	}
}

func remove(t *testing.T, c *chain, seq uint64) {
	t.Helper()
	if err := os.Remove(filepath.Join(c.dir, receipt.FileName(seq))); err != nil {
		t.Fatal(err)
	}
}

// truncate cuts the last byte (the closing brace) off a receipt file.
func truncate(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b[:len(b)-1], 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestRunReturnsRefusal(t *testing.T) {
	c := newChain(t)
	c.write(1)
	s := c.shipper(newMemLedger(), nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	cancel()
	if err := <-done; err != nil && !errors.Is(err, spool.ErrRefused) {
		t.Fatalf("Run = %v, want nil or ErrRefused", err)
	}
	if err := s.Sync(context.Background()); !errors.Is(err, spool.ErrRefused) {
		t.Fatalf("Sync = %v, want ErrRefused", err)
	}
}

// TestDenyPathNeverWaits records denials through the proxy's recorder
// while the ledger is stuck inside Append: every Record must return.
func TestDenyPathNeverWaits(t *testing.T) {
	c := newChain(t)
	l := newMemLedger(c.pub())
	l.gate, l.entered = make(chan struct{}), make(chan struct{}, 1)
	s := c.shipper(l, nil)
	stop := run(t, s)
	rec := &proxy.ReceiptRecorder{W: c.w, Server: "bank", PolicyID: "p", PolicySHA256: strings.Repeat("b", 64), Notify: s.Notify}
	record := func() {
		t.Helper()
		if _, err := rec.Record(proxy.Event{Decision: "deny", Tool: "transfer", Rule: "name.write_word", Reason: "r", ArgsSHA256: strings.Repeat("a", 64)}); err != nil {
			t.Fatal(err)
		}
	}
	record()
	<-l.entered // the shipper is now blocked inside Append

	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 20 {
			record()
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Record did not return while the ledger was blocked")
	}
	if got := s.Shipped(); got != 0 {
		t.Fatalf("Shipped() = %d while Append is blocked", got)
	}
	close(l.gate)
	waitShipped(t, s, 21)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(seqs(21), l.seqs()); diff != "" {
		t.Errorf("ledger seqs (-want +got):\n%s", diff)
	}
}

func TestFinalAttemptAtShutdown(t *testing.T) {
	t.Run("ships what is left", func(t *testing.T) {
		c := newChain(t)
		l := newMemLedger(c.pub())
		s := c.shipper(l, nil)
		stop := run(t, s)
		waitSynced(t, l)
		c.write(3) // no Notify, and Poll is an hour
		if err := stop(); err != nil {
			t.Fatalf("Run = %v", err)
		}
		if diff := cmp.Diff(seqs(3), l.seqs()); diff != "" {
			t.Errorf("ledger seqs (-want +got):\n%s", diff)
		}
	})
	t.Run("bounded when the ledger hangs", func(t *testing.T) {
		c := newChain(t)
		l := newMemLedger(c.pub())
		l.gate = make(chan struct{}) // never closed: Append hangs
		var log bytes.Buffer
		s := c.shipper(l, &log, func(cfg *spool.Config) { cfg.FinalTimeout = 50 * time.Millisecond })
		c.write(2)
		stop := run(t, s)
		if err := stop(); !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			t.Fatalf("Run = %v, want the final attempt's deadline", err)
		}
		if len(l.seqs()) != 0 {
			t.Fatal("the ledger stored receipts through a closed gate")
		}
		if !strings.Contains(log.String(), "seq 1..2 are not in the ledger yet") {
			t.Errorf("the unshipped receipts were not named:\n%s", log.String())
		}
	})
}

// waitSynced waits until the shipper has asked the ledger for its head.
func waitSynced(t *testing.T, l *memLedger) {
	t.Helper()
	waitHeadCalls(t, l, 1)
}

// waitHeadCalls waits until the shipper has asked the ledger for its head
// n times: while the ledger is down, each try asks.
func waitHeadCalls(t *testing.T, l *memLedger, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for l.headCalls() < n {
		if time.Now().After(deadline) {
			t.Fatalf("the shipper asked for the ledger's head %d times, want %d", l.headCalls(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	l := newMemLedger()
	for _, cfg := range []spool.Config{
		{KeyID: "0123456789abcdef", Ledger: l},
		{Dir: "d", KeyID: "0123456789abcdef"},
		{Dir: "d", KeyID: "short", Ledger: l},
		{Dir: "d", KeyID: "0123456789ABCDEF", Ledger: l},
	} {
		if _, err := spool.New(cfg); err == nil {
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
}

// TestBacklog: receipts the writer reports (Written) count in the backlog
// while the ledger is down, which is when an operator needs the figure,
// and the backlog drains to zero once the ledger has them.
func TestBacklog(t *testing.T) {
	c := newChain(t)
	l := newMemLedger(c.pub())
	l.setDown(errors.New("connection refused"))
	s := c.shipper(l, nil)
	if got := s.Backlog(); got != 0 {
		t.Fatalf("Backlog() = %d before anything was written", got)
	}
	stop := run(t, s)
	for i := range 4 {
		c.write(1)
		s.Written(uint64(i + 1))
	}
	if got := s.Backlog(); got != 4 {
		t.Errorf("Backlog() = %d while the ledger is down, want 4", got)
	}
	l.setDown(nil)
	waitShipped(t, s, 4)
	if got := s.Backlog(); got != 0 {
		t.Errorf("Backlog() = %d once shipped, want 0", got)
	}
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
}
