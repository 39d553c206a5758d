package station_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/bankdoor/bankdoor/internal/agentchain"
	"github.com/bankdoor/bankdoor/internal/agentkey"
	"github.com/bankdoor/bankdoor/internal/flock"
	"github.com/bankdoor/bankdoor/ledger"
	"github.com/bankdoor/bankdoor/ledger/receipt"
	"github.com/bankdoor/bankdoor/ledger/spool"
	"github.com/bankdoor/bankdoor/ledger/station"
)

const origin = "station.test/ledger"

// logKey makes a log key for origin.
func logKey(t *testing.T) note.Signer {
	t.Helper()
	skey, _, err := ledger.GenerateKey(origin)
	if err != nil {
		t.Fatal(err)
	}
	s, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// embedded is a Config for the embedded ledger db, signed with signer,
// of the receipts directory receipts, polling fast.
func embedded(receipts, db string, signer note.Signer, chains func() ([]station.Chain, error)) station.Config {
	return station.Config{
		Receipts: receipts, Chains: chains,
		Embedded: &station.Embedded{Path: db, Options: ledger.Options{Origin: origin, Signer: signer}},
		Takeover: 5 * time.Millisecond, Poll: 5 * time.Millisecond,
	}
}

// oneChain returns a receipts directory and its embedded ledger's file,
// an agent and a log key.
func oneChain(t *testing.T) (receipts, db string, a *agentchain.Agent, signer note.Signer) {
	t.Helper()
	receipts = filepath.Join(t.TempDir(), "receipts")
	a, err := agentchain.Generate()
	if err != nil {
		t.Fatal(err)
	}
	return receipts, filepath.Join(receipts, ".ledger.db"), a, logKey(t)
}

// start opens and starts a station that writes the chain of key in dir.
func start(t *testing.T, cfg station.Config, dir string, key ed25519.PrivateKey) (*station.Station, *receipt.Writer, func()) {
	t.Helper()
	st, err := station.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	w, written, err := st.Chain(dir, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Start(); err != nil {
		t.Fatal(err)
	}
	return st, w, written
}

// deny writes n receipts through w, calling written after each.
func deny(t *testing.T, w *receipt.Writer, written func(), n int) {
	t.Helper()
	for range n {
		r := &receipt.Receipt{V: 1, Decision: receipt.Deny, Server: "bank", Tool: "transfer", Rule: "name.write_word",
			Reason: "test", ArgNames: []string{}, ArgsSHA256: strings.Repeat("0", 64), PolicyID: "p", PolicySHA256: strings.Repeat("0", 64)}
		if _, _, err := w.Write(r); err != nil {
			t.Error(err)
			return
		}
		written()
	}
}

// waitFor waits up to 10 s for cond to hold.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// checkLedger opens the ledger file db and checks that it holds exactly
// the receipts 1..n of each chain dir, each once, in seq order per chain.
func checkLedger(t *testing.T, db string, signer note.Signer, chains map[string]int) {
	t.Helper()
	keys := &ledger.AgentKeys{}
	l, err := ledger.Open(db, ledger.Options{Origin: origin, Signer: signer, Agents: keys})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	total := 0
	for _, n := range chains {
		total += n
	}
	if l.Size() != uint64(total) {
		t.Errorf("ledger size %d; want %d", l.Size(), total)
	}
	entries, err := l.Entries(0, uint64(total))
	if err != nil {
		t.Fatal(err)
	}
	in := map[[32]byte]int{}
	for _, e := range entries {
		in[receipt.Hash(e)]++
	}
	for dir, n := range chains {
		for seq := 1; seq <= n; seq++ {
			b, err := os.ReadFile(filepath.Join(dir, receipt.FileName(uint64(seq))))
			if err != nil {
				t.Fatal(err)
			}
			if c := in[receipt.Hash(b)]; c != 1 {
				t.Errorf("%s seq %d is in the ledger %d times; want once", dir, seq, c)
			}
		}
	}
}

// TestHolderAndStandby: of two stations on one receipts directory and one
// embedded ledger, one holds the ledger and ships what both write; when it
// closes, the other takes over and ships the rest, from the ledger's head.
func TestHolderAndStandby(t *testing.T) {
	t.Parallel()
	receipts, db, a, signer := oneChain(t)
	cfg := embedded(receipts, db, signer, nil)
	s1, w1, n1 := start(t, cfg, receipts, a.Key)
	s2, w2, n2 := start(t, cfg, receipts, a.Key)
	if !s1.Holding() || s2.Holding() {
		t.Fatalf("Holding: first %v, second %v; want the first only", s1.Holding(), s2.Holding())
	}
	var wg sync.WaitGroup
	wg.Go(func() { deny(t, w1, n1, 50) })
	wg.Go(func() { deny(t, w2, n2, 50) })
	wg.Wait()
	if err := s1.Close(); err != nil {
		t.Errorf("Close of the holder: %v", err)
	}
	waitFor(t, "the standby did not take over", s2.Holding)
	deny(t, w2, n2, 10)
	if err := s2.Close(); err != nil {
		t.Errorf("Close of the new holder: %v", err)
	}
	checkLedger(t, db, signer, map[string]int{receipts: 110})
}

// TestHolderShipsOtherChains: the holder ships the chains Config.Chains
// lists (another process's gateway agents) and enrolls their keys.
func TestHolderShipsOtherChains(t *testing.T) {
	t.Parallel()
	home, receipts := t.TempDir(), filepath.Join(t.TempDir(), "receipts")
	db := filepath.Join(receipts, ".ledger.db")
	own, alice := mustKey(t, home), mustKey(t, filepath.Join(home, "agents", "alice"))
	mustKey(t, filepath.Join(home, "agents", "bob")) // no receipts directory: no chain
	signer := logKey(t)
	chains := station.HomeChains(receipts, home)
	holder, w, n := start(t, embedded(receipts, db, signer, chains), receipts, own)
	gateway, wa, na := start(t, embedded(receipts, db, signer, chains), filepath.Join(receipts, "alice"), alice)
	if !holder.Holding() || gateway.Holding() {
		t.Fatal("the first station does not hold the ledger")
	}
	deny(t, w, n, 3)
	deny(t, wa, na, 4)
	gateway.Close()
	holder.Close()
	checkLedger(t, db, signer, map[string]int{receipts: 3, filepath.Join(receipts, "alice"): 4})

	got, err := chains()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{receipts: agentkey.KeyID(own.Public().(ed25519.PublicKey)),
		filepath.Join(receipts, "alice"): agentkey.KeyID(alice.Public().(ed25519.PublicKey))}
	if len(got) != len(want) {
		t.Errorf("HomeChains = %d chains; want %d", len(got), len(want))
	}
	for _, c := range got {
		if want[c.Dir] != agentkey.KeyID(c.Pub) {
			t.Errorf("HomeChains lists %s with key_id %s; want %q", c.Dir, agentkey.KeyID(c.Pub), want[c.Dir])
		}
	}
}

// mustKey saves a new agent key in dir.
func mustKey(t *testing.T, dir string) ed25519.PrivateKey {
	t.Helper()
	a, err := agentchain.Generate()
	if err != nil {
		t.Fatal(err)
	}
	if err := agentkey.Save(dir, a.Key, false); err != nil {
		t.Fatal(err)
	}
	return a.Key
}

// TestOtherLogRefused: Open refuses a ledger file of another log key,
// creating nothing, and says which key made it.
func TestOtherLogRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	receipts, db := filepath.Join(dir, "receipts"), filepath.Join(dir, "ledger.db")
	a, err := agentchain.Generate()
	if err != nil {
		t.Fatal(err)
	}
	first := logKey(t)
	s, _, _ := start(t, embedded(receipts, db, first, nil), receipts, a.Key)
	s.Close()
	other := logKey(t)
	_, err = station.Open(embedded(filepath.Join(dir, "new"), db, other, nil))
	if !errors.Is(err, ledger.ErrOtherLog) || !strings.Contains(err.Error(), fmt.Sprintf("%s+%08x", origin, first.KeyHash())) {
		t.Errorf("Open on another log's file = %v; want ErrOtherLog naming %s+%08x", err, origin, first.KeyHash())
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open created the receipts directory: %v", err)
	}
}

// TestRemoteShipLock: with a remote ledger, one station at a time ships
// the directory, holding its ship lock; the next one takes over.
func TestRemoteShipLock(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	receipts := filepath.Join(dir, "receipts")
	a, err := agentchain.Generate()
	if err != nil {
		t.Fatal(err)
	}
	signer := logKey(t)
	keys := &ledger.AgentKeys{}
	keys.Enroll(a.Public())
	l, err := ledger.Open(filepath.Join(dir, "remote.db"), ledger.Options{Origin: origin, Signer: signer, Agents: keys})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cfg := station.Config{Receipts: receipts, Remote: spool.Embedded{Log: l}, RemoteName: "remote", Takeover: 5 * time.Millisecond, Poll: 5 * time.Millisecond}
	s1, w1, n1 := start(t, cfg, receipts, a.Key)
	s2, w2, n2 := start(t, cfg, receipts, a.Key)
	if !s1.Holding() || s2.Holding() {
		t.Fatalf("Holding: first %v, second %v; want the first only", s1.Holding(), s2.Holding())
	}
	deny(t, w1, n1, 5)
	deny(t, w2, n2, 5)
	s1.Close()
	waitFor(t, "the standby did not take over", s2.Holding)
	deny(t, w2, n2, 5)
	s2.Close()
	// The last shipper's Append may have given up at Close while its batch
	// was committing: the ledger's Close waits for the commit.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if l, err = ledger.Open(filepath.Join(dir, "remote.db"), ledger.Options{Origin: origin, Signer: signer, Agents: keys}); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if h, ok, err := l.Head(context.Background(), a.KeyID); err != nil || !ok || h.Seq != 15 || l.Size() != 15 {
		t.Errorf("remote ledger head %+v, %v, %v, size %d; want seq 15, size 15", h, ok, err, l.Size())
	}
}

// TestHolderCloseShipsNewChains: a chain that another process's gateway
// started since the holder last looked is shipped by the holder's Close,
// not left for a next holder that may never come. The holder here never
// looks on its own (Poll of an hour).
func TestHolderCloseShipsNewChains(t *testing.T) {
	t.Parallel()
	home, receipts := t.TempDir(), filepath.Join(t.TempDir(), "receipts")
	db := filepath.Join(receipts, ".ledger.db")
	own, alice := mustKey(t, home), mustKey(t, filepath.Join(home, "agents", "alice"))
	signer := logKey(t)
	cfg := embedded(receipts, db, signer, station.HomeChains(receipts, home))
	cfg.Poll = time.Hour
	holder, w, n := start(t, cfg, receipts, own)
	gateway, wa, na := start(t, cfg, filepath.Join(receipts, "alice"), alice)
	if !holder.Holding() || gateway.Holding() {
		t.Fatal("the first station does not hold the ledger")
	}
	deny(t, w, n, 2)
	deny(t, wa, na, 3)
	if err := gateway.Close(); err != nil {
		t.Errorf("Close of the standby: %v", err)
	}
	if err := holder.Close(); err != nil {
		t.Errorf("Close of the holder: %v", err)
	}
	checkLedger(t, db, signer, map[string]int{receipts: 2, filepath.Join(receipts, "alice"): 3})
}

// TestStandbyCloseShips: a standby that stops before it ever tried to take
// over still ships, as it stops, what it wrote after the holder stopped:
// the last proxy to stop leaves nothing unshipped.
func TestStandbyCloseShips(t *testing.T) {
	t.Parallel()
	receipts, db, a, signer := oneChain(t)
	cfg := embedded(receipts, db, signer, nil)
	cfg.Takeover = time.Hour // it never takes over while running
	s1, w1, n1 := start(t, cfg, receipts, a.Key)
	s2, w2, n2 := start(t, cfg, receipts, a.Key)
	deny(t, w1, n1, 3)
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	deny(t, w2, n2, 4)
	if s2.Holding() {
		t.Fatal("the standby took over while running; the test needs it not to")
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	checkLedger(t, db, signer, map[string]int{receipts: 7})
}

// syncBuffer is a log sink safe for the station's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestLedgerHeldElsewhere: while a process that ships nothing (here the
// test, holding the flock on the embedded ledger's file, as bbolt takes
// it) holds the ledger, the standby says so once in its log, reports the
// lapse (Lapsed) and counts the receipts written meanwhile (Backlog);
// once the file is free it takes over and ships them.
func TestLedgerHeldElsewhere(t *testing.T) {
	t.Parallel()
	receipts, db, a, signer := oneChain(t)
	if err := os.MkdirAll(receipts, 0o700); err != nil {
		t.Fatal(err)
	}
	held, err := flock.TryLock(db)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	var logs syncBuffer
	cfg := embedded(receipts, db, signer, nil)
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	st, w, written := start(t, cfg, receipts, a.Key)
	deny(t, w, written, 2)
	waitFor(t, "the standby reports the lapse", st.Lapsed)
	if b := st.Backlog(); b[a.KeyID] != 2 {
		t.Errorf("Backlog during the lapse = %v; want 2 receipts of %s", b, a.KeyID)
	}
	lapse := "holds the ledger file and ships nothing"
	if !strings.Contains(logs.String(), db) || runtime.GOOS == "linux" && !strings.Contains(logs.String(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Errorf("the lapse's log does not name the file %s and its holder, pid %d:\n%s", db, os.Getpid(), logs.String())
	}
	held.Close()
	waitFor(t, "the standby takes over", st.Holding)
	if st.Lapsed() {
		t.Error("Lapsed after the takeover")
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	checkLedger(t, db, signer, map[string]int{receipts: 2})
	if n := strings.Count(logs.String(), lapse); n != 1 {
		t.Errorf("the lapse was logged %d times; want once:\n%s", n, logs.String())
	}
}
