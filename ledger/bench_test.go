package ledger

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/transparency-dev/formats/log"

	"github.com/bankdoor/bankdoor/internal/perf"
	"github.com/bankdoor/bankdoor/ledger/internal/store"
)

// bulkAppend stores raw leaves through the production write path (entries,
// leaf index, nodes, checkpoint) without the receipt checks, in
// transactions of chunk leaves. Only for building benchmark fixtures: the
// leaves are not receipts, so Fsck would refuse the file. Call it only
// while no Append runs: it takes the committer's role.
func (l *Log) bulkAppend(tb testing.TB, leaves func(i uint64) []byte, n, chunk uint64) {
	for done := uint64(0); done < n; {
		k := min(chunk, n-done)
		b := &batchState{size: l.size, heads: map[string]Head{}, leaves: map[[32]byte]uint64{}}
		for i := range k {
			data := leaves(l.size + i)
			it := item{data: data}
			copy(it.leaf[:], hasher.HashLeaf(data))
			b.added = append(b.added, it)
		}
		var st treeState
		err := l.store.Update(func(tx store.Tx) error {
			var err error
			st, err = l.write(tx, b)
			return err
		})
		if err != nil {
			tb.Fatal(err)
		}
		l.committed(b, st)
		done += k
	}
}

// rawLeaf is leaf i of the benchmark fixtures: 200 bytes, like a short receipt.
func rawLeaf(i uint64) []byte {
	b := make([]byte, 200)
	binary.BigEndian.PutUint64(b, i)
	return b
}

// million is the 1,000,000-leaf log shared by the benchmarks of one run,
// built in transactions of DefaultMaxBatch leaves, the most one commit
// holds, so that its pending leaf index is one a live log can have.
var million struct {
	once  sync.Once
	tl    *testLog
	build time.Duration
}

const millionLeaves = 1_000_000

func millionLog(b *testing.B) *testLog {
	million.once.Do(func() {
		dir, err := os.MkdirTemp("", "bankdoor-ledger-bench-")
		if err != nil {
			b.Fatal(err)
		}
		s, v := testKeys(b)
		tl := &testLog{path: filepath.Join(dir, "ledger.db"), agents: &AgentKeys{}, verifier: v}
		tl.opts = Options{Origin: testOrigin, Signer: s, Agents: tl.agents}
		if tl.Log, err = Open(tl.path, tl.opts); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		tl.bulkAppend(b, rawLeaf, millionLeaves, DefaultMaxBatch)
		million.build, million.tl = time.Since(start), tl
		b.Logf("built the %d-leaf fixture in %v", millionLeaves, million.build.Round(time.Millisecond))
	})
	return million.tl
}

func TestMain(m *testing.M) {
	code := m.Run()
	if err := pg.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	if million.tl != nil {
		million.tl.Close()
		os.RemoveAll(filepath.Dir(million.tl.path))
	}
	os.Exit(code)
}

// BenchmarkAppend measures durable appends per second from 64 concurrent
// appenders, one receipt per Append call: group commit (default MaxBatch)
// and one receipt per transaction (MaxBatch 1), in one run.
func BenchmarkAppend(b *testing.B) {
	for _, mode := range []struct {
		name     string
		maxBatch int
	}{{"group-commit", 0}, {"tx-per-receipt", 1}} {
		b.Run(mode.name, func(b *testing.B) { benchAppend(b, 64, mode.maxBatch) })
	}
}

// BenchmarkAppendBackends measures group commit (BenchmarkAppend's
// group-commit mode), requests of 256 receipts (BenchmarkAppendRequest)
// and checkpoint latency (BenchmarkCheckpointLatency) on each backend: a bbolt file and a PostgreSQL database (the test
// binary's, on this machine, fsync on); then group commit on two Logs on
// one PostgreSQL database, 32 of the 64 appenders on each, as two ledger
// servers would run it.
func BenchmarkAppendBackends(b *testing.B) {
	for _, be := range backends {
		b.Run(string(be)+"/group-commit", func(b *testing.B) { benchAppendOn(b, be, 64, 0) })
		b.Run(string(be)+"/request-256", func(b *testing.B) { benchAppendRequest(b, be) })
		b.Run(string(be)+"/checkpoint-latency", func(b *testing.B) { benchCheckpointLatency(b, be) })
	}
	b.Run("postgres-2-replicas/group-commit", func(b *testing.B) { benchAppendReplicas(b, 2, 64) })
}

// BenchmarkInclusionProofPostgres is BenchmarkInclusionProof1M on a
// PostgreSQL database, built the same way (its own fixture).
func BenchmarkInclusionProofPostgres(b *testing.B) {
	tl := openTestLogOn(b, onPostgres, 0)
	start := time.Now()
	tl.bulkAppend(b, rawLeaf, millionLeaves, DefaultMaxBatch)
	benchProofs1M(b, tl.Log, time.Since(start))
}

// benchProofs1M times InclusionProof for random leaves of l, a log of
// millionLeaves leaves built in build, with the percentiles.
func benchProofs1M(b *testing.B, l *Log, build time.Duration) {
	rnd := rand.New(rand.NewPCG(5, 6))
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if _, err := l.InclusionProof(rnd.Uint64N(millionLeaves), millionLeaves); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	reportPercentiles(b, lat, "ns", time.Nanosecond)
	b.ReportMetric(build.Seconds(), "fixture-build-s")
}

// BenchmarkAppendRequest measures one appender sending requests of 256
// receipts, as the spool shipper and the RPC handler do.
func BenchmarkAppendRequest(b *testing.B) { benchAppendRequest(b, onBolt) }

func benchAppendRequest(b *testing.B, be backend) {
	const per = 256
	a := newAgent(1)
	tl := openTestLogOn(b, be, 0, a)
	reqs := make([][][]byte, 0, b.N/per+1)
	for i := 0; i < b.N; i += per {
		reqs = append(reqs, a.Chain(b, min(per, b.N-i)))
	}
	b.ResetTimer()
	for _, r := range reqs {
		if _, err := tl.Append(context.Background(), r); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "receipts/s")
}

func benchAppend(b *testing.B, appenders, maxBatch int) {
	benchAppendOn(b, onBolt, appenders, maxBatch)
}

func benchAppendOn(b *testing.B, be backend, appenders, maxBatch int) {
	agents := newAgents(appenders)
	tl := openTestLogOn(b, be, maxBatch, agents...)
	benchAppendLogs(b, []*testLog{tl}, agents)
}

// benchAppendReplicas is group commit on n Logs on one new PostgreSQL
// database, as n ledger servers would run it, the appenders split
// between them.
func benchAppendReplicas(b *testing.B, n, appenders int) {
	agents := newAgents(appenders)
	benchAppendLogs(b, replicas(b, nil, n, agents...), agents)
}

// newAgents returns agents 0 to n-1 (newAgent).
func newAgents(n int) []*agent {
	agents := make([]*agent, n)
	for i := range agents {
		agents[i] = newAgent(i)
	}
	return agents
}

// benchAppendLogs appends b.N receipts signed before the clock starts,
// agent i's one receipt per Append call to ls[i mod len(ls)], and
// reports receipts/s and the committers' stats, summed over ls.
func benchAppendLogs(b *testing.B, ls []*testLog, agents []*agent) {
	work := make([][][]byte, len(agents))
	for i := range b.N {
		a := i % len(agents)
		work[a] = append(work[a], agents[a].Next(b))
	}
	b.ResetTimer()
	var wg sync.WaitGroup
	for i, rs := range work {
		l := ls[i%len(ls)]
		wg.Go(func() {
			for _, r := range rs {
				if _, err := l.Append(context.Background(), [][]byte{r}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "receipts/s")
	var st Stats
	var size uint64
	for _, l := range ls {
		s := l.Stats()
		st.Commits, st.Receipts, st.Prepare, st.Total = st.Commits+s.Commits, st.Receipts+s.Receipts, st.Prepare+s.Prepare, st.Total+s.Total
		size = max(size, l.Size()) // the last to commit caught up with the others
	}
	reportStats(b, st)
	if size != uint64(b.N) {
		b.Fatalf("size %d after %d appends", size, b.N)
	}
}

// reportStats reports the committer's mean batch, fsyncs per receipt
// (bbolt's two a commit) and the share of commit time spent before the
// commit itself (checks, page writes in memory, the checkpoint signature).
func reportStats(b *testing.B, st Stats) {
	if st.Commits == 0 {
		return
	}
	b.ReportMetric(float64(st.Receipts)/float64(st.Commits), "receipts/commit")
	b.ReportMetric(2*float64(st.Commits)/float64(st.Receipts), "fsyncs/receipt")
	b.ReportMetric(float64(st.Total.Microseconds())/float64(st.Commits), "µs/commit")
	b.ReportMetric(float64(st.Prepare)/float64(st.Total), "prepare/commit")
}

// BenchmarkInclusionProof1M measures InclusionProof for random leaves of
// a 1,000,000-leaf log, with the 99th percentile.
func BenchmarkInclusionProof1M(b *testing.B) {
	tl := millionLog(b) // builds million the first time
	benchProofs1M(b, tl.Log, million.build)
}

func reportPercentiles(b *testing.B, lat []time.Duration, unit string, scale time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	p := func(q float64) float64 { return float64(perf.Quantile(lat, q)) / float64(scale) }
	b.ReportMetric(p(0.5), "p50-"+unit)
	b.ReportMetric(p(0.99), "p99-"+unit)
	b.ReportMetric(float64(lat[len(lat)-1])/float64(scale), "max-"+unit)
}

// BenchmarkCheckpointLatency appends about 1,000 receipts a second from
// 8 agents and measures, for each receipt, the time from the Append call
// to the first checkpoint seen on Watch that covers it.
func BenchmarkCheckpointLatency(b *testing.B) { benchCheckpointLatency(b, onBolt) }

func benchCheckpointLatency(b *testing.B, be backend) {
	const agents, rate = 8, 1000
	as := newAgents(agents)
	tl := openTestLogOn(b, be, 0, as...)
	work := make([][][]byte, agents)
	for i := range b.N {
		work[i%agents] = append(work[i%agents], as[i%agents].Next(b))
	}
	seen := watchSizes(b, tl)
	b.ResetTimer()
	lat, err := perf.CoveringLatency(work, rate, func(r []byte) (uint64, error) {
		idx, err := tl.Append(context.Background(), [][]byte{r})
		if err != nil {
			return 0, err
		}
		return idx[0], nil
	}, seen)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	reportPercentiles(b, lat, "ms", time.Millisecond)
}

// watchSizes records on a clock when Watch first showed each checkpoint
// size.
func watchSizes(b *testing.B, tl *testLog) *perf.SizeClock {
	c := perf.NewSizeClock()
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	w := tl.Watch(ctx)
	go func() {
		for n := range w {
			now := time.Now()
			cp, _, _, err := log.ParseCheckpoint(n, testOrigin, tl.verifier)
			if err != nil {
				panic(err)
			}
			c.Saw(cp.Size, now)
		}
	}()
	return c
}

// BenchmarkHeap appends receipts from 64 concurrent appenders to a log of
// 10,000 and of 1,000,000 leaves and reports the peak live heap: the
// ledger keeps O(log n) state in memory, so the two should match.
func BenchmarkHeap(b *testing.B) {
	b.Run("size=10k", func(b *testing.B) {
		tl := openTestLog(b, 0)
		tl.bulkAppend(b, rawLeaf, 10_000, DefaultMaxBatch)
		benchHeap(b, tl)
	})
	b.Run("size=1M", func(b *testing.B) { benchHeap(b, millionLog(b)) })
}

// BenchmarkHeapPostgres is BenchmarkHeap on PostgreSQL databases, whose
// logs keep no pending leaves in memory (the leaf index is written at
// once), built the same way.
func BenchmarkHeapPostgres(b *testing.B) {
	for _, size := range []uint64{10_000, millionLeaves} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			tl := openTestLogOn(b, onPostgres, 0)
			tl.bulkAppend(b, rawLeaf, size, DefaultMaxBatch)
			benchHeap(b, tl)
		})
	}
}

func benchHeap(b *testing.B, tl *testLog) {
	const appenders = 64
	as := make([]*agent, appenders)
	work := make([][][]byte, appenders)
	for i := range as {
		as[i] = newAgent(1000 + i + int(tl.Size())) // fresh agents for each log
		tl.agents.Enroll(as[i].Public())
	}
	for i := range b.N {
		work[i%appenders] = append(work[i%appenders], as[i%appenders].Next(b))
	}
	base := perf.LiveHeap()
	peak := perf.SampleHeap()
	b.ResetTimer()
	var wg sync.WaitGroup
	for _, rs := range work {
		wg.Go(func() {
			for _, r := range rs {
				if _, err := tl.Append(context.Background(), [][]byte{r}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	max := peak()
	work = nil
	b.ReportMetric(float64(max)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(base)/(1<<20), "start-live-MiB")
	b.ReportMetric(float64(perf.LiveHeap())/(1<<20), "end-live-MiB")
	b.ReportMetric(float64(tl.Size()), "leaves")
}

// BenchmarkLeafIndex looks up random leaves of a 100,000-leaf log by
// leaf hash, as GetInclusionProof by leaf_hash does, the log built in
// transactions of DefaultMaxBatch leaves.
func BenchmarkLeafIndex(b *testing.B) {
	const n = 100_000
	tl := openTestLog(b, 0)
	tl.bulkAppend(b, rawLeaf, n, DefaultMaxBatch)
	hashes := make([][]byte, n)
	for i := range hashes {
		hashes[i] = hasher.HashLeaf(rawLeaf(uint64(i)))
	}
	rnd := rand.New(rand.NewPCG(7, 8))
	b.ResetTimer()
	for b.Loop() {
		i := rnd.Uint64N(n)
		if got, err := tl.LeafIndex(hashes[i]); err != nil || got != i {
			b.Fatalf("LeafIndex(leaf %d) = %d, %v", i, got, err)
		}
	}
}
