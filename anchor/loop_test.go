package anchor_test

import (
	"context"
	"testing"
	"time"

	"github.com/bankdoor/bankdoor/anchor"
	"github.com/bankdoor/bankdoor/anchor/tlogwitness"
)

// TestLoop: the loop anchors the latest checkpoint when woken; Finish,
// after the loop has stopped, anchors what was committed since without a
// wake-up; a nil Loop (no witnesses) does nothing.
func TestLoop(t *testing.T) {
	t.Parallel()
	u := newUnit(t)
	w := newInProcessWitness(t, "w.test", u.logKey)
	wake := make(chan []byte, 1)
	watched := make(chan struct{})
	l, err := anchor.StartLoop(anchor.Options{Log: u.log, LogKey: u.logKey, Store: u.store,
		Witnesses: []*tlogwitness.Client{client(t, w.URL, w.VKey)}, RetryInterval: time.Minute}, func(ctx context.Context) <-chan []byte {
		close(watched)
		return wake
	})
	if err != nil {
		t.Fatal(err)
	}
	<-watched
	latest := func() uint64 {
		size, _, err := u.store.Latest("w.test")
		if err != nil {
			t.Fatal(err)
		}
		return size
	}
	u.log.Append("receipt", 3)
	wake <- nil
	waitFor(t, "the loop to anchor size 3", func() bool { return latest() == 3 })
	l.Stop()
	u.log.Append("receipt", 2) // no wake-up: the loop has stopped
	if err := l.Finish(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if got := latest(); got != 5 {
		t.Errorf("after Finish the witness cosigned size %d; want 5", got)
	}

	var none *anchor.Loop
	none.Stop()
	if err := none.Finish(time.Second); err != nil {
		t.Errorf("nil Loop Finish = %v", err)
	}
	if l, err := anchor.StartLoop(anchor.Options{Log: u.log, LogKey: u.logKey, Store: u.store}, nil); l != nil || err != nil {
		t.Errorf("StartLoop without witnesses = %v, %v; want a nil Loop", l, err)
	}
}
