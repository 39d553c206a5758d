package anchor_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/bankdoor/bankdoor/anchor"
	"github.com/bankdoor/bankdoor/anchor/anchortest"
	"github.com/bankdoor/bankdoor/anchor/cosignature"
	"github.com/bankdoor/bankdoor/anchor/tlogwitness"
)

// budgetRun is an Anchorer's Run on a clock the test moves, with a wake
// channel the test sends on: a send returns once Run has finished the
// round before it and waits for the next value, so that what the test
// checks between two sends is what Run left.
type budgetRun struct {
	u     *unit
	w     *inProcessWitness
	a     *anchor.Anchorer
	clock *anchortest.Clock
	wake  chan []byte
}

// startBudgetRun starts Run on a log of one entry.
func startBudgetRun(t *testing.T, interval time.Duration) *budgetRun {
	u := newUnit(t)
	w := newInProcessWitness(t, "w.test", u.logKey)
	clock := anchortest.NewClock(time.Unix(1_800_000_000, 0))
	a, err := anchor.New(anchor.Options{Log: u.log, LogKey: u.logKey, Store: u.store, Witnesses: []*tlogwitness.Client{client(t, w.URL, w.VKey)},
		Interval: interval, Clock: clock, RetryInterval: time.Minute, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	r := &budgetRun{u: u, w: w, a: a, clock: clock, wake: make(chan []byte)}
	u.log.Append("receipt", 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- a.Run(ctx, func(context.Context) <-chan []byte { return r.wake }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run returned %v; want context.Canceled", err)
		}
	})
	return r
}

func (r *budgetRun) cosigned() uint64 {
	size, _, _ := r.u.store.Latest("w.test")
	return size
}

// TestRunBudget: with a 2 s interval and 1,000 appends a second for 10 s
// (a wake-up after each), the witness gets at most 7 add-checkpoint
// requests, and the last entry is cosigned within one interval after the
// appends stop. Time is the test's clock; nothing sleeps.
func TestRunBudget(t *testing.T) {
	const interval, rate, load = 2 * time.Second, 1000, 10 * time.Second
	r := startBudgetRun(t, interval)
	r.wake <- nil // the first round (started with Run) is over: size 1 sent at 0 s
	r.clock.Advance(300 * time.Millisecond)
	for range rate * int(load/time.Second) {
		r.u.log.Append("receipt", 1)
		r.wake <- nil
		r.clock.Advance(time.Second / rate)
	}
	stopped, last := r.clock.Now(), r.u.log.Size()
	for r.wake <- nil; r.cosigned() < last; r.wake <- nil {
		if r.clock.Now().Sub(stopped) > interval {
			t.Fatalf("%v after the appends stopped, the witness has cosigned size %d of %d; want all within %v", r.clock.Now().Sub(stopped), r.cosigned(), last, interval)
		}
		r.clock.Advance(10 * time.Millisecond)
	}
	lag := r.clock.Now().Sub(stopped)
	calls := r.w.requests.Load()
	t.Logf("%d appends over %v, interval %v: %d add-checkpoint requests; last entry cosigned %v after the appends stopped", last-1, load, interval, calls, lag)
	if calls > 7 {
		t.Errorf("the witness got %d add-checkpoint requests; want at most 7", calls)
	}
	served, err := cosignature.Cosigned(r.u.log.Checkpoint(), r.u.logKey, r.u.store.Cosignatures)
	if err != nil {
		t.Fatal(err)
	}
	p, err := cosignature.NewPolicy(r.u.vkey, []string{r.w.VKey}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := p.Verify(served); err != nil || v.Size != last {
		t.Errorf("the served checkpoint: %v (size %d); want size %d cosigned by the witness", err, v.Size, last)
	}
}

// TestRunBudgetSendsTheNewest: checkpoints that come inside the interval
// are not queued: when it ends, the witness is sent the latest one only;
// with no new checkpoint, nothing is sent.
func TestRunBudgetSendsTheNewest(t *testing.T) {
	r := startBudgetRun(t, time.Second)
	r.wake <- nil
	if got := r.w.requests.Load(); got != 1 {
		t.Fatalf("after the first round the witness got %d requests; want 1", got)
	}
	for range 5 {
		r.u.log.Append("receipt", 1)
		r.wake <- nil
	}
	if got := r.w.requests.Load(); got != 1 {
		t.Errorf("5 checkpoints inside the interval made %d requests; want still 1", got)
	}
	r.clock.Advance(time.Second)
	r.wake <- nil // the round of the timer is over
	if got, size := r.w.requests.Load(), r.cosigned(); got != 2 || size != 6 {
		t.Errorf("when the interval ended: %d requests, size %d cosigned; want 2 and 6", got, size)
	}
	r.clock.Advance(5 * time.Second)
	r.wake <- nil
	if got := r.w.requests.Load(); got != 2 {
		t.Errorf("with no new checkpoint the witness got %d requests; want 2", got)
	}
}

// TestAnchorKeepsTheInterval: Anchor waits for a witness's interval to
// pass, and fails with ErrInterval, sending nothing, if it would pass
// after the context's deadline (as at a proxy's Finish).
func TestAnchorKeepsTheInterval(t *testing.T) {
	u := newUnit(t)
	w := newInProcessWitness(t, "w.test", u.logKey)
	clock := anchortest.NewClock(time.Unix(1_800_000_000, 0))
	a, err := anchor.New(anchor.Options{Log: u.log, LogKey: u.logKey, Store: u.store, Witnesses: []*tlogwitness.Client{client(t, w.URL, w.VKey)},
		Interval: 10 * time.Second, Clock: clock, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	u.log.Append("receipt", 1)
	if err := a.Anchor(context.Background(), u.log.Checkpoint()); err != nil {
		t.Fatal(err)
	}
	u.log.Append("receipt", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = a.Anchor(ctx, u.log.Checkpoint())
	if !errors.Is(err, anchor.ErrInterval) || !anchor.Transient(err) || w.requests.Load() != 1 {
		t.Errorf("anchoring inside the interval with a 5 s deadline: %v, %d requests; want a transient ErrInterval and 1 request", err, w.requests.Load())
	}
	done := make(chan error)
	go func() { done <- a.Anchor(context.Background(), u.log.Checkpoint()) }()
	waitFor(t, "Anchor to wait on the clock", func() bool { return clock.Timers() == 1 })
	clock.Advance(9 * time.Second)
	select {
	case err := <-done:
		t.Fatalf("Anchor returned %v 9 s into a 10 s interval; want it to wait", err)
	default:
	}
	clock.Advance(time.Second)
	if err := <-done; err != nil || w.requests.Load() != 2 {
		t.Errorf("Anchor after the interval: %v, %d requests; want nil and 2", err, w.requests.Load())
	}
}

func TestNewRejectsANegativeInterval(t *testing.T) {
	u := newUnit(t)
	if _, err := anchor.New(anchor.Options{Log: u.log, LogKey: u.logKey, Store: u.store, Interval: -time.Second}); err == nil {
		t.Error("New with Interval -1s succeeded; want an error")
	}
}

// TestRunBudgetRetries: with a budget, a witness that failed (one attempt
// per request) is tried again when its interval ends, not after
// RetryInterval, and never sooner.
func TestRunBudgetRetries(t *testing.T) {
	r := startBudgetRun(t, time.Second)
	r.w.fail.Store(http.StatusServiceUnavailable)
	r.wake <- nil // not a new checkpoint: the first round, failed, is over
	r.u.log.Append("receipt", 1)
	r.wake <- nil
	r.clock.Advance(999 * time.Millisecond)
	r.wake <- nil
	if got := r.w.requests.Load(); got != 1 {
		t.Fatalf("inside the interval after a failure: %d requests; want 1", got)
	}
	r.w.fail.Store(0)
	r.clock.Advance(time.Millisecond)
	r.wake <- nil
	if got, size := r.w.requests.Load(), r.cosigned(); got != 2 || size != 2 {
		t.Errorf("when the interval ended: %d requests, size %d cosigned; want 2 and 2", got, size)
	}
}

// TestIntervalMakesOneAttempt: with a budget, a failing witness gets one
// request per Anchor, whatever the client's Backoff allows.
func TestIntervalMakesOneAttempt(t *testing.T) {
	u := newUnit(t)
	w := newInProcessWitness(t, "w.test", u.logKey)
	w.fail.Store(http.StatusTooManyRequests)
	c := client(t, w.URL, w.VKey)
	c.Backoff = tlogwitness.Backoff{Attempts: 3, Initial: time.Millisecond, Max: time.Millisecond}
	a, err := anchor.New(anchor.Options{Log: u.log, LogKey: u.logKey, Store: u.store, Witnesses: []*tlogwitness.Client{c},
		Interval: time.Second, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	u.log.Append("receipt", 1)
	if err := a.Anchor(context.Background(), u.log.Checkpoint()); !errors.Is(err, tlogwitness.ErrUnavailable) || w.requests.Load() != 1 {
		t.Errorf("a 429 with a budget: %v after %d requests; want ErrUnavailable after 1", err, w.requests.Load())
	}
	if c.Backoff.Attempts != 3 {
		t.Errorf("New changed the caller's client: Backoff %+v", c.Backoff)
	}
}
