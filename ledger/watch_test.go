package ledger

import (
	"context"
	"testing"
	"time"

	"github.com/transparency-dev/formats/log"
)

func watchSize(t *testing.T, tl *testLog, n []byte) uint64 {
	t.Helper()
	cp, _, _, err := log.ParseCheckpoint(n, testOrigin, tl.verifier)
	if err != nil {
		t.Fatal(err)
	}
	return cp.Size
}

func recv(t *testing.T, c <-chan []byte) ([]byte, bool) {
	t.Helper()
	select {
	case n, ok := <-c:
		return n, ok
	case <-time.After(5 * time.Second):
		t.Fatal("no checkpoint from Watch within 5s")
		return nil, false
	}
}

func TestWatch(t *testing.T) {
	t.Parallel()
	a := newAgent(1)
	tl := openTestLog(t, 0, a)
	tl.mustAppend(t, a.Next(t))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := tl.Watch(ctx)
	if n, _ := recv(t, w); watchSize(t, tl, n) != 1 {
		t.Fatal("first note from Watch is not the latest checkpoint")
	}
	tl.mustAppend(t, a.Next(t))
	if n, _ := recv(t, w); watchSize(t, tl, n) != 2 {
		t.Fatal("Watch did not deliver the new checkpoint")
	}
	// A slow reader: three commits while it does not read; it then gets
	// the newest, and the commits did not wait for it.
	for range 3 {
		tl.mustAppend(t, a.Next(t))
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, _ := recv(t, w)
		if s := watchSize(t, tl, n); s == 5 {
			break
		} else if s < 3 || time.Now().After(deadline) {
			t.Fatalf("slow reader got size %d; want to skip to 5", s)
		}
	}
	cancel()
	for {
		if _, ok := recv(t, w); !ok {
			break
		}
	}
	w2 := tl.Watch(context.Background())
	recv(t, w2)
	tl.Close()
	if _, ok := recv(t, w2); ok {
		t.Fatal("Watch channel not closed by Close")
	}
}
