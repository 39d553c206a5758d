package main_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/bankdoor/bankdoor/ledger/receipt"
	ledgerv1 "github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1"
	"github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1/ledgerv1connect"
)

// burst is several agents appending their chains in batches, each
// recording which receipts the server acknowledged, and at what index.
type burst struct {
	chains [][][]byte
	batch  int
	acked  []map[int]uint64 // per agent: receipt position -> acknowledged index
	next   []int            // per agent: position of the first unacknowledged receipt
	total  atomic.Int64     // receipts acknowledged
}

func newBurst(t *testing.T, w *ledgerWorld, agents, perAgent, batch int) *burst {
	b := &burst{batch: batch, acked: make([]map[int]uint64, agents), next: make([]int, agents)}
	for i := range agents {
		b.chains = append(b.chains, newChainAgent(t, w).receipts(t, perAgent))
		b.acked[i] = map[int]uint64{}
	}
	return b
}

// run sends every agent's chain from its own goroutine until the chain is
// sent or an Append fails. Once half of all receipts are acknowledged it
// closes half.
func (b *burst) run(t *testing.T, s *ledgerServer, half chan<- struct{}) {
	var wg sync.WaitGroup
	var once sync.Once
	all := int64(len(b.chains) * len(b.chains[0]))
	for i, chain := range b.chains {
		c := s.client()
		wg.Go(func() {
			for j := 0; j < len(chain); j += b.batch {
				resp, err := c.Append(t.Context(), appendRequest(chain[j:min(j+b.batch, len(chain))]...))
				if err != nil {
					return
				}
				for k, idx := range resp.Msg.Indexes {
					b.acked[i][j+k] = idx
				}
				b.next[i] = j + len(resp.Msg.Indexes)
				if b.total.Add(int64(len(resp.Msg.Indexes)))*2 >= all {
					once.Do(func() { close(half) })
				}
			}
		})
	}
	wg.Wait()
}

// checkAcked: every acknowledged receipt is in the log at its index.
func (b *burst) checkAcked(t *testing.T, c ledgerv1connect.LedgerServiceClient) {
	t.Helper()
	for i, acked := range b.acked {
		for pos, idx := range acked {
			resp, err := c.GetEntries(t.Context(), connect.NewRequest(&ledgerv1.GetEntriesRequest{Start: idx, Count: 1}))
			if err != nil {
				t.Fatalf("agent %d receipt %d, acknowledged at index %d: %v", i, pos, idx, err)
			}
			if !bytes.Equal(resp.Msg.Entries[0], b.chains[i][pos]) {
				t.Fatalf("agent %d receipt %d was acknowledged at index %d, which holds another receipt", i, pos, idx)
			}
		}
	}
}

// finish re-sends every agent's receipts from its first unacknowledged
// one; all must land, the ones stored before the crash at the same index.
func (b *burst) finish(t *testing.T, c ledgerv1connect.LedgerServiceClient) {
	t.Helper()
	for i, chain := range b.chains {
		for j := b.next[i]; j < len(chain); j += b.batch {
			if _, err := c.Append(t.Context(), appendRequest(chain[j:min(j+b.batch, len(chain))]...)); err != nil {
				t.Fatalf("agent %d: re-sending from receipt %d: %v", i, j, err)
			}
		}
	}
}

// checkExactlyOnce: the log holds every receipt of the burst once and
// nothing else.
func (b *burst) checkExactlyOnce(t *testing.T, c ledgerv1connect.LedgerServiceClient) {
	t.Helper()
	want := map[[32]byte]bool{}
	for _, chain := range b.chains {
		for _, r := range chain {
			want[receipt.Hash(r)] = true
		}
	}
	var got [][]byte
	for {
		resp, err := c.GetEntries(t.Context(), connect.NewRequest(&ledgerv1.GetEntriesRequest{Start: uint64(len(got))}))
		if connectCode(err) == connect.CodeOutOfRange {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, resp.Msg.Entries...)
	}
	if len(got) != len(want) {
		t.Fatalf("the log holds %d entries, want the burst's %d receipts exactly once", len(got), len(want))
	}
	for i, e := range got {
		h := receipt.Hash(e)
		if !want[h] {
			t.Fatalf("entry %d is not a receipt of the burst, or is there twice", i)
		}
		delete(want, h)
	}
}

// TestLedgerServeCrash kills the server with SIGKILL in the middle of a
// burst of appends from several agents. The file must then pass fsck,
// every acknowledged receipt must be at its acknowledged index after a
// restart, and the unacknowledged ones, re-sent, must land exactly once.
func TestLedgerServeCrash(t *testing.T) {
	t.Parallel()
	w := newLedgerWorld(t)
	b := newBurst(t, w, 4, 60, 3)
	killMidBurst(t, w, b)

	s := w.serve()
	c := s.client()
	b.checkAcked(t, c)
	b.finish(t, c)
	b.checkAcked(t, c)
	b.checkExactlyOnce(t, c)
	if code := s.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("bankdoor ledger serve exited %d on SIGTERM, want 0:\n%s", code, s.output())
	}
	w.fsck()
}

// killMidBurst runs b against a new server of w, kills the server with
// SIGKILL once half of b is acknowledged, and returns the output of the
// fsck that must then find the file clean.
func killMidBurst(t *testing.T, w *ledgerWorld, b *burst) string {
	t.Helper()
	s := w.serve()
	half := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); b.run(t, s, half) }()
	select {
	case <-half:
	case <-done:
		t.Fatalf("the burst ended before half of it was acknowledged:\n%s", s.output())
	}
	if code := s.stop(syscall.SIGKILL); code != -1 {
		t.Fatalf("bankdoor ledger serve exited %d on SIGKILL, want death by signal", code)
	}
	<-done
	t.Logf("killed after %d of %d receipts were acknowledged", b.total.Load(), 4*60)
	out := w.fsck()
	if !strings.Contains(out, ": ok: origin "+ledgerOrigin) {
		t.Fatalf("fsck after the crash: %s", out)
	}
	return out
}

// TestLedgerServeGraceful: SIGTERM during a burst stops the server with
// exit status 0 after the calls in flight are answered; everything
// acknowledged is in the file, which passes fsck.
func TestLedgerServeGraceful(t *testing.T) {
	t.Parallel()
	w := newLedgerWorld(t)
	b := newBurst(t, w, 3, 40, 2)
	s := w.serve()
	// An open WatchCheckpoints stream must not hold the shutdown up.
	stream, err := s.client().WatchCheckpoints(t.Context(), connect.NewRequest(&ledgerv1.WatchCheckpointsRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	if !stream.Receive() {
		t.Fatalf("WatchCheckpoints: %v", stream.Err())
	}
	half := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); b.run(t, s, half) }()
	select {
	case <-half:
	case <-done:
	}
	if code := s.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("bankdoor ledger serve exited %d on SIGTERM, want 0:\n%s", code, s.output())
	}
	<-done
	for stream.Receive() {
	}
	if connectCode(stream.Err()) != connect.CodeUnavailable {
		t.Errorf("the watch ended with %v, want unavailable (shutting down)", stream.Err())
	}
	for _, want := range []string{`msg="shutting down" signal=terminated`, `msg=stopped size=`} {
		if !strings.Contains(s.output(), want) {
			t.Errorf("stderr does not say %q:\n%s", want, s.output())
		}
	}
	w.fsck()
	s = w.serve()
	b.checkAcked(t, s.client())
}

// TestLedgerServeReload: an agent added to --agents may append after
// SIGHUP, and a bad key file added later leaves the enrolled set as it was.
func TestLedgerServeReload(t *testing.T) {
	t.Parallel()
	w := newLedgerWorld(t)
	late := newChainAgent(t, nil)
	s := w.serve()
	c := s.jsonClient()
	r := late.receipts(t, 1)
	_, err := c.Append(t.Context(), appendRequest(r...))
	if connectCode(err) != connect.CodePermissionDenied {
		t.Fatalf("Append by an agent not enrolled: %v, want permission_denied", err)
	}
	w.enroll(late)
	if err := s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, s, "agents reloaded")
	if !strings.Contains(s.output(), "enrolled=["+late.keyID+"]") {
		t.Errorf("the reload log line does not name %s:\n%s", late.keyID, s.output())
	}
	if _, err := c.Append(t.Context(), appendRequest(r...)); err != nil {
		t.Fatalf("Append after SIGHUP enrolled the agent: %v", err)
	}
	if err := os.WriteFile(filepath.Join(w.agents, "broken.pem"), []byte("not a key"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, s, "agents not reloaded; the previous set stays enrolled")
	if !strings.Contains(s.output(), "broken.pem") {
		t.Errorf("the failed reload does not name the bad file:\n%s", s.output())
	}
	next := late.receipts(t, 2)[1]
	if _, err := c.Append(t.Context(), appendRequest(next)); err != nil {
		t.Fatalf("Append after a failed reload: %v", err)
	}
}

// waitFor waits until the server's stderr holds s.
func waitFor(t *testing.T, srv *ledgerServer, s string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(srv.output(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("stderr did not say %q within a minute:\n%s", s, srv.output())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestLedgerServeTokenAndHealth: with --token-file, Append needs a token
// from the file; reads and GET /healthz stay open.
func TestLedgerServeTokenAndHealth(t *testing.T) {
	t.Parallel()
	w := newLedgerWorld(t)
	a := newChainAgent(t, w)
	const token = "ledger-e2e-token-0123456789abcdef"
	tokens := filepath.Join(w.dir, "tokens")
	if err := os.WriteFile(tokens, []byte("# shippers\nshipper "+token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := w.serve("--token-file", tokens)
	c := s.jsonClient()
	rs := a.receipts(t, 2)
	_, err := c.Append(t.Context(), appendRequest(rs[0]))
	if connectCode(err) != connect.CodeUnauthenticated || !strings.Contains(err.Error(), "Append requires authentication") {
		t.Fatalf("Append without a token: %v, want unauthenticated saying Append requires authentication", err)
	}
	req := appendRequest(rs...)
	req.Header().Set("Authorization", "Bearer "+token)
	if _, err := c.Append(t.Context(), req); err != nil {
		t.Fatalf("Append with the token: %v", err)
	}
	if _, err := c.GetCheckpoint(t.Context(), connect.NewRequest(&ledgerv1.GetCheckpointRequest{})); err != nil {
		t.Fatalf("GetCheckpoint without a token: %v", err)
	}
	resp, err := http.Get(s.url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var h struct{ Size uint64 }
	if err := json.Unmarshal(body, &h); err != nil || resp.StatusCode != http.StatusOK || h.Size != 2 {
		t.Fatalf("GET /healthz: %s %s, want 200 and size 2", resp.Status, body)
	}
}
