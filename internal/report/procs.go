package report

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bankdoor/bankdoor/internal/fleet"
	"github.com/bankdoor/bankdoor/internal/mcptest"
	"github.com/bankdoor/bankdoor/ledger/station"
)

// ProcsCounts are the numbers of proxies of the denies-procs-N rows.
var ProcsCounts = []int{1, 2, 4, 8}

// Many-proxies row ids, and the proxies of the takeover run.
const (
	procsIDPrefix = "denies-procs-"
	takeoverID    = "ledger-takeover"
	takeoverProcs = 3
	// takeoverBound is the time within which another proxy must hold the
	// ledger after its holder dies (issue 13: at most 2 s).
	takeoverBound = 2 * time.Second
)

// Procs measures stdio proxies sharing one receipts directory and the
// report's key, as MCP clients that each launch their own proxy do (see
// internal/fleet): for each of ProcsCounts, denies per second with
// s.ProcsDenies denies spread over the proxies, each proxy's own client
// calling as fast as it is answered, after which the directory must
// verify as one chain with one receipt per deny and the embedded ledger
// must hold it all; then the time for another proxy to take over the
// ledger after its holder is SIGKILLed, s.TakeoverRounds times. A row
// whose run or check failed says so instead of giving a figure.
func (b *Bench) Procs(ctx context.Context, s Settings) []Measurement {
	var ms []Measurement
	for _, n := range ProcsCounts {
		ms = append(ms, b.denyRate(ctx, n, s.ProcsDenies))
	}
	return append(ms, b.takeover(ctx, s.TakeoverRounds))
}

// fleetConfig is a fleet on its own receipts directory under
// Work/procs/name, signing with the report's key.
func (b *Bench) fleetConfig(name string) fleet.Config {
	dir := filepath.Join(b.Work, "procs", name)
	return fleet.Config{StateDir: dir, Proxy: mcptest.Proxy{Bin: b.Bankdoor, Policy: b.Policy, Server: "bank",
		Receipts: filepath.Join(dir, "receipts"), Home: b.Home, Fixture: mcptest.Fixture{Bin: b.BankServer}}}
}

// denyRate is the row denies-procs-N: n denies through procs proxies.
func (b *Bench) denyRate(ctx context.Context, procs, n int) Measurement {
	id := fmt.Sprintf("%s%d", procsIDPrefix, procs)
	what := fmt.Sprintf("denies per second, %d stdio %s on one receipts directory and one key, each with its own SDK client", procs, plural(procs, "proxy", "proxies"))
	load := loadAverage()
	b.progress("many proxies: %d denies through %d %s at once", n, procs, plural(procs, "proxy", "proxies"))
	wall, chain, err := fleet.Rate(ctx, b.fleetConfig(id), procs, n, nil)
	if err != nil {
		return rowOrFailure(Measurement{}, err, id, "procs", what)
	}
	return Measurement{ID: id, Section: "procs", What: what, Status: StatusMeasured, Unit: "denies/s", N: n, Value: float64(n) / wall.Seconds(),
		Note: fmt.Sprintf("%d untimed denies first, one per proxy; afterwards one chain of %d receipts verified, one per deny, and the embedded ledger held all %d; load average %s at start",
			procs, chain, chain, load)}
}

// takeover is the row ledger-takeover.
func (b *Bench) takeover(ctx context.Context, rounds int) Measurement {
	what := fmt.Sprintf("SIGKILL of the proxy holding the embedded ledger to another proxy logging that it took over (%d stdio proxies on one receipts directory)", takeoverProcs)
	load := loadAverage()
	b.progress("many proxies: the ledger's holder SIGKILLed %d times, %d proxies", rounds, takeoverProcs)
	took, err := fleet.Takeover(ctx, b.fleetConfig(takeoverID), takeoverProcs, rounds)
	if err != nil {
		return rowOrFailure(Measurement{}, err, takeoverID, "procs", what)
	}
	return Measurement{ID: takeoverID, Section: "procs", What: what, Status: StatusMeasured, Unit: "ms", N: len(took), Dist: Distribution(took, time.Millisecond),
		Note: fmt.Sprintf("a standby tries to take over every %v (station.DefaultTakeover); before each kill one deny through each proxy, after it a new proxy in place of the killed one; then the chain verified and the embedded ledger held all of it; load average %s at start",
			station.DefaultTakeover, load)}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// loadAverage is the 1-minute load average (Linux), or "unknown".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "unknown"
}

// procsClaim: the many-proxies rows all passed their checks.
func procsClaim(r *Report) Claim {
	c := Claim{ID: "procs-one-chain", Evidence: "m-" + procsIDPrefix + "8",
		Text: "Any number of proxies on one receipts directory and one key write one chain that verifies, one receipt per deny, and the embedded ledger holds every receipt"}
	var figures, bad []string
	for _, n := range ProcsCounts {
		m, ok := find(r.Measurements, fmt.Sprintf("%s%d", procsIDPrefix, n))
		switch {
		case !ok:
			c.Status, c.Figure = fmt.Sprintf("not measured: no %s%d row", procsIDPrefix, n), "-"
			return c
		case m.Status != StatusMeasured:
			bad = append(bad, fmt.Sprintf("%d proxies: %s", n, m.Status))
		default:
			figures = append(figures, fmt.Sprintf("%d: %s", n, num(m.Value, "")))
		}
	}
	c.Figure = "denies/s by proxies " + strings.Join(figures, ", ")
	c.Status = held(len(bad) == 0, strings.Join(bad, "; "))
	return c
}

// takeoverClaim: another proxy took over within takeoverBound every time.
func takeoverClaim(r *Report) Claim {
	c := Claim{ID: takeoverID, Evidence: "m-" + takeoverID,
		Text: fmt.Sprintf("When the proxy holding the embedded ledger is SIGKILLed, another takes over within %v and no receipt is lost", takeoverBound)}
	m, ok := find(r.Measurements, takeoverID)
	if !ok {
		c.Status, c.Figure = "not measured: no "+takeoverID+" row", "-"
		return c
	}
	if m.Status != StatusMeasured || m.Dist == nil {
		c.Status, c.Figure = held(false, m.Status), "-"
		return c
	}
	c.Figure = fmt.Sprintf("p50 %s, max %s over %d kills", num(m.Dist.P50, m.Unit), num(m.Dist.Max, m.Unit), m.N)
	c.Status = held(m.N > 0 && m.Dist.Max <= float64(takeoverBound/time.Millisecond),
		fmt.Sprintf("the slowest took %s, more than %v", num(m.Dist.Max, m.Unit), takeoverBound))
	return c
}
