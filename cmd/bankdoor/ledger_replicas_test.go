package main_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/bankdoor/bankdoor/internal/pgtest"
	"github.com/bankdoor/bankdoor/ledger/receipt"
	"github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1/ledgerv1connect"
)

// runFailover sends every agent's chain as run does, each agent starting
// on servers[agent % len(servers)]; an Append that fails is sent again,
// the same request, to the next server, until one takes it (for at most a
// minute: a database restarting on a loaded machine takes seconds). Each
// failure is passed to failed (which must be safe for concurrent use).
// Once half of all receipts are acknowledged it closes half.
func (b *burst) runFailover(t *testing.T, servers []*ledgerServer, half chan<- struct{}, failed func(error)) {
	var wg sync.WaitGroup
	var once sync.Once
	all := int64(len(b.chains) * len(b.chains[0]))
	for i, chain := range b.chains {
		cs := make([]ledgerv1connect.LedgerServiceClient, len(servers))
		for k, s := range servers {
			cs[k] = s.client()
		}
		wg.Go(func() {
			at := i % len(cs)
			for j := 0; j < len(chain); j += b.batch {
				var tries, n int
				var failing time.Time // since the first failure of this request
				for {
					resp, err := cs[at].Append(t.Context(), appendRequest(chain[j:min(j+b.batch, len(chain))]...))
					if err == nil {
						for k, idx := range resp.Msg.Indexes {
							b.acked[i][j+k] = idx
						}
						b.next[i] = j + len(resp.Msg.Indexes)
						n = len(resp.Msg.Indexes)
						break
					}
					failed(err)
					if tries++; tries == 1 {
						failing = time.Now()
					}
					if time.Since(failing) > time.Minute || t.Context().Err() != nil {
						t.Errorf("agent %d, receipts %d..: %d attempts failed over %v, the last: %v", i, j, tries, time.Since(failing).Round(time.Millisecond), err)
						return
					}
					at = (at + 1) % len(cs)
					select { // a spool's backoff, shortened
					case <-time.After(10 * time.Millisecond):
					case <-t.Context().Done():
					}
				}
				if b.total.Add(int64(n))*2 >= all {
					once.Do(func() { close(half) })
				}
			}
		})
	}
	wg.Wait()
}

// errorCodes collects the Connect codes of failed Appends.
type errorCodes struct {
	mu    sync.Mutex
	codes map[string]int
	first map[string]string
}

func (e *errorCodes) add(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.codes == nil {
		e.codes, e.first = map[string]int{}, map[string]string{}
	}
	k := connectCode(err).String()
	if e.codes[k] == 0 {
		e.first[k] = err.Error()
	}
	e.codes[k]++
}

func (e *errorCodes) String() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var ks []string
	for k := range e.codes {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	var b strings.Builder
	for _, k := range ks {
		fmt.Fprintf(&b, "%s ×%d (first: %s); ", k, e.codes[k], e.first[k])
	}
	return b.String()
}

// TestLedgerReplicasKill: two ledger serve processes on one PostgreSQL
// database serve one log. Forks of one agent's chain sent to both at
// once: one is stored, the other answered FailedPrecondition. Then 8
// agents append through both; one server is killed (SIGKILL) in the
// middle of the burst; the agents go on through the other; every
// acknowledged receipt is in the log at its index, exactly once, fsck is
// clean, the proofs verify, and the survivor's checkpoint is signed by
// the log key.
func TestLedgerReplicasKill(t *testing.T) {
	t.Parallel()
	w := newPostgresLedgerWorld(t)
	forker := newChainAgent(t, w)
	b := newBurst(t, w, 8, 30, 2)
	servers := []*ledgerServer{w.serve(), w.serve()}

	// Two forks of seq 1, one to each server at the same moment.
	forks := [][]byte{forker.receipts(t, 1)[0], forkOf(t, forker)}
	var errs [2]error
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, s := range servers {
		c := s.client()
		wg.Go(func() {
			<-start
			_, errs[i] = c.Append(t.Context(), appendRequest(forks[i]))
		})
	}
	close(start)
	wg.Wait()
	if (errs[0] == nil) == (errs[1] == nil) || connectCode(errors.Join(errs[0], errs[1])) != connect.CodeFailedPrecondition {
		t.Fatalf("forks of one chain to two replicas at once: errors %v; want one stored and one FailedPrecondition", errs)
	}
	won := servers[0]
	if errs[0] != nil {
		won = servers[1]
	}
	before := checkpoint(t, w, won.client())

	var codes errorCodes
	half := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); b.runFailover(t, servers, half, codes.add) }()
	select {
	case <-half:
	case <-done:
		t.Fatalf("the burst ended before half of it was acknowledged")
	}
	if code := servers[0].stop(syscall.SIGKILL); code != -1 {
		t.Fatalf("ledger serve exited %d on SIGKILL, want death by signal", code)
	}
	<-done
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("failed appends while one replica was killed: %s", &codes)

	c := servers[1].client()
	b.checkAcked(t, c)
	cp := checkpoint(t, w, c)
	if cp.Size != 8*30+1 {
		t.Fatalf("the survivor's checkpoint has size %d, want %d", cp.Size, 8*30+1)
	}
	checkProofs(t, c, before, cp)
	w.fsck()
	if code := servers[1].stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("ledger serve exited %d on SIGTERM:\n%s", code, servers[1].output())
	}
}

// TestLedgerPostgresDown: the database of a ledger serve stops in the
// middle of a burst from 8 agents: appends fail with Unavailable (never
// Internal: the spools retry), the checkpoint is still served, and once
// the database is back the appends resume; nothing acknowledged is lost,
// every receipt is in the log exactly once. The test has a PostgreSQL
// server of its own.
func TestLedgerPostgresDown(t *testing.T) {
	t.Parallel()
	srv := pgtest.Private(t)
	w := newPostgresLedgerWorldOn(t, srv)
	b := newBurst(t, w, 8, 30, 2)
	s := w.serve()
	var codes errorCodes
	sawFailure := make(chan struct{})
	var once sync.Once
	failed := func(err error) {
		codes.add(err)
		once.Do(func() { close(sawFailure) })
	}
	half := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); b.runFailover(t, []*ledgerServer{s}, half, failed) }()
	<-half
	if err := srv.Down(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sawFailure:
	case <-done:
		t.Fatal("the burst ended while the database was down")
	}
	c := s.client()
	if cp := checkpoint(t, w, c); cp.Size == 0 {
		t.Errorf("checkpoint while the database is down has size 0")
	}
	if err := srv.Up(); err != nil {
		t.Fatal(err)
	}
	<-done
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("failed appends while the database was down: %s", &codes)
	for k := range codes.codes {
		if k != connect.CodeUnavailable.String() {
			t.Errorf("appends failed with %s, want only unavailable: %s", k, &codes)
		}
	}
	b.checkAcked(t, c)
	b.checkExactlyOnce(t, c)
	w.fsck()
	if code := s.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("ledger serve exited %d on SIGTERM:\n%s", code, s.output())
	}
}

// forkOf returns a receipt of a with seq 1 that is not its chain's first
// (another time).
func forkOf(t *testing.T, a *chainAgent) []byte {
	t.Helper()
	first, err := receipt.Parse(a.receipts(t, 1)[0])
	if err != nil {
		t.Fatal(err)
	}
	r := *first
	r.Time = r.Time.Add(time.Hour)
	b, err := receipt.Sign(&r, a.priv)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
