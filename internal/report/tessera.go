package report

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/bankdoor/bankdoor/internal/loadgen"
	"github.com/bankdoor/bankdoor/internal/tesseralog"
)

// Side-by-side row ids (section "tessera"): durable appends/s, time to a
// covering checkpoint and server CPU per entry, for each log, and the
// ratio of the rates, bankdoor to Tessera.
const (
	sbsAppendsBankdoor    = "sbs-appends-bankdoor"
	sbsAppendsTessera     = "sbs-appends-tessera"
	sbsAppendsRatio       = "sbs-appends-ratio"
	sbsCheckpointBankdoor = "sbs-checkpoint-bankdoor"
	sbsCheckpointTessera  = "sbs-checkpoint-tessera"
	sbsCPUBankdoor        = "sbs-cpu-bankdoor"
	sbsCPUTessera         = "sbs-cpu-tessera"
)

// Tessera is the Tessera POSIX conformance log binary of the
// side-by-side (package tesseralog), or why there is none (Skipped, shown
// as "not measured: " + Skipped).
type Tessera struct {
	Bin     string
	Skipped string
}

// SideBySide runs the same load (package loadgen: s.SideBySideWriters
// writers, one entry per request, for s.SideBySideSeconds) against
// `bankdoor ledger serve` (b.Bankdoor) and Tessera's POSIX log,
// alternating, s.SideBySideRounds rounds of each, each run on a fresh log
// under Work/sidebyside, and returns the rows of section "tessera": per
// log the rounds pooled (entries over time, CPU over entries, every
// latency). Without a Tessera binary (b.Tessera.Bin) only bankdoor is
// measured.
func (b *Bench) SideBySide(ctx context.Context, s Settings) []Measurement {
	if s.SideBySideRounds == 0 {
		return notMeasured(append(sbsRows(loadgen.Result{}, errSkipped, "bankdoor", "bankdoor ledger serve (Connect)", ""),
			append(sbsRows(loadgen.Result{}, errSkipped, "tessera", "Tessera POSIX "+tesseralog.Version+" (POST /add)", ""),
				Measurement{ID: sbsAppendsRatio, Section: "tessera", What: "durable appends/s, bankdoor ledger serve over Tessera POSIX, measured in one run"})...),
			"--quick leaves the side by side to go test ./internal/report (TestSideBySideQuick)")
	}
	tb := b.Tessera
	c := loadgen.Config{Writers: s.SideBySideWriters, Duration: time.Duration(s.SideBySideSeconds) * time.Second}
	var bd, ts []loadgen.Result
	var bdErr, tsErr error
	live := 0 // receipts bankdoor's writers signed while the clock ran
	if tb.Bin == "" {
		tsErr = errors.New(tb.Skipped)
	}
	for round := range s.SideBySideRounds {
		if bdErr == nil {
			b.progress("side by side: round %d of %d, bankdoor ledger serve, %d writers for %v", round+1, s.SideBySideRounds, c.Writers, c.Duration)
			var r loadgen.Result
			var n int
			r, n, bdErr = b.runBankdoor(ctx, c, round)
			bd, live = append(bd, r), live+n
		}
		if tsErr == nil {
			b.progress("side by side: round %d of %d, Tessera POSIX %s, %d writers for %v", round+1, s.SideBySideRounds, tesseralog.Version, c.Writers, c.Duration)
			var r loadgen.Result
			r, tsErr = b.runTessera(ctx, c, round, tb.Bin)
			ts = append(ts, r)
		}
	}
	how := fmt.Sprintf("%d single-entry writers, %d × %d s alternating", c.Writers, s.SideBySideRounds, s.SideBySideSeconds)
	bdRows := sbsRows(pool(bd), bdErr, "bankdoor", "bankdoor ledger serve (Connect)", how)
	if bdErr == nil {
		bdRows[0].Note += fmt.Sprintf("; receipts signed before the clock started (%d per writer a round), %d signed while it ran", presignPerWriter(c), live)
	}
	tsRows := sbsRows(pool(ts), tsErr, "tessera", "Tessera POSIX "+tesseralog.Version+" (POST /add)", how)
	if tb.Bin == "" {
		for i := range tsRows {
			tsRows[i].Status = "not measured: " + tb.Skipped
		}
	}
	ratio := ratioRow(bdRows[0], tsRows[0], bdRows[1], tsRows[1], bdRows[2], tsRows[2])
	if ratio.Status == StatusMeasured && len(bd) == len(ts) && len(bd) > 1 {
		ratio.Note += "; by round " + roundRatios(bd, ts)
	}
	return append(append(bdRows, tsRows...), ratio)
}

// roundRatios lists bankdoor's rate over Tessera's in each round, the
// spread the pooled ratio hides.
func roundRatios(bd, ts []loadgen.Result) string {
	rs := make([]string, len(bd))
	for i := range bd {
		rs[i] = num(bd[i].Rate()/ts[i].Rate(), "x")
	}
	return strings.Join(rs, ", ")
}

// errSkipped stands for the runs a mode without side-by-side rounds skips.
var errSkipped = errors.New("skipped")

// notMeasured gives every row of ms the status "not measured: " + why.
func notMeasured(ms []Measurement, why string) []Measurement {
	for i := range ms {
		ms[i].Status = "not measured: " + why
	}
	return ms
}

// presignRate is the append rate, over all writers, that the receipts
// bankdoor's writers sign before a side-by-side run last for: beyond it
// they sign as they go (Bankdoor.Live counts those, and the report says
// how many).
const presignRate = 25_000

// presignPerWriter is how many receipts each writer of c signs before
// the clock starts.
func presignPerWriter(c loadgen.Config) int {
	return int(math.Ceil(presignRate * c.Duration.Seconds() / float64(c.Writers)))
}

// runBankdoor is one run of `bankdoor ledger serve` on a new ledger, its
// writers' receipts signed before the clock starts (loadgen's
// Bankdoor.Presign); it also returns how many they signed while it ran.
func (b *Bench) runBankdoor(ctx context.Context, c loadgen.Config, round int) (loadgen.Result, int, error) {
	dir, err := sbsDir(b.Work, "bankdoor", round)
	if err != nil {
		return loadgen.Result{}, 0, err
	}
	srv, err := loadgen.StartBankdoor(b.Bankdoor, dir, "report.bankdoor.invalid/side-by-side", c.Writers)
	if err != nil {
		return loadgen.Result{}, 0, err
	}
	defer srv.Stop()
	if err := srv.Presign(presignPerWriter(c)); err != nil {
		return loadgen.Result{}, 0, err
	}
	r, err := loadgen.Run(ctx, srv, c)
	if err == nil {
		err = sizeIsAcked(ctx, srv, r)
	}
	return r, srv.Live(), err
}

// runTessera is one run of the Tessera log on a new log.
func (b *Bench) runTessera(ctx context.Context, c loadgen.Config, round int, bin string) (loadgen.Result, error) {
	dir, err := sbsDir(b.Work, "tessera", round)
	if err != nil {
		return loadgen.Result{}, err
	}
	size, err := loadgen.ReceiptSize()
	if err != nil {
		return loadgen.Result{}, err
	}
	l, err := tesseralog.Start(bin, dir, "report.bankdoor.invalid/tessera")
	if err != nil {
		return loadgen.Result{}, err
	}
	defer l.Stop()
	t, err := loadgen.NewTessera(l, size, c.Writers)
	if err != nil {
		return loadgen.Result{}, err
	}
	defer t.Close()
	r, err := loadgen.Run(ctx, t, c)
	if err == nil {
		err = sizeIsAcked(ctx, t, r)
	}
	return r, err
}

func sbsDir(work, name string, round int) (string, error) {
	dir := filepath.Join(work, "sidebyside", fmt.Sprintf("%s-%d", name, round+1))
	return dir, os.MkdirAll(dir, 0o755)
}

// sizeIsAcked checks that the fresh log holds exactly the acknowledged
// entries, each under a checkpoint.
func sizeIsAcked(ctx context.Context, t loadgen.Target, r loadgen.Result) error {
	size, err := t.CheckpointSize(ctx)
	if err != nil {
		return err
	}
	if size != uint64(r.Acked) || r.MaxIndex+1 != uint64(r.Acked) {
		return fmt.Errorf("%s: checkpoint size %d and largest index %d after %d acknowledged entries on a fresh log", t.Name(), size, r.MaxIndex, r.Acked)
	}
	return nil
}

// pool sums runs into one result: entries, time and CPU added, latencies
// together.
func pool(rs []loadgen.Result) loadgen.Result {
	var p loadgen.Result
	for _, r := range rs {
		p.Target, p.Writers = r.Target, r.Writers
		p.Acked += r.Acked
		p.Elapsed += r.Elapsed
		p.CPU += r.CPU
		p.LoadCPU += r.LoadCPU
		p.Latency = append(p.Latency, r.Latency...)
	}
	return p
}

// sbsRows are a log's three rows: appends/s, checkpoint latency and
// server CPU per entry.
func sbsRows(r loadgen.Result, err error, id, who, how string) []Measurement {
	ms := []Measurement{
		{ID: "sbs-appends-" + id, Section: "tessera", What: fmt.Sprintf("durable appends/s, %s: %s", who, how)},
		{ID: "sbs-checkpoint-" + id, Section: "tessera", What: fmt.Sprintf("request to the first polled checkpoint covering the entry, %s", who)},
		{ID: "sbs-cpu-" + id, Section: "tessera", What: fmt.Sprintf("server CPU (user + system) per acknowledged entry, %s", who)},
	}
	if err == nil && r.Acked == 0 {
		err = fmt.Errorf("no run")
	}
	if err != nil {
		for i := range ms {
			ms[i].Status = "failed: " + err.Error()
		}
		return ms
	}
	for i := range ms {
		ms[i].Status, ms[i].N = StatusMeasured, r.Acked
	}
	ms[0].Unit, ms[0].Value = "appends/s", r.Rate()
	ms[0].Note = fmt.Sprintf("%d acknowledged in %.1f s; each fresh log held exactly them, under a signed checkpoint", r.Acked, r.Elapsed.Seconds())
	ms[1].Unit, ms[1].Dist = "ms", Distribution(r.Latency, time.Millisecond)
	ms[1].Note = fmt.Sprintf("checkpoint polled every %v", loadgen.DefaultPoll)
	ms[2].Unit, ms[2].Value = "µs", float64(r.CPUPerEntry())/float64(time.Microsecond)
	ms[2].Note = fmt.Sprintf("%.2f s of CPU; the load generator's own %.2f s, %s an entry; the two used %.0f%% of the machine's %d CPUs",
		r.CPU.Seconds(), r.LoadCPU.Seconds(), num(float64(r.LoadCPUPerEntry())/float64(time.Microsecond), "µs"),
		100*(r.CPU+r.LoadCPU).Seconds()/(r.Elapsed.Seconds()*float64(runtime.NumCPU())), runtime.NumCPU())
	return ms
}

// ratioRow is bankdoor's rate over Tessera's, with the ratios of the
// checkpoint p50s and of the CPU per entry in its note.
func ratioRow(bdA, tsA, bdC, tsC, bdU, tsU Measurement) Measurement {
	m := Measurement{ID: sbsAppendsRatio, Section: "tessera", What: "durable appends/s, bankdoor ledger serve over Tessera POSIX, measured in one run"}
	for _, x := range []Measurement{bdA, tsA, bdC, tsC, bdU, tsU} {
		if x.Status != StatusMeasured {
			m.Status = "not measured: row " + x.ID + " is " + x.Status
			return m
		}
	}
	m.Status, m.Unit, m.Value = StatusMeasured, "x", bdA.Value/tsA.Value
	m.Note = fmt.Sprintf("checkpoint latency p50 %s; server CPU per entry %s",
		num(bdC.Dist.P50/tsC.Dist.P50, "x"), num(bdU.Value/tsU.Value, "x"))
	return m
}

// tesseraClaim reports the side-by-side: a figure, never judged, unless
// bankdoor's run failed.
func tesseraClaim(r *Report) Claim {
	c := Claim{ID: "ledger-vs-tessera", Evidence: "m-" + sbsAppendsRatio,
		Text: "The ledger, verifying every receipt, durably appends single-receipt requests from many writers as fast as Tessera's POSIX log under the same load on the same machine"}
	// A failed bankdoor run is a failed check (an append refused, or a
	// log that does not hold exactly the acknowledged receipts under a
	// checkpoint), not a missing figure.
	if bd, ok := find(r.Measurements, sbsAppendsBankdoor); ok && strings.HasPrefix(bd.Status, "failed: ") {
		c.Status, c.Figure = bd.Status, "-"
		return c
	}
	ratio, ok := find(r.Measurements, sbsAppendsRatio)
	if !ok {
		c.Status, c.Figure = "not measured: no "+sbsAppendsRatio+" row", "-"
		return c
	}
	if ratio.Status != StatusMeasured {
		c.Status, c.Figure = ratio.Status, "-"
		return c
	}
	bd, _ := find(r.Measurements, sbsAppendsBankdoor)
	ts, _ := find(r.Measurements, sbsAppendsTessera)
	bdC, _ := find(r.Measurements, sbsCheckpointBankdoor)
	tsC, _ := find(r.Measurements, sbsCheckpointTessera)
	bdU, _ := find(r.Measurements, sbsCPUBankdoor)
	tsU, _ := find(r.Measurements, sbsCPUTessera)
	c.Status = StatusMeasured
	c.Figure = fmt.Sprintf("%s Tessera's rate (%s vs %s); checkpoint p50 %s (%s vs %s); CPU per entry %s vs %s",
		num(ratio.Value, "x"), num(bd.Value, ""), num(ts.Value, ts.Unit),
		num(bdC.Dist.P50/tsC.Dist.P50, "x"), num(bdC.Dist.P50, bdC.Unit), num(tsC.Dist.P50, tsC.Unit),
		num(bdU.Value, bdU.Unit), num(tsU.Value, tsU.Unit))
	return c
}
