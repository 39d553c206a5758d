package report

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/bankdoor/bankdoor/anchor"
	"github.com/bankdoor/bankdoor/anchor/tlogwitness"
)

// budgetID is the row of the cosigned-checkpoint lag under the anchoring
// budget.
const budgetID, budgetCallsID = "anchor-budget-lag", "anchor-budget-requests"

// budgetSettings are the interval and load of the budget row: the
// figures issue 17 asks for (2 s, 1,000 receipts a second for 10 s), or
// 1 s for 3 s in quick mode.
func budgetSettings(mode string) (interval, load time.Duration, rate int) {
	if mode == "quick" {
		return time.Second, 3 * time.Second, 1000
	}
	return 2 * time.Second, 10 * time.Second, 1000
}

// putTimes is a CosignatureStore that remembers when each cosignature
// was stored, and of which size.
type putTimes struct {
	anchor.CosignatureStore
	mu   sync.Mutex
	puts []storedAt
}

type storedAt struct {
	at   time.Time
	size uint64
}

func (p *putTimes) Put(witness string, size uint64, c []byte) error {
	if err := p.CosignatureStore.Put(witness, size, c); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.puts = append(p.puts, storedAt{time.Now(), size})
	return nil
}

// covered returns when a cosignature of a tree of at least size was first
// stored, and whether one was.
func (p *putTimes) covered(size uint64) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.puts {
		if s.size >= size {
			return s.at, true
		}
	}
	return time.Time{}, false
}

func (p *putTimes) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.puts)
}

// BudgetLag appends receipts to the anchoring log at rate a second for
// load, a batch every 10 ms, while the anchoring loop (anchor.Anchorer.Run,
// woken by the log's Watch as in ledger serve) keeps interval between two
// add-checkpoint requests to the omniwitness. Each batch's lag runs from
// its durable append to the storing of a verified cosignature of a tree
// that holds it; the note gives the requests and the last batch's lag.
func (lb *LedgerBench) BudgetLag(ctx context.Context, al *anchorLog, interval, load time.Duration, rate int) ([]Measurement, error) {
	lb.progress("anchor: cosigned lag with a %v anchoring interval, %d receipts/s for %v", interval, rate, load)
	if al.witness == nil {
		return nil, fmt.Errorf("no omniwitness: %s", al.skipped)
	}
	as, err := al.agents(1)
	if err != nil {
		return nil, err
	}
	store := &putTimes{CosignatureStore: al.store}
	a, err := al.budgetAnchorer(store, interval)
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(runCtx, al.Watch) }()
	defer func() { cancel(); <-done }()
	first := al.Size()
	batches, err := appendSteadily(ctx, al, as[0].Next, rate, load)
	if err != nil {
		return nil, err
	}
	stopped, last := time.Now(), batches[len(batches)-1]
	for deadline := stopped.Add(interval + 30*time.Second); ; time.Sleep(time.Millisecond) {
		if _, ok := store.covered(last.size); ok {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("size %d not cosigned %v after the appends stopped", last.size, time.Since(stopped).Round(time.Millisecond))
		}
	}
	lags := make([]time.Duration, len(batches))
	for i, b := range batches {
		at, _ := store.covered(b.size)
		lags[i] = at.Sub(b.at)
	}
	lagRow := Measurement{ID: budgetID, Section: "anchor", Status: StatusMeasured, Unit: "ms", N: len(lags), Dist: Distribution(slices.Clone(lags), time.Millisecond),
		What: fmt.Sprintf("append to a stored omniwitness cosignature covering it, --witness-interval %v, %d receipts/s for %v", interval, rate, load),
		Note: fmt.Sprintf("%d receipts in %d batches; the last receipt cosigned %v after the appends stopped", int(last.size-first), len(batches), lags[len(lags)-1].Round(time.Millisecond))}
	callsRow := Measurement{ID: budgetCallsID, Section: "anchor", Status: StatusMeasured, Unit: "requests", N: 1, Value: float64(store.count()),
		What: fmt.Sprintf("add-checkpoint requests the omniwitness cosigned over the same run (--witness-interval %v)", interval),
		Note: fmt.Sprintf("at most %d at one per interval over %v and the interval after", budgetMaxCalls(interval, load), load)}
	return []Measurement{lagRow, callsRow}, nil
}

// budgetMaxCalls is the most add-checkpoint requests the interval allows
// over load and the interval after it.
func budgetMaxCalls(interval, load time.Duration) int { return int(load/interval) + 2 }

// budgetAnchorer is an Anchorer for the report's omniwitness with interval.
func (al *anchorLog) budgetAnchorer(store anchor.CosignatureStore, interval time.Duration) (*anchor.Anchorer, error) {
	client, err := tlogwitness.New(al.witness.URL, al.witness.VKey)
	if err != nil {
		return nil, err
	}
	quiet := slog.New(slog.DiscardHandler)
	client.Logger = quiet
	return anchor.New(anchor.Options{Log: al.Log, LogKey: al.verifier, Store: store, Witnesses: []*tlogwitness.Client{client}, Interval: interval, Logger: quiet})
}

// appended is a batch appended at a time, the log's size after it.
type appended struct {
	at   time.Time
	size uint64
}

// appendSteadily appends rate/100 receipts from next every 10 ms for load.
func appendSteadily(ctx context.Context, al *anchorLog, next func() ([]byte, error), rate int, load time.Duration) ([]appended, error) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var out []appended
	for start := time.Now(); time.Since(start) < load; <-tick.C {
		rs := make([][]byte, max(1, rate/100))
		for i := range rs {
			r, err := next()
			if err != nil {
				return nil, err
			}
			rs[i] = r
		}
		idx, err := al.Append(ctx, rs)
		if err != nil {
			return nil, err
		}
		out = append(out, appended{time.Now(), idx[len(idx)-1] + 1})
	}
	return out, nil
}

// budgetRows is BudgetLag's rows, or rows that say why there are none.
func budgetRows(ctx context.Context, lb *LedgerBench, al *anchorLog, w Witness, mode string) []Measurement {
	interval, load, rate := budgetSettings(mode)
	const what = "cosigned lag under the anchoring budget"
	if w.Bin == "" {
		return []Measurement{{ID: budgetID, Section: "anchor", What: what, Status: "not measured: " + w.Skipped}}
	}
	ms, err := lb.BudgetLag(ctx, al, interval, load, rate)
	if err != nil {
		return []Measurement{rowOrFailure(Measurement{}, err, budgetID, "anchor", what)}
	}
	return ms
}

// budgetClaim: the witness got at most one request per interval, and
// every receipt was cosigned within the interval plus a second for the
// witness's answer.
func budgetClaim(r *Report) Claim {
	interval, load, _ := budgetSettings(r.Settings.Mode)
	c := Claim{ID: "witness-budget", Evidence: "m-" + budgetID,
		Text: fmt.Sprintf("With --witness-interval %v a witness gets at most one add-checkpoint per interval, and every receipt is cosigned within the interval (plus the witness's answer, here 1 s) of its append", interval)}
	lag, ok1 := find(r.Measurements, budgetID)
	calls, ok2 := find(r.Measurements, budgetCallsID)
	if !ok1 || lag.Status != StatusMeasured || !ok2 {
		c.Status, c.Figure = "not measured: no budget row", "-"
		if ok1 {
			c.Status = lag.Status
		}
		return c
	}
	limit := float64((interval + time.Second) / time.Millisecond)
	c.Figure = fmt.Sprintf("%.0f requests in %v (at most %d); lag p50 %s, max %s", calls.Value, load, budgetMaxCalls(interval, load), num(lag.Dist.P50, lag.Unit), num(lag.Dist.Max, lag.Unit))
	switch {
	case calls.Value > float64(budgetMaxCalls(interval, load)):
		c.Status = "failed: more requests than the interval allows"
	case lag.Dist.Max > limit:
		c.Status = fmt.Sprintf("failed: a receipt waited %s, over %s", num(lag.Dist.Max, lag.Unit), num(limit, lag.Unit))
	default:
		c.Status = StatusHeld
	}
	return c
}
