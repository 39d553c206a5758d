package perf

import (
	"runtime"
	"time"
)

// LiveHeap returns the heap in use after two collections (the second
// empties the sync.Pools bbolt keeps page buffers in).
func LiveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// SampleHeap samples HeapAlloc every millisecond until the returned
// function is called, which returns the largest sample.
func SampleHeap() (stop func() uint64) {
	quit, done := make(chan struct{}), make(chan uint64)
	go func() {
		var ms runtime.MemStats
		var peak uint64
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
			select {
			case <-quit:
				done <- peak
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 { close(quit); return <-done }
}
