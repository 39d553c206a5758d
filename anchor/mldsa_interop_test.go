package anchor_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/bankdoor/bankdoor/anchor"
	"github.com/bankdoor/bankdoor/anchor/anchortest"
	"github.com/bankdoor/bankdoor/anchor/cosignature"
	"github.com/bankdoor/bankdoor/anchor/internal/testlog"
	"github.com/bankdoor/bankdoor/anchor/tlogwitness"
)

// omniClient is a client for a running omniwitness that counts requests.
func omniClient(t testing.TB, w *anchortest.Omniwitness, requests *countingTransport) *tlogwitness.Client {
	c, err := tlogwitness.New(w.URL, w.VKey)
	if err != nil {
		t.Fatal(err)
	}
	c.HTTP = &http.Client{Transport: requests, Timeout: 10 * time.Second}
	c.Backoff = tlogwitness.Backoff{Attempts: 2, Initial: 10 * time.Millisecond, Max: 10 * time.Millisecond}
	c.Logger = slog.New(slog.DiscardHandler)
	return c
}

// TestOmniwitnessMixedQuorum: one real omniwitness cosigns with Ed25519,
// another with ML-DSA-44 (cosignature/v1 type 0x06); the served note
// meets a quorum of 2 over both keys, and fails it with either
// cosignature alone.
func TestOmniwitnessMixedQuorum(t *testing.T) {
	s := newSetup(t) // its witness is Ed25519
	pq := anchortest.NewOmniwitnessMLDSA(t, s.vkey)
	l, store := testlog.New(t, s.skey), anchortest.NewMemStore()
	a, err := anchor.New(anchor.Options{Log: l, LogKey: s.logKey, Store: store, Logger: slog.New(slog.DiscardHandler),
		Witnesses: []*tlogwitness.Client{omniClient(t, s.witness, s.requests), omniClient(t, pq, s.requests)}})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{4, 9} {
		l.Append("receipt", n)
		if err := a.Anchor(context.Background(), l.Checkpoint()); err != nil {
			t.Fatalf("anchoring size %d: %v", l.Size(), err)
		}
	}
	served, err := cosignature.Cosigned(l.Checkpoint(), s.logKey, store.Cosignatures)
	if err != nil {
		t.Fatal(err)
	}
	p, err := cosignature.NewPolicy(s.vkey, []string{s.witness.VKey, pq.VKey}, 2)
	if err != nil {
		t.Fatal(err)
	}
	v, err := p.Verify(served)
	if err != nil || len(v.Cosigners) != 2 || time.Since(v.Cosigners[1].Time) > time.Minute {
		t.Fatalf("quorum 2 of an Ed25519 and an ML-DSA-44 witness: %v, %+v\n%s", err, v, served)
	}
	for _, w := range []*anchortest.Omniwitness{s.witness, pq} {
		alone := dropLine(t, served, w.Name)
		if _, err := p.Verify(alone); !errors.Is(err, cosignature.ErrQuorum) {
			t.Errorf("quorum 2 without %s's cosignature: err = %v; want ErrQuorum", w.Name, err)
		}
	}
}

// dropLine removes the signature line by name from a note.
func dropLine(t *testing.T, msg []byte, name string) []byte {
	t.Helper()
	var out []byte
	for line := range bytes.Lines(msg) {
		if !bytes.HasPrefix(line, []byte("— "+name+" ")) {
			out = append(out, line...)
		}
	}
	if len(out) == len(msg) {
		t.Fatalf("no line by %s in\n%s", name, msg)
	}
	return out
}

// TestOmniwitnessBudget is the anchoring budget against the real
// omniwitness (ML-DSA-44), in real time: a 500 ms interval and 1,000
// appends a second for 2 s make at most 2 s / 500 ms + 2 requests, and the
// last entry is cosigned within the interval (plus the witness's answer)
// after the appends stop. TestRunBudget counts on a clock the test moves.
func TestOmniwitnessBudget(t *testing.T) {
	const interval, load = 500 * time.Millisecond, 2 * time.Second
	s := newSetup(t)
	pq := anchortest.NewOmniwitnessMLDSA(t, s.vkey)
	l, store := testlog.New(t, s.skey), anchortest.NewMemStore()
	l.Append("receipt", 1)
	a, err := anchor.New(anchor.Options{Log: l, LogKey: s.logKey, Store: store, Logger: slog.New(slog.DiscardHandler),
		Interval: interval, Witnesses: []*tlogwitness.Client{omniClient(t, pq, s.requests)}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	wake, done := make(chan []byte, 1), make(chan error)
	go func() { done <- a.Run(ctx, func(context.Context) <-chan []byte { return wake }) }()
	tick := time.NewTicker(time.Millisecond)
	for start := time.Now(); time.Since(start) < load; <-tick.C {
		l.Append("receipt", 1)
		select { // as the ledger's Watch: a wake-up not yet read is replaced
		case wake <- nil:
		default:
		}
	}
	tick.Stop()
	stopped, last := time.Now(), l.Size()
	waitFor(t, "the last entry's cosignature", func() bool { size, _, _ := store.Latest(pq.Name); return size == last })
	lag := time.Since(stopped)
	cancel()
	<-done
	calls := s.requests.take()
	t.Logf("%d appends over %v, interval %v: %d add-checkpoint requests to the ML-DSA-44 omniwitness; last entry cosigned %v after the appends stopped",
		last-1, load, interval, calls, lag.Round(time.Millisecond))
	if max := int64(load/interval) + 2; calls > max {
		t.Errorf("%d add-checkpoint requests; want at most %d", calls, max)
	}
	if lag > interval+time.Second {
		t.Errorf("the last entry was cosigned %v after the appends stopped; want within the %v interval and the witness's answer", lag, interval)
	}
}
