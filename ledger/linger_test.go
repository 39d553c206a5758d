package ledger

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestCollectLingers: under load the committer waits for more requests
// until the batch is full; a lone appender's request is committed at once
// however long the linger could be; and NoLinger never waits. The gap and
// the limit are an hour, so a wait that should not happen hangs the test
// instead of passing by luck.
func TestCollectLingers(t *testing.T) {
	req := func() *request { return &request{items: []item{{}}} }
	newLog := func(lingerNext bool) *Log {
		return &Log{reqs: make(chan *request, 8), maxBatch: 4, lingerNext: lingerNext, lingerMax: time.Hour, lingerGap: time.Hour}
	}

	l := newLog(true)
	go func() {
		for range 3 {
			l.reqs <- req()
		}
	}()
	if batch, next := l.collect(req()); len(batch) != 4 || next != nil {
		t.Errorf("under load: a batch of %d (next %v), want the 4 that fill it", len(batch), next)
	}

	l = newLog(false)
	if batch, _ := l.collect(req()); len(batch) != 1 {
		t.Errorf("lone appender: a batch of %d, want 1", len(batch))
	}

	// Closing the queue ends a linger at once, with what was collected.
	l = newLog(true)
	l.reqs <- req()
	close(l.reqs)
	if batch, _ := l.collect(req()); len(batch) != 2 {
		t.Errorf("closed queue: a batch of %d, want 2", len(batch))
	}
}

// TestCollectLingerLimit: lingering stops after lingerMax in all even
// while requests keep coming within the gap.
func TestCollectLingerLimit(t *testing.T) {
	l := &Log{reqs: make(chan *request), maxBatch: 1 << 20, lingerNext: true, lingerMax: 50 * time.Millisecond, lingerGap: time.Hour}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case l.reqs <- &request{items: []item{{}}}:
			case <-stop:
				return
			}
		}
	})
	start := time.Now()
	batch, _ := l.collect(&request{items: []item{{}}})
	close(stop)
	wg.Wait()
	if d := time.Since(start); d < 50*time.Millisecond || len(batch) < 2 {
		t.Errorf("collect returned %d requests after %v; want it to linger 50ms", len(batch), d)
	}
}

// TestCPUClockIdle: a process that sleeps has not saturated its CPUs.
func TestCPUClockIdle(t *testing.T) {
	var c cpuClock
	if c.saturated() {
		t.Error("saturated on the first call, with nothing to compare")
	}
	time.Sleep(20 * time.Millisecond) // idle on purpose: the state under test
	if c.saturated() {
		t.Errorf("saturated after 20ms of sleep on %d CPUs", runtime.GOMAXPROCS(0))
	}
}
