package anchor

import (
	"context"
	"time"
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
// background, with the channel watch returns for the loop's context (e.g.
// the ledger's Watch) as its wake-up. Options without witnesses anchor
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
		_ = a.Run(ctx, watch(ctx)) // returns ctx.Err()
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
// round.
func (l *Loop) Finish(timeout time.Duration) error {
	if l == nil {
		return nil
	}
	l.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return l.a.Anchor(ctx, l.log.Checkpoint())
}
