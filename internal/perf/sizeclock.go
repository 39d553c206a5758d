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
