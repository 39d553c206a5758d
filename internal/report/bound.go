package report

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/transparency-dev/merkle/rfc6962"

	"github.com/bankdoor/bankdoor/ledger/receipt"
)

// boundBatch is the request size of the bound's commit measurement;
// boundPasses the passes over the receipts that time the checks.
const (
	boundBatch  = 256
	boundPasses = 5
)

// Bound measures, in this run and on this machine, the physical bound of
// durable appends, against which the ledger's own figures are judged
// (issue 16, which defines it as "Ed25519 verify + hashing + amortised
// commit, 2 cores"). It measures:
//
//   - c, the CPU time per receipt of the checks every append must make
//     and cannot share: receipt.Open (strict parse, the key_id, the
//     Ed25519 signature) and the leaf hash, as the
//     ledger makes them, measured on one goroutine over
//     n receipts of 64 agents (the fastest of five passes); these run on
//     every core at once;
//   - k, the time per receipt of the durable commits (the writes of a
//     transaction, its signed checkpoint and bbolt's two fdatasyncs) when
//     the same n receipts are appended in requests of 256 from one
//     caller, from the ledger's Stats; commits are serial;
//   - a, the CPU time per receipt those appends take beyond c (the
//     commit's hashing, page writes, checkpoint signature and the garbage
//     they leave), from the process's CPU time while they ran.
//
// The bound is min(cores/(c+a), 1/k) receipts a second: all the CPU work
// on every core, and no faster than the serial committer. (An earlier
// model, 1/max(c/cores, k), took the commit to cost no CPU; it is given
// in the row for comparison.) The checks alone (what offline
// verification must do per receipt) bound that at cores/c. It returns
// the bound row, and c and cores for the ratios, and all, the wall time
// per receipt of the same checks on cores goroutines at once (the fastest
// of five passes): cores/c takes every core to be as free as the one
// that timed c, and on a shared machine all shows what this run had.
func (lb *LedgerBench) Bound(ctx context.Context, n int) (m Measurement, c, all time.Duration, cores int, err error) {
	lb.progress("ledger: the physical bound, %d receipts", n)
	cores = runtime.GOMAXPROCS(0)
	bl, err := lb.openLog("bound", 0)
	if err != nil {
		return m, 0, 0, 0, err
	}
	defer bl.Close()
	as, err := bl.agents(64)
	if err != nil {
		return m, 0, 0, 0, err
	}
	work, err := signRoundRobin(as, n)
	if err != nil {
		return m, 0, 0, 0, err
	}
	keys := map[string]ed25519.PublicKey{}
	for _, a := range as {
		keys[a.KeyID] = a.Public()
	}
	key := func(r *receipt.Receipt) (ed25519.PublicKey, error) {
		if k, ok := keys[r.KeyID]; ok {
			return k, nil
		}
		return nil, fmt.Errorf("no key %s", r.KeyID)
	}
	var flat [][]byte
	for i := range n {
		flat = append(flat, work[i%len(work)][i/len(work)])
	}
	// The fastest of boundPasses passes: the checks' cost, not a pause of
	// the machine's.
	for range boundPasses {
		start := time.Now()
		for _, r := range flat {
			if _, err := receipt.Open(r, key); err != nil {
				return m, 0, 0, 0, err
			}
			rfc6962.DefaultHasher.HashLeaf(r)
		}
		if d := time.Since(start) / time.Duration(n); c == 0 || d < c {
			c = d
		}
	}
	all, err = checksAllCores(flat, key, cores)
	if err != nil {
		return m, 0, 0, 0, err
	}

	// Requests of 256 in chain order: each agent's receipts in seq order.
	cpu0, err := processCPU()
	if err != nil {
		return m, 0, 0, 0, err
	}
	for i := 0; i < n; i += boundBatch {
		if _, err := bl.Append(ctx, flat[i:min(i+boundBatch, n)]); err != nil {
			return m, 0, 0, 0, fmt.Errorf("ledger bound: %w", err)
		}
	}
	cpu1, err := processCPU()
	if err != nil {
		return m, 0, 0, 0, err
	}
	a := max((cpu1-cpu0)/time.Duration(n)-c, 0)
	st := bl.Stats()
	if st.Receipts != uint64(n) {
		return m, 0, 0, 0, fmt.Errorf("ledger bound: %d receipts committed of %d", st.Receipts, n)
	}
	k := st.Total / time.Duration(st.Receipts)
	stage := max((c+a)/time.Duration(cores), k)
	overlap := float64(time.Second) / float64(max(c/time.Duration(cores), k))
	m = Measurement{ID: "ledger-bound", Section: "ledger", Status: StatusMeasured, Unit: "receipts/s", N: n,
		What: fmt.Sprintf("physical bound of durable appends on this machine: min(cores/(c+a), 1/k), with checks c = %.1f µs a receipt (strict parse, Ed25519 verify, leaf hash, one core), the commit's CPU a = %.1f µs a receipt, serial commits k = %.1f µs a receipt (requests of %d, mean batch %.0f), cores = %d; with no CPU for the commit, 1/max(c/cores, k) = %.0f receipts/s",
			us(c), us(a), us(k), boundBatch, float64(st.Receipts)/float64(st.Commits), cores, overlap),
		Value: float64(time.Second) / float64(stage)}
	return m, c, all, cores, nil
}

// checksAllCores times the bound's checks over flat split among cores
// goroutines at once, and returns the fastest pass's wall time per
// receipt.
func checksAllCores(flat [][]byte, key func(*receipt.Receipt) (ed25519.PublicKey, error), cores int) (time.Duration, error) {
	var best time.Duration
	for range boundPasses {
		errs := make([]error, cores)
		var wg sync.WaitGroup
		start := time.Now()
		for i := range cores {
			part := flat[i*len(flat)/cores : (i+1)*len(flat)/cores]
			wg.Go(func() {
				for _, r := range part {
					if _, err := receipt.Open(r, key); err != nil {
						errs[i] = err
						return
					}
					rfc6962.DefaultHasher.HashLeaf(r)
				}
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return 0, err
		}
		best = minPositive(best, time.Since(start)/time.Duration(len(flat)))
	}
	return best, nil
}

// processCPU returns the user and system CPU time this process has used.
func processCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("ledger bound: the process's CPU time: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// boundRatios returns the rows that judge the ledger's figures in ms
// (group commit by 64 and by 1,024 agents) against the bound (the row
// "ledger-bound") and offline verification
// against the checks alone (cores/c).
func boundRatios(ms []Measurement, c, all time.Duration, cores int) []Measurement {
	bound, ok := find(ms, "ledger-bound")
	if !ok || bound.Status != StatusMeasured || c <= 0 {
		return nil
	}
	checks := float64(cores) * float64(time.Second) / float64(c)
	var out []Measurement
	for _, r := range []struct{ id, of, what string }{
		{"appends-batched-of-bound", "appends-batched", "durable appends, group commit (64 agents), as a share of the physical bound (64 appenders waiting on their answers put at most 64 receipts in a commit)"},
		{"appends-batched-1024-of-bound", "appends-batched-1024", "durable appends, group commit (1024 agents), as a share of the physical bound"},
		{"verify-offline-of-bound", "verify-offline", "offline verification of a receipts directory, as a share of the checks' bound (cores/c)"},
	} {
		m, ok := find(ms, r.of)
		if !ok || m.Status != StatusMeasured {
			continue
		}
		den := bound.Value
		if r.of == "verify-offline" {
			den = checks
		}
		row := Measurement{ID: r.id, Section: m.Section, What: r.what, Status: StatusMeasured, Unit: "× bound", N: m.N, Value: m.Value / den}
		if r.of == "verify-offline" && all > 0 {
			par := float64(time.Second) / float64(all)
			row.Note = fmt.Sprintf("the checks themselves, on %d goroutines at once in this run, did %.0f receipts/s (%.2f of cores/c); offline verification is %.2f of that", cores, par, par/checks, m.Value/par)
		}
		out = append(out, row)
	}
	return out
}
