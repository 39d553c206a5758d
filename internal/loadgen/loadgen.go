// Package loadgen drives a transparency log with many concurrent writers,
// each appending one entry per request, for a fixed time, and measures
// what the log's operator pays and what its clients wait for. It is the
// side-by-side of issue 16: one load, two logs,
//
//   - Bankdoor: `bankdoor ledger serve` over Connect (the Connect
//     protocol's unary POST of a binary protobuf AppendRequest over
//     HTTP/1.1, built with net/http as Tessera's writers build theirs),
//     one signed receipt per Append call. Every writer is an enrolled
//     agent with its own Ed25519 key and chain (package agentchain),
//     sending its next receipt once the previous one is acknowledged, as
//     a proxy does. Bankdoor.Presign signs the receipts before the clock
//     starts: signing is the agent's work, on the agent's machine.
//   - Tessera: Tessera's POSIX conformance log (package tesseralog), one
//     POST /add per entry, each entry as long as a receipt and distinct
//     (Tessera's antispam would answer a repeat with the first's index).
//
// Both acknowledge an entry only once it is durable: the ledger after its
// batch is committed and fsynced (DESIGN.md §6); Tessera after the entry's
// batch is sequenced and integrated, every file written with O_SYNC and
// its directory fsynced (see package tesseralog for where in its source).
// Neither acknowledgement carries a signed checkpoint, so the time to one
// is measured apart, the same way for both: one goroutine asks the log for
// its latest checkpoint every Config.Poll (the ledger's GetCheckpoint RPC,
// Tessera's GET /checkpoint), verifies its signature and notes when each
// size was first seen.
//
// Run measures, from the first request to the last acknowledgement:
//
//   - durable appends per second: acknowledged requests over that time;
//   - server CPU per entry: the server process's user plus system time
//     (utime + stime of /proc/PID/stat, in USER_HZ ticks, 100 a second on
//     Linux) over that time, divided by the acknowledged entries; and the
//     load generator's own CPU time over that time, the same way;
//   - checkpoint latency: for every acknowledged entry, from its request
//     to the first polled checkpoint whose size covers its index.
//
// After the writers stop, Run waits until a checkpoint covers every
// acknowledged entry and fails if none does in time. The writers run on
// the same machine as the server, so what they spend is taken from the
// server: that is why bankdoor's writers sign before the clock starts
// (a writer that runs out signs as it goes, and Bankdoor.Live says how
// many it signed) and send with net/http rather than connect-go's
// client, whose extra work per call Tessera's writers do not do.
package loadgen

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Target is a log under load.
type Target interface {
	// Name says which log it is, for errors and reports.
	Name() string
	// PID is the server process whose CPU time is measured.
	PID() int
	// Writer returns the append function of writer i (0 <= i < the
	// writers of the run), called once per writer before the clock
	// starts. A writer's appends are sequential: it appends one entry,
	// waits for the answer, then appends the next, and returns the
	// index the log gave the entry once the log says it is durable.
	Writer(i int) (func(context.Context) (uint64, error), error)
	// CheckpointSize returns the size of the log's latest signed
	// checkpoint, its signature verified.
	CheckpointSize(ctx context.Context) (uint64, error)
}

// Config is the load.
type Config struct {
	Writers  int           // concurrent writers
	Duration time.Duration // writers start no request after this
	// Poll is the interval between checkpoint requests; 0 is
	// DefaultPoll.
	Poll time.Duration
	// CoverTimeout bounds the wait, after the writers stop, for a
	// checkpoint covering every acknowledged entry; 0 is
	// DefaultCoverTimeout.
	CoverTimeout time.Duration
}

// Defaults of Config.
const (
	DefaultPoll         = 10 * time.Millisecond
	DefaultCoverTimeout = 30 * time.Second
)

// Result is what one run measured.
type Result struct {
	Target  string
	Writers int
	Acked   int           // acknowledged entries
	Elapsed time.Duration // first request to last acknowledgement
	CPU     time.Duration // the server's CPU time over Elapsed
	// LoadCPU is the load generator's (this process's) CPU time over
	// Elapsed: on one machine it is taken from the server's.
	LoadCPU time.Duration
	// Size is the size of the first checkpoint that covered every
	// acknowledged entry.
	Size uint64
	// MaxIndex is the largest index acknowledged.
	MaxIndex uint64
	// Latency is, per acknowledged entry, the time from its request to
	// the first polled checkpoint covering it, sorted.
	Latency []time.Duration
}

// Rate is the durable appends per second.
func (r Result) Rate() float64 { return float64(r.Acked) / r.Elapsed.Seconds() }

// CPUPerEntry is the server's CPU time per acknowledged entry.
func (r Result) CPUPerEntry() time.Duration { return r.perEntry(r.CPU) }

// LoadCPUPerEntry is the load generator's CPU time per acknowledged entry.
func (r Result) LoadCPUPerEntry() time.Duration { return r.perEntry(r.LoadCPU) }

func (r Result) perEntry(d time.Duration) time.Duration {
	if r.Acked == 0 {
		return 0
	}
	return d / time.Duration(r.Acked)
}

// ack is one acknowledged entry.
type ack struct {
	index uint64
	sent  time.Time
}

// Run drives t with c.Writers writers for c.Duration and returns what it
// measured. It fails if a writer's append or a checkpoint request fails,
// or if no checkpoint covers every acknowledged entry within
// c.CoverTimeout of the writers stopping.
func Run(ctx context.Context, t Target, c Config) (Result, error) {
	if c.Writers < 1 || c.Duration <= 0 {
		return Result{}, fmt.Errorf("load of %d writers for %v: want at least one writer and a positive duration", c.Writers, c.Duration)
	}
	c.Poll = cmpOr(c.Poll, DefaultPoll)
	c.CoverTimeout = cmpOr(c.CoverTimeout, DefaultCoverTimeout)
	writers := make([]func(context.Context) (uint64, error), c.Writers)
	for i := range writers {
		var err error
		if writers[i], err = t.Writer(i); err != nil {
			return Result{}, fmt.Errorf("%s: writer %d: %w", t.Name(), i, err)
		}
	}
	pctx, stopPoll := context.WithCancel(ctx)
	clock := newSizeClock()
	pollErr := make(chan error, 1)
	go func() { pollErr <- poll(pctx, t, c.Poll, clock) }()
	res, acks, err := drive(ctx, t, writers, c.Duration)
	if err == nil {
		res.Size, err = awaitCover(ctx, clock, res.MaxIndex+1, c.CoverTimeout, pollErr)
	}
	stopPoll()
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", t.Name(), err)
	}
	res.Latency = make([]time.Duration, len(acks))
	for i, a := range acks {
		res.Latency[i] = clock.first(a.index + 1).Sub(a.sent)
	}
	slices.Sort(res.Latency)
	return res, nil
}

func cmpOr(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// drive runs the writers until d has passed since the first request and
// returns the counts, the server's CPU time and every acknowledgement.
func drive(ctx context.Context, t Target, writers []func(context.Context) (uint64, error), d time.Duration) (Result, []ack, error) {
	cpu0, err := CPUTime(t.PID())
	if err != nil {
		return Result{}, nil, err
	}
	load0, err := CPUTime(os.Getpid())
	if err != nil {
		return Result{}, nil, err
	}
	per := make([][]ack, len(writers))
	errs := make(chan error, len(writers))
	var stop atomic.Bool
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for i, w := range writers {
		wg.Go(func() {
			for !stop.Load() && time.Now().Before(deadline) {
				sent := time.Now()
				idx, err := w(ctx)
				if err != nil {
					stop.Store(true)
					errs <- fmt.Errorf("writer %d: %w", i, err)
					return
				}
				per[i] = append(per[i], ack{idx, sent})
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu1, err := CPUTime(t.PID())
	load1, loadErr := CPUTime(os.Getpid())
	close(errs)
	if err = errors.Join(<-errs, err, loadErr); err != nil {
		return Result{}, nil, err
	}
	var acks []ack
	for _, p := range per {
		acks = append(acks, p...)
	}
	if len(acks) == 0 {
		return Result{}, nil, fmt.Errorf("no entry acknowledged in %v", d)
	}
	r := Result{Target: t.Name(), Writers: len(writers), Acked: len(acks), Elapsed: elapsed, CPU: cpu1 - cpu0, LoadCPU: load1 - load0}
	for _, a := range acks {
		r.MaxIndex = max(r.MaxIndex, a.index)
	}
	return r, acks, nil
}

// poll asks t for its checkpoint every interval and records each larger
// size on clock, until ctx ends (nil) or a request fails.
func poll(ctx context.Context, t Target, interval time.Duration, clock *sizeClock) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		size, err := t.CheckpointSize(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			return fmt.Errorf("polling the checkpoint: %w", err)
		}
		clock.saw(size, time.Now())
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// awaitCover waits until clock has seen a size of at least size and
// returns the first such size.
func awaitCover(ctx context.Context, clock *sizeClock, size uint64, timeout time.Duration, pollErr <-chan error) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	select {
	case got := <-clock.reached(size):
		return got, nil
	case err := <-pollErr:
		return 0, cmpOrErr(err, context.Cause(ctx))
	case <-ctx.Done():
		return 0, fmt.Errorf("entries acknowledged up to index %d, but no checkpoint covered them within %v (largest seen: %d)", size-1, timeout, clock.largest())
	}
}

// cmpOrErr returns err, or def if err is nil.
func cmpOrErr(err, def error) error {
	if err == nil {
		return def
	}
	return err
}

// sizeClock records when each larger checkpoint size was first seen.
type sizeClock struct {
	mu      sync.Mutex
	sizes   []uint64 // increasing
	times   []time.Time
	waiters []sizeWaiter
}

type sizeWaiter struct {
	size uint64
	ch   chan uint64
}

func newSizeClock() *sizeClock { return &sizeClock{} }

// saw records size at t, if it is larger than every size seen before.
func (c *sizeClock) saw(size uint64, t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.sizes); n > 0 && size <= c.sizes[n-1] {
		return
	}
	c.sizes, c.times = append(c.sizes, size), append(c.times, t)
	c.waiters = slices.DeleteFunc(c.waiters, func(w sizeWaiter) bool {
		if size >= w.size {
			w.ch <- size
			return true
		}
		return false
	})
}

// reached returns a channel that receives the first size seen of at
// least size.
func (c *sizeClock) reached(size uint64) <-chan uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan uint64, 1)
	if i, ok := c.index(size); ok {
		ch <- c.sizes[i]
	} else {
		c.waiters = append(c.waiters, sizeWaiter{size, ch})
	}
	return ch
}

// first returns when a size of at least size was first seen; the caller
// knows one was.
func (c *sizeClock) first(size uint64) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	i, _ := c.index(size)
	return c.times[i]
}

func (c *sizeClock) index(size uint64) (int, bool) {
	i, _ := slices.BinarySearch(c.sizes, size)
	return i, i < len(c.sizes)
}

func (c *sizeClock) largest() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.sizes) == 0 {
		return 0
	}
	return c.sizes[len(c.sizes)-1]
}

// ticksPerSecond is USER_HZ, the unit of utime and stime in
// /proc/PID/stat: 100 on every Linux architecture (proc_pid_stat(5),
// sysconf(_SC_CLK_TCK)).
const ticksPerSecond = 100

// CPUTime returns the user plus system CPU time the process pid has used
// (all its threads), from /proc/PID/stat; Linux only.
func CPUTime(pid int) (time.Duration, error) {
	path := "/proc/" + strconv.Itoa(pid) + "/stat"
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("CPU time of process %d: %w", pid, err)
	}
	// The command name, field 2, is in parentheses and may hold spaces:
	// the fields after it start past the last ')'. utime and stime are
	// fields 14 and 15, so the 12th and 13th after it.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("CPU time: %s has %d fields after the command name, want at least 13", path, len(f))
	}
	var ticks uint64
	for _, v := range f[11:13] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("CPU time: %s: %w", path, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / ticksPerSecond, nil
}
