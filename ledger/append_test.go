package ledger

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bankdoor/bankdoor/ledger/receipt"
)

// snapshot is what a refused Append must leave unchanged.
type snapshot struct {
	size  uint64
	cp    string
	heads map[string]Head
	file  [32]byte
}

func (tl *testLog) snapshot(t *testing.T, agents ...*agent) snapshot {
	t.Helper()
	s := snapshot{size: tl.Size(), cp: string(tl.Checkpoint()), heads: map[string]Head{}}
	for _, a := range agents {
		if h, ok, err := tl.Head(context.Background(), a.KeyID); err != nil {
			t.Fatal(err)
		} else if ok {
			s.heads[a.KeyID] = h
		}
	}
	b, err := os.ReadFile(tl.path)
	if err != nil {
		t.Fatal(err)
	}
	s.file = sha256.Sum256(b)
	return s
}

func hexHash(b []byte) string {
	h := receipt.Hash(b)
	return hex.EncodeToString(h[:])
}

func TestAppendRefusals(t *testing.T) {
	t.Parallel()
	a, stranger := newAgent(1), newAgent(99)
	tl := openTestLog(t, 0, a)
	first := a.Chain(t, 2) // stored below: seq 1, 2
	tl.mustAppend(t, first...)
	next := a.Sign(t, 3, hexHash(first[1])) // the valid next receipt, never stored

	badSig := bytes.Clone(next)
	i := bytes.Index(badSig, []byte(`"sig":"`)) + 10
	badSig[i] ^= 'A' ^ 'B' // still base64, still canonical
	if badSig[i] == next[i] {
		badSig[i] = 'C'
	}
	nonCanonical := append([]byte("{ "), next[1:]...)
	restarted := *a
	restarted.Start = restarted.Start.Add(time.Hour) // the agent lost its state and began again

	tests := []struct {
		name     string
		receipts [][]byte
		kind     error
		say      []string // the error must name these
	}{
		{"broken signature", [][]byte{badSig}, ErrInvalid, []string{"receipt 0", "seq 3", a.KeyID, "signature"}},
		{"unknown key", [][]byte{stranger.Sign(t, 1, receipt.FirstPrev)}, ErrUnknownKey, []string{"receipt 0", stranger.KeyID, "(seq 1, "}},
		{"wrong prev", [][]byte{a.Sign(t, 3, strings.Repeat("ab", 32))}, ErrChain, []string{"receipt 0", "seq 3", "prev"}},
		{"skipped seq", [][]byte{a.Sign(t, 4, hexHash(first[1]))}, ErrChain, []string{"seq 4", "next is seq 3"}},
		{"seq restart", [][]byte{restarted.Sign(t, 1, receipt.FirstPrev)}, ErrChain, []string{"seq 1", "next is seq 3"}},
		{"first receipt not seq 1", [][]byte{newAgentEnrolled(tl, 5).Sign(t, 2, strings.Repeat("ab", 32))}, ErrChain, []string{"seq 2", "first must be seq 1"}},
		{"garbage", [][]byte{[]byte("\x00\xffnot json")}, ErrInvalid, []string{"receipt 0"}},
		{"empty", [][]byte{{}}, ErrInvalid, []string{"receipt 0"}},
		{"non-canonical JSON", [][]byte{nonCanonical}, ErrInvalid, []string{"receipt 0", "canonical"}},
		{"oversized", [][]byte{bytes.Repeat([]byte{' '}, receipt.MaxSize+1)}, ErrInvalid, []string{"receipt 0", "limit"}},
		{"good then bad", [][]byte{next, a.Sign(t, 5, strings.Repeat("cd", 32))}, ErrChain, []string{"receipt 1", "seq 5"}},
		{"good then garbage", [][]byte{next, []byte("{}")}, ErrInvalid, []string{"receipt 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tl.snapshot(t, a)
			idx, err := tl.Append(context.Background(), tt.receipts)
			if !errors.Is(err, tt.kind) || idx != nil {
				t.Fatalf("Append = %v, %v; want nil and an error wrapping %v", idx, err, tt.kind)
			}
			for _, k := range []error{ErrInvalid, ErrUnknownKey, ErrChain, ErrNotFound, ErrRange, ErrClosed, ErrStorage} {
				if k != tt.kind && errors.Is(err, k) {
					t.Errorf("error %q also wraps %v", err, k)
				}
			}
			for _, s := range tt.say {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			if after := tl.snapshot(t, a); after.size != before.size || after.cp != before.cp ||
				after.file != before.file || len(after.heads) != len(before.heads) || after.heads[a.KeyID] != before.heads[a.KeyID] {
				t.Errorf("a refused Append changed the log: before %+v, after %+v", before, after)
			}
		})
	}
	// The valid next receipt is still accepted after all that.
	if idx := tl.mustAppend(t, next); idx[0] != 2 {
		t.Fatalf("next receipt stored at %d, want 2", idx[0])
	}
}

// newAgentEnrolled returns a new agent enrolled in tl.
func newAgentEnrolled(tl *testLog, n int) *agent {
	a := newAgent(n)
	tl.agents.Enroll(a.Public())
	return a
}

func TestAppendReplay(t *testing.T) {
	t.Parallel()
	a := newAgent(1)
	tl := openTestLog(t, 0, a)
	rs := a.Chain(t, 3)
	want := tl.mustAppend(t, rs...)
	before := tl.snapshot(t, a)
	for _, batch := range [][][]byte{rs, {rs[1]}, {rs[2], rs[2], rs[0]}} {
		got := tl.mustAppend(t, batch...)
		for i, r := range batch {
			if j := slicesIndex(rs, r); got[i] != want[j] {
				t.Errorf("replayed receipt %d got index %d, want %d", i, got[i], want[j])
			}
		}
	}
	if after := tl.snapshot(t, a); after.size != before.size || after.file != before.file || after.cp != before.cp {
		t.Errorf("replays changed the log: size %d -> %d", before.size, after.size)
	}
	// A new receipt and a duplicate of it in one request share an index.
	n := a.Next(t)
	if got := tl.mustAppend(t, n, n); got[0] != 3 || got[1] != 3 {
		t.Errorf("new receipt sent twice in one request got %v, want [3 3]", got)
	}
}

func slicesIndex(s [][]byte, b []byte) int {
	for i := range s {
		if bytes.Equal(s[i], b) {
			return i
		}
	}
	return -1
}

func TestAppendLimits(t *testing.T) {
	t.Parallel()
	a := newAgent(1)
	tl := openTestLog(t, 4, a)
	if _, err := tl.Append(context.Background(), a.Chain(t, 5)); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "limit of 4") {
		t.Errorf("Append of 5 with MaxBatch 4 = %v, want ErrInvalid naming the limit", err)
	}
	if idx, err := tl.Append(context.Background(), nil); err != nil || len(idx) != 0 {
		t.Errorf("Append(nil) = %v, %v", idx, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	a2 := newAgent(1)
	if _, err := tl.Append(ctx, a2.Chain(t, 1)); !errors.Is(err, context.Canceled) {
		t.Errorf("Append with a done ctx = %v, want context.Canceled", err)
	}
	tl.Close()
	if _, err := tl.Append(context.Background(), newAgent(1).Chain(t, 1)); !errors.Is(err, ErrClosed) {
		t.Errorf("Append after Close = %v, want ErrClosed", err)
	}
}

// TestBadRequestSparesItsBatch commits three requests in one group: the
// bad one in the middle is refused, the others are stored.
func TestBadRequestSparesItsBatch(t *testing.T) {
	t.Parallel()
	a, b := newAgent(1), newAgent(2)
	tl := openTestLog(t, 0, a, b)
	mk := func(rs ...[]byte) *request {
		req := &request{done: make(chan result, 1)}
		for i, r := range rs {
			it, err := tl.check(i, r)
			if err != nil {
				t.Fatal(err)
			}
			req.items = append(req.items, it)
		}
		return req
	}
	good1 := mk(a.Chain(t, 2)...)
	bad := mk(b.Sign(t, 2, strings.Repeat("ab", 32))) // seq 2 first: refused
	good2 := mk(b.Chain(t, 1)[0], a.Next(t))
	tl.commit([]*request{good1, bad, good2}) // the committer is idle: no Append is running
	r1, rb, r2 := <-good1.done, <-bad.done, <-good2.done
	if r1.err != nil || r2.err != nil || !errors.Is(rb.err, ErrChain) {
		t.Fatalf("results: %v, %v, %v; want ok, ErrChain, ok", r1.err, rb.err, r2.err)
	}
	if got := append(r1.indexes, r2.indexes...); !equalUints(got, []uint64{0, 1, 2, 3}) {
		t.Fatalf("indexes %v, want [0 1 2 3]", got)
	}
	if tl.Size() != 4 {
		t.Fatalf("size %d, want 4", tl.Size())
	}
}

func equalUints(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestConcurrentAppends has several agents append their chains at once,
// each also resending some receipts.
func TestConcurrentAppends(t *testing.T) {
	t.Parallel()
	const agents, perAgent = 8, 60
	var as []*agent
	for i := range agents {
		as = append(as, newAgent(i))
	}
	tl := openTestLog(t, 16, as...)
	var wg sync.WaitGroup
	for _, a := range as {
		chain := a.Chain(t, perAgent)
		wg.Go(func() {
			for i := 0; i < len(chain); {
				k := min(1+i%5, len(chain)-i)
				batch := chain[i:min(i+k, len(chain))]
				if i > 0 {
					batch = append([][]byte{chain[i-1]}, batch...) // a replay
				}
				if _, err := tl.Append(context.Background(), batch); err != nil {
					t.Error(err)
					return
				}
				i += k
			}
		})
	}
	wg.Wait()
	if tl.Size() != agents*perAgent {
		t.Fatalf("size %d, want %d", tl.Size(), agents*perAgent)
	}
	for _, a := range as {
		if h, ok, err := tl.Head(context.Background(), a.KeyID); err != nil || !ok || h.Seq != perAgent {
			t.Errorf("head of %s = %+v, %v, %v; want seq %d", a.KeyID, h, ok, err, perAgent)
		}
	}
	tl.Close()
	rep, err := Fsck(context.Background(), tl.path, testVerifier(t))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Size != agents*perAgent || rep.Agents != agents {
		t.Fatalf("fsck: %v", rep)
	}
}

// TestCloseFinishesInFlight closes the log while agents append: every
// Append either succeeds, and its receipts are there after reopening, or
// fails with ErrClosed and stored nothing of its own.
func TestCloseFinishesInFlight(t *testing.T) {
	t.Parallel()
	const agents = 6
	var as []*agent
	for i := range agents {
		as = append(as, newAgent(i))
	}
	tl := openTestLog(t, 8, as...)
	type done struct {
		receipt []byte
		index   uint64
	}
	results := make([][]done, agents)
	// Close once every agent has had some receipts acknowledged, so that
	// it comes while all of them are appending (each has 200 to send).
	var wg, going sync.WaitGroup
	going.Add(agents)
	for w, a := range as {
		chain := a.Chain(t, 200)
		wg.Go(func() {
			var once sync.Once
			defer once.Do(going.Done)
			for i, r := range chain {
				idx, err := tl.Append(context.Background(), [][]byte{r})
				if errors.Is(err, ErrClosed) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				results[w] = append(results[w], done{r, idx[0]})
				if i == 4 {
					once.Do(going.Done)
				}
			}
		})
	}
	going.Wait()
	if err := tl.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	tl.reopen(t)
	stored := 0
	for _, rs := range results {
		for _, d := range rs {
			got, err := tl.Entries(d.index, 1)
			if err != nil || !bytes.Equal(got[0], d.receipt) {
				t.Fatalf("receipt acknowledged at %d is not there after Close and reopen: %v", d.index, err)
			}
		}
		stored += len(rs)
	}
	if tl.Size() != uint64(stored) {
		t.Fatalf("size %d after reopen, but %d receipts were acknowledged", tl.Size(), stored)
	}
}

// TestLargeRequestNamesFirstBad: the receipts of a large request are
// checked on all CPUs; the error still names the first bad one.
func TestLargeRequestNamesFirstBad(t *testing.T) {
	t.Parallel()
	a := newAgent(1)
	tl := openTestLog(t, 0, a)
	rs := a.Chain(t, 3*parallelFrom)
	rs[parallelFrom+3] = []byte("garbage")
	rs[2*parallelFrom] = []byte("{}")
	_, err := tl.Append(context.Background(), rs)
	if want := fmt.Sprintf("receipt %d:", parallelFrom+3); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) {
		t.Fatalf("Append = %v; want ErrInvalid naming %q", err, want)
	}
	if tl.Size() != 0 {
		t.Fatalf("size %d after a refused request", tl.Size())
	}
}

// TestAppendRetryBelowHead: a retried receipt older than its agent's head
// gets its index back, alone or beside new receipts, before and after a
// reopen; a different receipt with a seq the log already holds (a fork)
// is refused with the chain error, and nothing is stored.
func TestAppendRetryBelowHead(t *testing.T) {
	t.Parallel()
	a, b := newAgent(1), newAgent(2)
	tl := openTestLog(t, 0, a, b)
	rs := a.Chain(t, 5)
	var want []uint64
	for _, r := range rs { // one transaction each
		want = append(want, tl.mustAppend(t, r, b.Next(t))[0])
	}
	check := func(t *testing.T) {
		t.Helper()
		if got := tl.mustAppend(t, rs[1]); got[0] != want[1] {
			t.Errorf("retried seq 2 got index %d, want %d", got[0], want[1])
		}
		size := tl.Size()
		got := tl.mustAppend(t, rs[2], b.Next(t), rs[0])
		if got[0] != want[2] || got[1] != size || got[2] != want[0] {
			t.Errorf("retries beside a new receipt got %v, want [%d %d %d]", got, want[2], size, want[0])
		}
	}
	check(t)
	tl.Close()
	tl.reopen(t)
	check(t)

	forked := *a
	forked.Start = forked.Start.Add(time.Hour) // same key, other bytes
	next := a.Sign(t, 6, hexHash(rs[4]))
	tests := []struct {
		name     string
		receipts [][]byte
		say      string
	}{
		{"fork below the head", [][]byte{forked.Sign(t, 3, hexHash(rs[1]))}, "receipt 0 (seq 3, key_id " + a.KeyID + "): the log holds seq 5 of this agent, so the next is seq 6"},
		{"fork at the head", [][]byte{forked.Sign(t, 5, hexHash(rs[3]))}, "receipt 0 (seq 5, key_id " + a.KeyID + "): the log holds seq 5 of this agent, so the next is seq 6"},
		{"fork of a receipt of the same request", [][]byte{next, forked.Sign(t, 6, hexHash(rs[4]))}, "receipt 1 (seq 6, key_id " + a.KeyID + "): the log holds seq 6 of this agent, so the next is seq 7"},
		{"fork after the head", [][]byte{forked.Sign(t, 6, hexHash(rs[3]))}, "receipt 0 (seq 6, key_id " + a.KeyID + "): prev is " + hexHash(rs[3])},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tl.snapshot(t, a)
			idx, err := tl.Append(context.Background(), tt.receipts)
			if !errors.Is(err, ErrChain) || idx != nil || !strings.Contains(err.Error(), tt.say) {
				t.Fatalf("Append = %v, %v; want ErrChain saying %q", idx, err, tt.say)
			}
			if after := tl.snapshot(t, a); after.size != before.size || after.file != before.file || after.heads[a.KeyID] != before.heads[a.KeyID] {
				t.Errorf("a refused fork changed the log: before %+v, after %+v", before, after)
			}
		})
	}
}
