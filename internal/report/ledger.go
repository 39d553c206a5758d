package report

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"

	"github.com/bankdoor/bankdoor/internal/agentchain"
	"github.com/bankdoor/bankdoor/internal/perf"
	"github.com/bankdoor/bankdoor/internal/pgtest"
)

// LedgerBench measures the ledger (package ledger) in process, through
// its public API, with real signed receipts from fresh agent keys: the
// same code the proxy embeds and `bankdoor ledger serve` runs.
type LedgerBench struct {
	Dir      string // for the bbolt files
	Progress io.Writer
	// Postgres, if set, makes a new PostgreSQL database for each log
	// (as `ledger serve --db postgres://...` keeps one) in place of a
	// bbolt file in Dir; the rows are then in section "postgres", their
	// ids marked -postgres (see id).
	Postgres func() (pgtest.DB, error)
}

// backendSuffix marks the ids of the rows measured on PostgreSQL.
const backendSuffix = "-postgres"

// id is the row id base on this bench's backend: base itself on bbolt,
// base-postgres on PostgreSQL.
func (lb *LedgerBench) id(base string) string {
	if lb.Postgres != nil {
		return base + backendSuffix
	}
	return base
}

// section is the section of this bench's rows.
func (lb *LedgerBench) section() string {
	if lb.Postgres != nil {
		return "postgres"
	}
	return "ledger"
}

// where says where this bench's logs are, for its progress lines (a
// row's section says it).
func (lb *LedgerBench) where() string {
	if lb.Postgres != nil {
		return ", PostgreSQL"
	}
	return ""
}

func (lb *LedgerBench) progress(format string, a ...any) {
	fmt.Fprintf(lb.Progress, "report: "+format+"\n", a...)
}

// Appends measures durable appends per second from the given number of
// concurrent agents, each one goroutine appending its own chain one
// receipt per Append call, with group commit (the default MaxBatch) or
// with one receipt per transaction (MaxBatch 1), to one log served by
// the given number of Logs (ledger servers; more than one needs
// lb.Postgres), agent i's receipts to Log i mod servers. The receipts
// are signed before the clock starts.
//
// An appender waits for each answer before it sends its next receipt,
// so a commit holds at most one receipt per appender: 64 appenders are
// bounded by 64 receipts a commit (a disk's fsync pair), 1,024 are not.
func (lb *LedgerBench) Appends(ctx context.Context, id string, n, maxBatch, appenders, servers int) (Measurement, error) {
	what := fmt.Sprintf("durable appends, group commit (%d agents, one receipt per call)", appenders)
	if maxBatch != 0 {
		what = fmt.Sprintf("durable appends, one receipt per transaction (%d agents)", appenders)
	}
	if servers > 1 {
		what = fmt.Sprintf("durable appends, group commit, %d ledger servers on one database (%d agents each, one receipt per call)", servers, appenders/servers)
	}
	lb.progress("ledger: %d %s%s", n, what, lb.where())
	ls, err := lb.openLogs(id, maxBatch, servers)
	if err != nil {
		return Measurement{}, err
	}
	defer closeLogs(ls)
	as, err := ls[0].agents(appenders)
	if err != nil {
		return Measurement{}, err
	}
	work, err := signRoundRobin(as, n)
	if err != nil {
		return Measurement{}, err
	}
	d, err := appendConcurrently(ctx, ls, work)
	if err != nil {
		return Measurement{}, fmt.Errorf("ledger %s: %w", id, err)
	}
	var size uint64
	for _, l := range ls {
		size = max(size, l.Size()) // the last to commit caught up with the others
	}
	if size != uint64(n) {
		return Measurement{}, fmt.Errorf("ledger %s: size %d after %d appends", id, size, n)
	}
	return Measurement{ID: id, Section: lb.section(), What: what, Status: StatusMeasured, Unit: "receipts/s", N: n, Value: float64(n) / d.Seconds()}, nil
}

// CheckpointLatency appends n receipts at about 1,000 a second from 8
// agents and measures, for each, the time from the Append call to the
// first checkpoint on Watch that covers it.
func (lb *LedgerBench) CheckpointLatency(ctx context.Context, n int) (Measurement, error) {
	const agents, rate = 8, 1000
	lb.progress("ledger: time to a covering checkpoint, %d receipts at %d/s%s", n, rate, lb.where())
	id := lb.id("checkpoint-latency")
	bl, err := lb.openLog(id, 0)
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
	return Measurement{ID: id, Section: lb.section(), What: "Append call to a covering signed checkpoint on Watch (8 agents, 1,000 receipts/s)",
		Status: StatusMeasured, Unit: "ms", N: len(all), Dist: Distribution(all, time.Millisecond)}, nil
}

// signRoundRobin signs n receipts, the i-th by agent i mod len(as), and
// returns each agent's receipts in chain order.
func signRoundRobin(as []*agentchain.Agent, n int) ([][][]byte, error) {
	work := make([][][]byte, len(as))
	errs := make([]error, len(as))
	var wg sync.WaitGroup
	for a := range as {
		wg.Go(func() {
			for i := a; i < n; i += len(as) {
				r, err := as[a].Next()
				if err != nil {
					errs[a] = err
					return
				}
				work[a] = append(work[a], r)
			}
		})
	}
	wg.Wait()
	return work, errors.Join(errs...)
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
// against the signed root. After the proof rows it returns one peak-heap
// row per size (see growMeasured).
func (lb *LedgerBench) Proofs(ctx context.Context, sizes []uint64, proofs int) ([]Measurement, error) {
	if len(sizes) == 0 {
		return nil, nil
	}
	bl, err := lb.openLog("proofs", 0)
	if err != nil {
		return nil, err
	}
	defer bl.Close()
	as, err := bl.agents(2)
	if err != nil {
		return nil, err
	}
	window := slices.Min(sizes)
	var ms, heap []Measurement
	for i, size := range sizes {
		lb.progress("ledger: growing the log to %d receipts", size)
		h, err := lb.growMeasured(ctx, bl, as, size, window, heapID(size, i == len(sizes)-1))
		if err != nil {
			return nil, err
		}
		m, _, err := lb.timeProofs(bl, proofs)
		if err != nil {
			return nil, err
		}
		ms, heap = append(ms, m), append(heap, h)
	}
	return append(ms, heap...), nil
}

// ProofsAt grows a log to size as Proofs does and times proofs inclusion
// proofs at that size, without the peak-heap rows.
func (lb *LedgerBench) ProofsAt(ctx context.Context, size uint64, proofs int) (Measurement, error) {
	bl, err := lb.openLog(lb.id("proofs"), 0)
	if err != nil {
		return Measurement{}, err
	}
	defer bl.Close()
	as, err := bl.agents(2)
	if err != nil {
		return Measurement{}, err
	}
	lb.progress("ledger: growing the log to %d receipts%s", size, lb.where())
	if err := lb.grow(ctx, bl, as, size); err != nil {
		return Measurement{}, err
	}
	m, _, err := lb.timeProofs(bl, proofs)
	return m, err
}

// heapIDPrefix starts the id of every peak-heap row: heapIDPrefix for the
// largest log, heapIDPrefix-SIZE for the others.
const heapIDPrefix = "ledger-peak-heap"

func heapID(size uint64, largest bool) string {
	if largest {
		return heapIDPrefix
	}
	return fmt.Sprintf("%s-%d", heapIDPrefix, size)
}

// growMeasured grows the log to size and returns row id: the peak Go
// heap (perf.SampleHeap) while appending the last window receipts up to
// size, or all of them if the log held fewer before. Each window starts
// from a collected heap (perf.LiveHeap) and ends before the proofs are
// timed, so every size is measured over the same appends and nothing
// else; the note adds the peak over the whole growth from the log's
// previous size, where that is more than the window.
func (lb *LedgerBench) growMeasured(ctx context.Context, bl *benchLog, as []*agentchain.Agent, size, window uint64, id string) (Measurement, error) {
	from := bl.Size()
	start := max(from, size-min(size, window))
	var lead uint64 // peak while growing from from to start
	if start > from {
		stop := perf.SampleHeap()
		err := lb.grow(ctx, bl, as, start)
		if lead = stop(); err != nil {
			return Measurement{}, err
		}
	}
	live := perf.LiveHeap()
	stop := perf.SampleHeap()
	err := lb.grow(ctx, bl, as, size)
	peak := stop()
	if err != nil {
		return Measurement{}, err
	}
	note := fmt.Sprintf("from a collected heap of %s; %s live after", mib(live), mib(perf.LiveHeap()))
	if start > from {
		note += fmt.Sprintf("; %s over the whole growth from %d", mib(max(lead, peak)), from)
	}
	return Measurement{ID: id, Section: "ledger", Status: StatusMeasured, Unit: "MiB", N: int(size), Value: float64(peak) / (1 << 20), Note: note,
		What: fmt.Sprintf("peak Go heap while appending receipts %d to %d of the log (growing only; inclusion proofs not included)", start+1, size)}, nil
}

// mib formats a number of bytes in MiB.
func mib(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

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
func (lb *LedgerBench) timeProofs(bl *benchLog, n int) (Measurement, int, error) {
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
	return Measurement{ID: fmt.Sprintf("%s-%d", lb.id("inclusion-proof"), cp.Size), Section: lb.section(),
		What:   fmt.Sprintf("inclusion proof at %d leaves, verified against the signed checkpoint", cp.Size),
		Status: StatusMeasured, Unit: "µs", N: n, Dist: Distribution(lat, time.Microsecond),
		Note: fmt.Sprintf("at most %d hashes", longest)}, longest, nil
}
