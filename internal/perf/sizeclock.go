package perf

import (
	"sync"
	"time"
)

// SizeClock records when each size of a growing log (a checkpoint's tree
// size, as a Watch shows them) was first seen, so that the time from an
// Append to the first checkpoint covering it can be measured. Sizes must
// be recorded in the order they were seen.
type SizeClock struct {
	mu   sync.Mutex
	cond *sync.Cond
	seen []sizeAt
}

type sizeAt struct {
	size uint64
	t    time.Time
}

// NewSizeClock returns a clock that has seen nothing.
func NewSizeClock() *SizeClock {
	c := &SizeClock{}
	c.cond = sync.NewCond(&c.mu)
	return c
}

// Saw records that size was seen at t.
func (c *SizeClock) Saw(size uint64, t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen = append(c.seen, sizeAt{size, t})
	c.cond.Broadcast()
}

// Wait blocks until a size of at least size has been seen and returns
// when it first was.
func (c *SizeClock) Wait(size uint64) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		for _, e := range c.seen {
			if e.size >= size {
				return e.t
			}
		}
		c.cond.Wait()
	}
}

// CoveringLatency sends the items of work[i] from goroutine i, all of
// them together at about rate items a second, one at a time through
// appendOne, which returns the index the log gave the item once it is
// durable. For each item it returns the time from the call to the first
// checkpoint clock saw covering that index: the time to a covering
// checkpoint.
func CoveringLatency(work [][][]byte, rate int, appendOne func([]byte) (uint64, error), clock *SizeClock) ([]time.Duration, error) {
	lat := make([][]time.Duration, len(work))
	errs := make(chan error, len(work))
	var wg sync.WaitGroup
	for w, items := range work {
		wg.Go(func() {
			tick := time.NewTicker(time.Second * time.Duration(len(work)) / time.Duration(rate))
			defer tick.Stop()
			for _, item := range items {
				<-tick.C
				start := time.Now()
				idx, err := appendOne(item)
				if err != nil {
					errs <- err
					return
				}
				lat[w] = append(lat[w], clock.Wait(idx+1).Sub(start))
			}
		})
	}
	wg.Wait()
	close(errs)
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	return all, <-errs
}
