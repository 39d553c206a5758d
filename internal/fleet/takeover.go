package fleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// The lines package ledger/station logs at Info (proxy -v) when a proxy
// holds the ledger at start, stands by, or takes over.
const (
	lineHolding   = "holding the ledger: shipping every chain of the receipts directory"
	lineStandby   = "another proxy holds the ledger and ships this receipts directory"
	lineTookOver  = "took over the ledger from a proxy that stopped"
	takeoverBound = 10 * time.Second // how long Takeover waits for one
)

// kind is what a member said about the ledger.
type kind int

const (
	holding kind = iota
	standby
	tookOver
)

// kindLines are the lines of each kind, by kind.
var kindLines = [...]string{holding: lineHolding, standby: lineStandby, tookOver: lineTookOver}

// event is a station line of a member's stderr and when it was read.
type event struct {
	member int
	kind   kind
	at     time.Time
}

// events are the station lines of every member, in the order read.
type events struct {
	mu      sync.Mutex
	list    []event
	changed chan struct{} // closed and replaced on each new event
}

func newEvents() *events { return &events{changed: make(chan struct{})} }

func (e *events) add(ev event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, ev)
	close(e.changed)
	e.changed = make(chan struct{})
}

// snapshot returns the events so far and a channel closed at the next.
func (e *events) snapshot() ([]event, <-chan struct{}) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.list), e.changed
}

// wait returns the events once found is true of them, or ctx's error.
func (e *events) wait(ctx context.Context, found func([]event) bool) ([]event, error) {
	for {
		list, changed := e.snapshot()
		if found(list) {
			return list, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return list, ctx.Err()
		}
	}
}

// lineWatch is a member's stderr: it records the station's lines as
// events, timed when they are read.
type lineWatch struct {
	member  int
	events  *events
	partial []byte // written by one goroutine, os/exec's copier
}

func (w *lineWatch) Write(p []byte) (int, error) {
	now := time.Now()
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(w.partial[:i])
		w.partial = w.partial[i+1:]
		for k, s := range kindLines {
			if strings.Contains(line, s) {
				w.events.add(event{member: w.member, kind: kind(k), at: now})
			}
		}
	}
}

// holder waits until every live member has said whether it holds the
// ledger, and returns the one that does.
func (f *Fleet) holder(ctx context.Context) (*member, error) {
	live := f.live()
	var h *member
	_, err := f.events.wait(ctx, func(list []event) bool {
		h = nil
		said := map[int]bool{}
		for _, ev := range list {
			said[ev.member] = true
			if ev.kind != standby && !f.members[ev.member].dead {
				h = f.members[ev.member]
			}
		}
		return h != nil && !slices.ContainsFunc(live, func(m *member) bool { return !said[m.id] })
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for the live proxies to say which one holds the ledger (run them with -v): %w", err)
	}
	return h, nil
}

// Takeover starts procs members (at least 2) with -v and, rounds times:
// sends one deny through each live member, SIGKILLs the member holding
// the embedded ledger, and times from the signal until another member's
// stderr says it took over; then starts a new member in place of the
// killed one. It stops the fleet and checks it (see Check): the
// takeovers lost no receipt. It returns the times in the order taken.
func Takeover(ctx context.Context, cfg Config, procs, rounds int) (took []time.Duration, err error) {
	if procs < 2 {
		return nil, fmt.Errorf("fleet: a takeover needs 2 or more proxies, not %d", procs)
	}
	cfg.Proxy.Flags = append(slices.Clone(cfg.Proxy.Flags), "-v")
	f, err := Start(ctx, cfg, procs)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, f.Close())
		}
	}()
	for range rounds {
		d, err := f.takeover(ctx)
		if err != nil {
			return took, err
		}
		took = append(took, d)
		if err := f.Add(ctx); err != nil {
			return took, err
		}
	}
	if err := f.Close(); err != nil {
		return took, err
	}
	_, err = f.Check()
	return took, err
}

// takeover is one round of Takeover, without the new member.
func (f *Fleet) takeover(ctx context.Context) (time.Duration, error) {
	if _, err := f.Deny(ctx, len(f.live())); err != nil {
		return 0, err
	}
	h, err := f.holder(ctx)
	if err != nil {
		return 0, err
	}
	before, _ := f.events.snapshot()
	killed, err := h.kill(ctx)
	if err != nil {
		return 0, err
	}
	wctx, cancel := context.WithTimeout(ctx, takeoverBound)
	defer cancel()
	list, err := f.events.wait(wctx, func(list []event) bool {
		return slices.ContainsFunc(list[len(before):], func(ev event) bool { return ev.kind == tookOver })
	})
	if err != nil {
		return 0, fmt.Errorf("no proxy took over the ledger within %v of SIGKILL of proxy %d, its holder: %w", takeoverBound, h.id, err)
	}
	i := slices.IndexFunc(list[len(before):], func(ev event) bool { return ev.kind == tookOver })
	return list[len(before)+i].at.Sub(killed), nil
}
