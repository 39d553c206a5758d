package anchor_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/bankdoor/bankdoor/anchor"
	"github.com/bankdoor/bankdoor/anchor/internal/testlog"
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

// TestLoopHangingWitness: a witness that never answers does not delay
// another's cosignatures: each witness is anchored by its own loop, and no
// lock is held across a witness's HTTP call.
func TestLoopHangingWitness(t *testing.T) {
	t.Parallel()
	u := newUnit(t)
	good := newInProcessWitness(t, "good.test", u.logKey)
	_, hangKey := testlog.NewWitnessKey(t, "hang.test")
	entered, release := make(chan struct{}, 1), make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		select {
		case entered <- struct{}{}:
		default:
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(hang.Close)
	t.Cleanup(func() { close(release) }) // runs before hang.Close
	cosigned := make(chan uint64, 16)
	watched := make(chan chan []byte, 2)
	l, err := anchor.StartLoop(anchor.Options{Log: u.log, LogKey: u.logKey, Store: u.store, RetryInterval: time.Minute,
		Witnesses: []*tlogwitness.Client{client(t, hang.URL, hangKey), client(t, good.URL, good.VKey)},
		Logger:    slog.New(slog.DiscardHandler),
		OnResult: func(w string, size uint64, err error) {
			if w == "good.test" && err == nil {
				cosigned <- size
			}
		}}, func(context.Context) <-chan []byte {
		wake := make(chan []byte, 1)
		watched <- wake
		return wake
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("the hanging witness was never sent a checkpoint")
	}
	var wakes []chan []byte // every witness's: Run watches for all before it sends to one
	for len(watched) > 0 {
		wakes = append(wakes, <-watched)
	}
	for _, n := range []int{3, 2} {
		u.log.Append("receipt", n)
		for _, wake := range wakes {
			select { // as the ledger's Watch: the hanging loop reads none
			case wake <- nil:
			default:
			}
		}
		for want := u.log.Size(); ; {
			select {
			case size := <-cosigned:
				if size != want {
					continue
				}
			case <-ctx.Done():
				t.Fatalf("with one witness hanging, the other did not cosign size %d: %v", want, ctx.Err())
			}
			break
		}
	}
}
