package perf

import (
	"sync"
	"testing"
	"time"
)

func TestQuantile(t *testing.T) {
	lat := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for q, want := range map[float64]time.Duration{0: 1, 0.5: 5, 0.95: 9, 0.99: 9, 1: 10} {
		if got := Quantile(lat, q); got != want {
			t.Errorf("Quantile(1..10, %v) = %v, want %v", q, got, want)
		}
	}
	if Quantile(nil, 0.5) != 0 {
		t.Error("Quantile of no samples is not 0")
	}
}

func TestSizeClock(t *testing.T) {
	c := NewSizeClock()
	t0 := time.Unix(100, 0)
	c.Saw(3, t0)
	c.Saw(7, t0.Add(time.Second))
	if got := c.Wait(2); !got.Equal(t0) {
		t.Errorf("Wait(2) = %v, want the time size 3 was seen", got)
	}
	if got := c.Wait(4); !got.Equal(t0.Add(time.Second)) {
		t.Errorf("Wait(4) = %v, want the time size 7 was seen", got)
	}
	done := make(chan time.Time)
	go func() { done <- c.Wait(9) }()
	c.Saw(10, t0.Add(2*time.Second))
	if got := <-done; !got.Equal(t0.Add(2 * time.Second)) {
		t.Errorf("Wait(9) = %v after size 10 was seen", got)
	}
}

func TestCoveringLatency(t *testing.T) {
	c := NewSizeClock()
	var mu sync.Mutex // a log's appends are serialised, as here
	var next uint64
	appendOne := func([]byte) (uint64, error) {
		mu.Lock()
		defer mu.Unlock()
		next++
		c.Saw(next, time.Now())
		return next - 1, nil
	}
	lat, err := CoveringLatency([][][]byte{{{1}, {2}}, {{3}}}, 1000, appendOne, c)
	if err != nil || len(lat) != 3 {
		t.Fatalf("CoveringLatency = %v, %v; want 3 latencies", lat, err)
	}
	for _, d := range lat {
		if d < 0 {
			t.Errorf("negative latency %v", d)
		}
	}
}
