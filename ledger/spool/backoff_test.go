package spool

import (
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	b := backoff{min: 100 * time.Millisecond, max: time.Second}
	if b.failing() {
		t.Fatal("a new backoff is failing")
	}
	for i, cur := range []time.Duration{100, 200, 400, 800, 1000, 1000} {
		cur *= time.Millisecond
		d := b.fail()
		if d < cur/2 || d > cur {
			t.Errorf("failure %d: wait %v, want between %v and %v", i+1, d, cur/2, cur)
		}
	}
	b.reset()
	if b.failing() {
		t.Fatal("failing after reset")
	}
	if d := b.fail(); d > 100*time.Millisecond {
		t.Errorf("first wait after reset %v, want at most the minimum", d)
	}
}
