package report

import (
	"context"
	"fmt"
	"io"
	"math/bits"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"

	"github.com/bankdoor/bankdoor/internal/agentchain"
	"github.com/bankdoor/bankdoor/internal/perf"
)

// LedgerBench measures the ledger (package ledger) in process, through
// its public API, with real signed receipts from fresh agent keys: the
// same code the proxy embeds and `bankdoor ledger serve` runs.
type LedgerBench struct {
	Dir      string // for the bbolt files
	Progress io.Writer
}

func (lb *LedgerBench) progress(format string, a ...any) {
	fmt.Fprintf(lb.Progress, "report: "+format+"\n", a...)
}

// Appends measures durable appends per second from 64 concurrent agents,
// one receipt per Append call, with group commit (the default MaxBatch)
// or with one receipt per transaction (MaxBatch 1). The receipts are
// signed before the clock starts.
func (lb *LedgerBench) Appends(ctx context.Context, id string, n, maxBatch int) (Measurement, error) {
	const appenders = 64
	what := map[bool]string{true: "durable appends, group commit (64 agents, one receipt per call)", false: "durable appends, one receipt per transaction (64 agents)"}[maxBatch == 0]
	lb.progress("ledger: %d %s", n, what)
	bl, err := openLog(lb.Dir, id, maxBatch)
	if err != nil {
		return Measurement{}, err
	}
	defer bl.Close()
	as, err := bl.agents(appenders)
	if err != nil {
		return Measurement{}, err
	}
	work, err := signRoundRobin(as, n)
	if err != nil {
		return Measurement{}, err
	}
	d, err := bl.appendConcurrently(ctx, work)
	if err != nil {
		return Measurement{}, fmt.Errorf("ledger %s: %w", id, err)
	}
	if bl.Size() != uint64(n) {
		return Measurement{}, fmt.Errorf("ledger %s: size %d after %d appends", id, bl.Size(), n)
	}
	return Measurement{ID: id, Section: "ledger", What: what, Status: StatusMeasured, Unit: "receipts/s", N: n, Value: float64(n) / d.Seconds()}, nil
}

// CheckpointLatency appends n receipts at about 1,000 a second from 8
// agents and measures, for each, the time from the Append call to the
// first checkpoint on Watch that covers it.
func (lb *LedgerBench) CheckpointLatency(ctx context.Context, n int) (Measurement, error) {
	const agents, rate = 8, 1000
	lb.progress("ledger: time to a covering checkpoint, %d receipts at %d/s", n, rate)
	bl, err := openLog(lb.Dir, "checkpoint-latency", 0)
	if err != nil {
		return Measurement{}, err
	}
	defer bl.Close()
	as, err := bl.agents(agents)
	if err != nil {
		return Measurement{}, err
	}
	work, err := signRoundRobin(as, n)
	if err != nil {
		return Measurement{}, err
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	all, err := perf.CoveringLatency(work, rate, func(r []byte) (uint64, error) {
		idx, err := bl.Append(ctx, [][]byte{r})
		if err != nil {
			return 0, err
		}
		return idx[0], nil
	}, watchSizes(wctx, bl))
	if err != nil {
		return Measurement{}, err
	}
	return Measurement{ID: "checkpoint-latency", Section: "ledger", What: "Append call to a covering signed checkpoint on Watch (8 agents, 1,000 receipts/s)",
		Status: StatusMeasured, Unit: "ms", N: len(all), Dist: Distribution(all, time.Millisecond)}, nil
}

// signRoundRobin signs n receipts, the i-th by agent i mod len(as), and
// returns each agent's receipts in chain order.
func signRoundRobin(as []*agentchain.Agent, n int) ([][][]byte, error) {
	work := make([][][]byte, len(as))
	for i := range n {
		r, err := as[i%len(as)].Next()
		if err != nil {
			return nil, err
		}
		work[i%len(as)] = append(work[i%len(as)], r)
	}
	return work, nil
}

// watchSizes records on a clock when the log's Watch first showed each
// checkpoint size; it stops with ctx.
func watchSizes(ctx context.Context, bl *benchLog) *perf.SizeClock {
	c := perf.NewSizeClock()
	w := bl.Watch(ctx)
	go func() {
		for n := range w {
			now := time.Now()
			if cp, _, _, err := log.ParseCheckpoint(n, reportOrigin, bl.verifier); err == nil {
				c.Saw(cp.Size, now)
			}
		}
	}()
	return c
}

// Proofs grows one log to each of sizes in turn (two agents appending
// requests of 256 receipts) and at each size times proofs inclusion
// proofs of random leaves at the current checkpoint, verifying each
// against the signed root. It also reports the peak heap while growing.
func (lb *LedgerBench) Proofs(ctx context.Context, sizes []uint64, proofs int) ([]Measurement, error) {
	bl, err := openLog(lb.Dir, "proofs", 0)
	if err != nil {
		return nil, err
	}
	defer bl.Close()
	as, err := bl.agents(2)
	if err != nil {
		return nil, err
	}
	base := perf.LiveHeap()
	peak := perf.SampleHeap()
	var ms []Measurement
	maxLen := 0
	for _, size := range sizes {
		lb.progress("ledger: growing the log to %d receipts", size)
		if err := lb.grow(ctx, bl, as, size); err != nil {
			peak()
			return nil, err
		}
		m, n, err := timeProofs(bl, proofs)
		if err != nil {
			peak()
			return nil, err
		}
		ms, maxLen = append(ms, m), max(maxLen, n)
	}
	p := peak()
	ms = append(ms, Measurement{ID: "ledger-peak-heap", Section: "ledger", What: fmt.Sprintf("peak Go heap while appending up to %d receipts", bl.Size()),
		Status: StatusMeasured, Unit: "MiB", N: int(bl.Size()), Value: float64(p) / (1 << 20),
		Note: fmt.Sprintf("live heap %.1f MiB before, %.1f MiB after", float64(base)/(1<<20), float64(perf.LiveHeap())/(1<<20))})
	return ms, nil
}

// grow appends receipts from the agents until the log holds size,
// saying so every 100,000 receipts.
func (lb *LedgerBench) grow(ctx context.Context, bl *benchLog, as []*agentchain.Agent, size uint64) error {
	const per = 256
	var mu sync.Mutex
	reserved := bl.Size()
	take := func() int { // receipts this goroutine appends next; 0 when done
		mu.Lock()
		defer mu.Unlock()
		k := min(per, size-reserved)
		if reserved/100_000 != (reserved+k)/100_000 {
			lb.progress("ledger: %d receipts signed and sent", reserved+k)
		}
		reserved += k
		return int(k)
	}
	errs := make(chan error, len(as))
	var wg sync.WaitGroup
	for _, a := range as {
		wg.Go(func() {
			for k := take(); k > 0; k = take() {
				// One agent's chain must arrive in order: it waits for
				// each of its requests before signing the next.
				rs, err := a.Chain(k)
				if err == nil {
					_, err = bl.Append(ctx, rs)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// timeProofs times n inclusion proofs of random leaves at the log's
// checkpoint and verifies each; it returns the measurement and the
// longest proof, in hashes.
func timeProofs(bl *benchLog, n int) (Measurement, int, error) {
	cp, err := bl.checkpoint()
	if err != nil {
		return Measurement{}, 0, err
	}
	rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), cp.Size))
	lat := make([]time.Duration, 0, n)
	longest := 0
	for range n {
		i := rnd.Uint64N(cp.Size)
		start := time.Now()
		p, err := bl.InclusionProof(i, cp.Size)
		lat = append(lat, time.Since(start))
		if err != nil {
			return Measurement{}, 0, fmt.Errorf("inclusion proof of leaf %d at size %d: %w", i, cp.Size, err)
		}
		e, err := bl.Entries(i, 1)
		if err != nil {
			return Measurement{}, 0, err
		}
		if err := proof.VerifyInclusion(rfc6962.DefaultHasher, i, cp.Size, rfc6962.DefaultHasher.HashLeaf(e[0]), p, cp.Hash); err != nil {
			return Measurement{}, 0, fmt.Errorf("inclusion proof of leaf %d at size %d does not verify against the signed checkpoint: %w", i, cp.Size, err)
		}
		if len(p) > bits.Len64(cp.Size-1) {
			return Measurement{}, 0, fmt.Errorf("inclusion proof of leaf %d at size %d has %d hashes, more than ceil(log2(size)) = %d", i, cp.Size, len(p), bits.Len64(cp.Size-1))
		}
		longest = max(longest, len(p))
	}
	return Measurement{ID: fmt.Sprintf("inclusion-proof-%d", cp.Size), Section: "ledger",
		What:   fmt.Sprintf("inclusion proof at %d leaves, verified against the signed checkpoint", cp.Size),
		Status: StatusMeasured, Unit: "µs", N: n, Dist: Distribution(lat, time.Microsecond),
		Note: fmt.Sprintf("at most %d hashes", longest)}, longest, nil
}
