package ledger

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bankdoor/bankdoor/ledger/internal/store"
)

// holdStore holds the committer, once armed, after each commit is durable
// and before its checkpoint is published: the moment at which the store
// holds a head that no published checkpoint covers yet.
type holdStore struct {
	store.Store
	armed   atomic.Bool
	held    chan struct{} // receives once per held commit
	release chan struct{} // lets the held commit go on
}

func (s *holdStore) Update(fn func(store.Tx) error) error {
	err := s.Store.Update(fn)
	if s.armed.Load() {
		s.held <- struct{}{}
		<-s.release
	}
	return err
}

// TestHeadCoveredByCheckpoint: a head read while its commit is durable but
// its checkpoint not yet published is returned only once the checkpoint
// covering it is. A proxy that stopped at that moment shipped a receipt
// (the spool's Head said the log held it) and then anchored the previous
// checkpoint, which did not cover it (proxy_witness.txt, 6 runs in 30).
func TestHeadCoveredByCheckpoint(t *testing.T) {
	t.Parallel()
	a := newAgent(1)
	tl := openTestLog(t, 0, a)
	tl.Close()
	bs, err := store.OpenBolt(tl.path, false)
	if err != nil {
		t.Fatal(err)
	}
	hs := &holdStore{Store: bs, held: make(chan struct{}), release: make(chan struct{})}
	l, err := open(hs, tl.path, tl.opts, defaultIndexLag)
	if err != nil {
		bs.Close()
		t.Fatal(err)
	}
	defer l.Close()
	var releaseOnce sync.Once
	release := func() {
		releaseOnce.Do(func() {
			hs.armed.Store(false)
			close(hs.release)
		})
	}
	defer release() // before Close, which waits for the committer
	hs.armed.Store(true)

	appended := make(chan error, 1)
	go func() {
		_, err := l.Append(context.Background(), [][]byte{a.Next(t)})
		appended <- err
	}()
	<-hs.held // seq 1 is durable; the checkpoint of size 1 is not published

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	h, ok, err := l.Head(ctx, a.KeyID)
	if err == nil {
		t.Fatalf("Head during the commit = %+v, %v with the published checkpoint at size %d; want it to wait for the checkpoint covering index %d",
			h, ok, l.Size(), h.Index)
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Head with a cancelled context during the commit: %v; want context.Canceled", err)
	}

	type head struct {
		h    Head
		ok   bool
		size uint64
		err  error
	}
	got := make(chan head, 1)
	go func() {
		h, ok, err := l.Head(context.Background(), a.KeyID)
		got <- head{h, ok, l.Size(), err}
	}()
	release()
	if err := <-appended; err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil || !r.ok || r.h.Seq != 1 {
		t.Fatalf("Head = %+v, %v, %v; want seq 1", r.h, r.ok, r.err)
	}
	if r.size <= r.h.Index {
		t.Fatalf("Head returned index %d while the published checkpoint had size %d", r.h.Index, r.size)
	}
}
