package anchor

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/bankdoor/bankdoor/anchor/tlogwitness"
)

// A Loop runs an Anchorer in the background for a log open in this
// process (a ledger server's, or a proxy's embedded ledger), woken by each
// of the log's new checkpoints. A nil *Loop (no witnesses) does nothing.
type Loop struct {
	a      *Anchorer
	log    Log
	cancel context.CancelFunc
	done   chan struct{} // closed when Run has returned
}

// StartLoop makes the Anchorer of opts (see New) and runs its Run in the
// background, with watch (e.g. the ledger's Watch) giving each witness's
// loop its wake-up. Options without witnesses anchor
// nothing: StartLoop returns a nil Loop.
func StartLoop(opts Options, watch func(context.Context) <-chan []byte) (*Loop, error) {
	if len(opts.Witnesses) == 0 {
		return nil, nil
	}
	a, err := New(opts)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &Loop{a: a, log: a.opts.Log, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		_ = a.Run(ctx, watch) // returns ctx.Err()
	}()
	return l, nil
}

// Stop ends the loop and waits for it, so that no cosignature is being
// stored when it returns (the log may then be closed).
func (l *Loop) Stop() {
	if l == nil {
		return
	}
	l.cancel()
	<-l.done
}

// Finish stops the loop, then gets the log's latest checkpoint cosigned
// by every witness that has not cosigned it yet, within timeout: the
// receipts a proxy ships as it stops are committed after the loop's last
// round. Finish keeps the anchoring interval: a witness whose interval
// does not end within timeout is not sent the checkpoint, and the error
// wraps ErrInterval.
func (l *Loop) Finish(timeout time.Duration) error {
	if l == nil {
		return nil
	}
	l.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return l.a.Anchor(ctx, l.log.Checkpoint())
}

// Run anchors the log's latest checkpoint to each witness in a loop of its
// own, so that a slow or hanging witness delays no other; it returns
// ctx.Err() once every loop has ended. Run calls watch (e.g. the ledger's
// Watch) once per witness, in the order of Options.Witnesses, before any
// loop starts. A witness's loop anchors now and each time a value arrives
// on its channel (the value itself is not used, so a late one cannot
// anchor an old tree), until ctx is done or the channel is closed. A
// witness whose Interval since its last request has not passed is sent the
// latest checkpoint when it has (see Anchoring budget). A witness that
// failed transiently (see Transient) is tried again after RetryInterval
// (with a budget, when its interval ends), or at the next checkpoint if one
// comes sooner and its interval allows; one that refused a checkpoint is
// not sent that checkpoint again. Failures are logged, not returned.
func (a *Anchorer) Run(ctx context.Context, watch func(context.Context) <-chan []byte) error {
	wakes := make([]<-chan []byte, len(a.opts.Witnesses))
	for i := range wakes {
		wakes[i] = watch(ctx)
	}
	var wg sync.WaitGroup
	for i, w := range a.opts.Witnesses {
		wg.Go(func() { a.runWitness(ctx, &pending{w: w, dirty: true}, wakes[i]) })
	}
	wg.Wait()
	return ctx.Err()
}

// runWitness is Run's loop for the witness p.w.
func (a *Anchorer) runWitness(ctx context.Context, p *pending, wake <-chan []byte) {
	for {
		var timer <-chan time.Time
		if wait, ok := a.round(ctx, p); ok {
			timer = a.opts.Clock.After(wait)
		}
		select {
		case <-ctx.Done():
			return
		case _, ok := <-wake:
			if !ok {
				return // Watch closes its channel when ctx is done
			}
			p.dirty, p.retryAt = true, time.Time{}
		case <-timer:
		}
	}
}

// pending is what a witness's loop knows of it.
type pending struct {
	w       *tlogwitness.Client
	dirty   bool      // the log may have a checkpoint w has not cosigned
	retryAt time.Time // after a transient failure: not before, unless a new checkpoint came
	refused bool      // w refused the checkpoint of size
	size    uint64    // the size w refused
}

// round anchors the log's latest checkpoint to p.w if it may not have
// cosigned it and its interval has passed, and logs failures. It returns
// how long until p.w is due again, if it still may not have cosigned it.
func (a *Anchorer) round(ctx context.Context, p *pending) (wait time.Duration, ok bool) {
	c, err := a.parse(a.opts.Log.Checkpoint())
	if err != nil {
		a.opts.Logger.ErrorContext(ctx, "anchoring failed", "err", err)
		p.dirty = false
		return 0, false
	}
	if p.refused && p.size == c.Size {
		p.dirty = false
	}
	if p.dirty && !a.dueAt(p).After(a.opts.Clock.Now()) {
		a.settle(ctx, p, c, a.anchorOne(ctx, p.w, c))
	}
	if !p.dirty {
		return 0, false
	}
	return max(0, a.dueAt(p).Sub(a.opts.Clock.Now())), true
}

// settle records the outcome of anchoring c to p.w.
func (a *Anchorer) settle(ctx context.Context, p *pending, c *checkpoint, err error) {
	switch {
	case err == nil || ctx.Err() != nil:
		p.dirty, p.refused = false, false
	case Transient(err):
		wait := a.retryWait()
		a.opts.Logger.WarnContext(ctx, "anchoring failed; will retry", "witness", p.w.Name(), "err", err, "retry_in", wait)
		p.retryAt = a.opts.Clock.Now().Add(wait)
	default:
		a.opts.Logger.ErrorContext(ctx, "witness refused the checkpoint", "witness", p.w.Name(), "size", c.Size, "err", err)
		p.dirty, p.refused, p.size = false, true, c.Size
	}
}

// retryWait is how long after a transient failure a witness is tried
// again: RetryInterval, or with a budget the interval, the rate the
// witness admits.
func (a *Anchorer) retryWait() time.Duration {
	if a.opts.Interval > 0 {
		return a.opts.Interval
	}
	return a.opts.RetryInterval
}

// dueAt is when Run may next send to p.w: its interval since the last
// request has passed, and so has a retry wait.
func (a *Anchorer) dueAt(p *pending) time.Time {
	at := a.allowedAt(p.w)
	if p.retryAt.After(at) {
		return p.retryAt
	}
	return at
}

// allowedAt is when w's interval since the last request to it ends; the
// zero time if there is no budget or no request yet.
func (a *Anchorer) allowedAt(w *tlogwitness.Client) time.Time {
	a.sentMu.Lock()
	defer a.sentMu.Unlock()
	last, ok := a.sent[w.Name()]
	if !ok || a.opts.Interval == 0 {
		return time.Time{}
	}
	return last.Add(a.opts.Interval)
}

// await waits until w's interval since the last request has passed, or
// fails with ErrInterval if it would not pass before ctx's deadline, and
// then records that a request to w starts now.
func (a *Anchorer) await(ctx context.Context, w *tlogwitness.Client) error {
	if wait := a.allowedAt(w).Sub(a.opts.Clock.Now()); wait > 0 {
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
			return fmt.Errorf("witness %s: %w: its next add-checkpoint may start in %v (one every %v), after the deadline",
				w.Name(), ErrInterval, wait.Round(time.Millisecond), a.opts.Interval)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-a.opts.Clock.After(wait):
		}
	}
	a.sentMu.Lock()
	defer a.sentMu.Unlock()
	a.sent[w.Name()] = a.opts.Clock.Now()
	return nil
}
