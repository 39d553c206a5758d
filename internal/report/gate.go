package report

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bankdoor/bankdoor/internal/attacks"
	"github.com/bankdoor/bankdoor/internal/mcptest"
)

// Bench is what the gate measurements run: the built binaries, a policy
// pinned against the fixture, a signing key and a working directory.
type Bench struct {
	Bankdoor   string    // the bankdoor binary (the proxy)
	BankServer string    // the fixture bank binary
	Policy     string    // pinned against BankServer
	Home       string    // BANKDOOR_HOME holding the proxy's signing key
	Work       string    // directory for state files and receipts
	Progress   io.Writer // one line per step
}

// AttackReceipts is the receipts directory of the attack run, under Work.
func (b *Bench) AttackReceipts() string { return filepath.Join(b.Work, "attacks", "receipts") }

func (b *Bench) fixture(name, variant string) mcptest.Fixture {
	f := mcptest.Fixture{Bin: b.BankServer, State: filepath.Join(b.Work, "state", name+".json")}
	if variant != "" {
		f.Env = []string{"BANK_FIXTURE_VARIANT=" + variant}
	}
	return f
}

// proxy returns the proxy in front of f, with its embedded ledger next
// to its receipts directory (not in the current directory).
func (b *Bench) proxy(f mcptest.Fixture, receipts string) mcptest.Proxy {
	return mcptest.Proxy{Bin: b.Bankdoor, Policy: b.Policy, Server: "bank", Receipts: receipts, Home: b.Home, Fixture: f,
		Flags: []string{"--ledger-db", filepath.Join(filepath.Dir(receipts), "ledger.db")}}
}

func (b *Bench) progress(format string, a ...any) {
	fmt.Fprintf(b.Progress, "report: "+format+"\n", a...)
}

// Attacks sends the whole catalogue through the proxy, one proxy session
// per fixture variant, all signing into AttackReceipts.
func (b *Bench) Attacks(ctx context.Context) ([]AttackRow, error) {
	all := attacks.Catalogue()
	var rows []AttackRow
	for _, v := range attacks.Variants(all) {
		as := attacks.ForVariant(all, v)
		b.progress("attacks: %d through the proxy (fixture variant %q)", len(as), v)
		f := b.fixture("attacks-"+orDefault(v), v)
		s, err := mcptest.Start(ctx, b.proxy(f, b.AttackReceipts()).Command(), nil)
		if err != nil {
			return nil, err
		}
		results := attacks.Run(ctx, attacks.Target{Session: s, State: f.State, Receipts: b.AttackReceipts()}, as)
		if err := s.Close(); err != nil {
			return nil, fmt.Errorf("proxy for variant %q: %w", v, err)
		}
		for _, r := range results {
			rows = append(rows, b.attackRow(r))
		}
	}
	return rows, nil
}

// attackRow is r as a row, with a problem for each argument value found
// in its receipt.
func (b *Bench) attackRow(r attacks.Result) AttackRow {
	row := AttackRow{ID: r.Attack.ID, Description: r.Attack.Description, Variant: r.Attack.Variant,
		ExpectedRule: r.Attack.Rule, ActualRule: r.Rule, Reached: len(r.Reached), Moved: r.Moved,
		Receipt: r.Receipt, Unsafe: r.Attack.Unsafe, Problems: r.Problems()}
	if r.Receipt != "" {
		leaks, err := Leaks(r.Attack, b.AttackReceipts(), r.Receipt)
		if err != nil {
			row.Problems = append(row.Problems, "reading its receipt: "+err.Error())
		}
		for _, v := range leaks {
			row.Problems = append(row.Problems, fmt.Sprintf("%s %q", leakProblem, v))
		}
	}
	return row
}

func orDefault(v string) string {
	if v == "" {
		return "default"
	}
	return v
}

// Controls sends each Unsafe attack straight to a fresh fixture of its
// variant, with no proxy in front.
func (b *Bench) Controls(ctx context.Context) ([]ControlRow, error) {
	var rows []ControlRow
	for _, a := range attacks.Catalogue() {
		if !a.Unsafe {
			continue
		}
		b.progress("control: %s straight to the fixture", a.ID)
		f := b.fixture("control-"+a.ID, a.Variant)
		s, err := mcptest.Start(ctx, f.Command(), nil)
		if err != nil {
			return nil, err
		}
		rs := attacks.Control(ctx, attacks.Target{Session: s, State: f.State}, []attacks.Attack{a})
		if err := s.Close(); err != nil {
			return nil, fmt.Errorf("fixture after control %s: %w", a.ID, err)
		}
		for _, r := range rs {
			row := ControlRow{ID: a.ID, Variant: a.Variant, Reached: len(r.Reached), Moved: r.Moved, Answer: oneLine(unquoteAnswer(r.Message), 120)}
			if r.Err != nil {
				row.Error = r.Err.Error()
			}
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// unquoteAnswer undoes the quoting of the bank's answer in a runner
// message ("answered with a result: \"{...}\""), for readability.
func unquoteAnswer(msg string) string {
	head, quoted, ok := strings.Cut(msg, ": ")
	if !ok {
		return msg
	}
	if s, err := strconv.Unquote(strings.TrimSuffix(quoted, "…")); err == nil {
		return head + ": " + s
	}
	if i := strings.LastIndex(quoted, "\"… ("); i > 0 { // cut by the runner: "…"… (N bytes)
		if s, err := strconv.Unquote(quoted[:i+1]); err == nil {
			return head + ": " + s + "…"
		}
	}
	return msg
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// Latency times calls tools/call of each case, over real stdio with the
// SDK client: an allowed read straight to the fixture, the same read
// through the proxy, and a denied transfer through the proxy (its receipt
// fsynced before the answer). The three sessions run side by side and
// the calls are interleaved (direct, proxied, deny, direct, ...), so a
// change in the machine's load hits all three alike. It returns the
// distributions in µs, the ratios proxied/direct and the chart series.
func (b *Bench) Latency(ctx context.Context, calls int) ([]Measurement, []Series, error) {
	read := &mcp.CallToolParams{Name: "get_balances", Arguments: map[string]any{"account_id": "acc_checking"}}
	write := &mcp.CallToolParams{Name: "transfer", Arguments: map[string]any{"from_account": "acc_checking", "to_account": "acc_mallory", "amount_cents": 1}}
	// Two proxies at once: each has its own receipts directory (and so
	// its own embedded ledger next to it).
	receipts := func(name string) string { return filepath.Join(b.Work, "latency", name, "receipts") }
	cases := []*latencyCase{
		{id: "latency-direct", name: "direct: allowed read, no proxy", cmd: b.fixture("latency-direct", "").Command(), params: read},
		{id: "latency-proxied", name: "proxied: allowed read through the gate", cmd: b.proxy(b.fixture("latency-proxied", ""), receipts("proxied")).Command(), params: read},
		{id: "latency-deny", name: "deny: transfer refused, receipt fsynced", cmd: b.proxy(b.fixture("latency-deny", ""), receipts("deny")).Command(), params: write, denied: true},
	}
	b.progress("latency: %d calls each, interleaved: direct read, proxied read, deny", calls)
	if err := timeInterleaved(ctx, cases, calls); err != nil {
		return nil, nil, err
	}
	var ms []Measurement
	var chart []Series
	for _, c := range cases {
		dist := Distribution(c.lat, time.Microsecond) // sorts c.lat
		chart = append(chart, Series{Name: strings.SplitN(c.name, ":", 2)[0], Samples: micros(c.lat)})
		ms = append(ms, Measurement{ID: c.id, Section: "latency", What: c.name, Status: StatusMeasured, Unit: "µs", N: len(c.lat), Dist: dist})
	}
	d, p := ms[0].Dist, ms[1].Dist
	ms = append(ms,
		Measurement{ID: "latency-ratio-p50", Section: "latency", What: "proxied / direct at p50, same run", Status: StatusMeasured, Unit: "x", N: calls, Value: p.P50 / d.P50},
		Measurement{ID: "latency-ratio-p95", Section: "latency", What: "proxied / direct at p95, same run", Status: StatusMeasured, Unit: "x", N: calls, Value: p.P95 / d.P95},
		Measurement{ID: "latency-ratio-p99", Section: "latency", What: "proxied / direct at p99, same run", Status: StatusMeasured, Unit: "x", N: calls, Value: p.P99 / d.P99},
		Measurement{ID: "latency-http", Section: "latency", What: "tools/call through proxy --listen (streamable HTTP)",
			Status: "not measured: the report drives stdio only so far; proxy's TestLoad logs p99 proxied/direct over HTTP"})
	return ms, chart, nil
}

// latencyCase is one timed kind of tools/call and its samples.
type latencyCase struct {
	id, name string
	cmd      *exec.Cmd
	params   *mcp.CallToolParams
	denied   bool
	sess     *mcptest.Session
	lat      []time.Duration
}

// timeInterleaved starts every case's program, makes 10 untimed rounds
// to warm them up, then times n rounds of one call per case.
func timeInterleaved(ctx context.Context, cases []*latencyCase, n int) (err error) {
	for _, c := range cases {
		if c.sess, err = mcptest.Start(ctx, c.cmd, nil); err != nil {
			break
		}
	}
	defer func() {
		for _, c := range cases {
			if c.sess != nil {
				err = errors.Join(err, c.sess.Close())
			}
		}
	}()
	for i := 0; err == nil && i < n+10; i++ {
		for _, c := range cases {
			if err = c.call(ctx, i >= 10); err != nil {
				break
			}
		}
	}
	return err
}

// call makes one call and, if timed, records its latency.
func (c *latencyCase) call(ctx context.Context, timed bool) error {
	start := time.Now()
	res, err := c.sess.Client().CallTool(ctx, c.params)
	d := time.Since(start)
	if c.denied != (err != nil) || (err == nil && res.IsError) {
		return fmt.Errorf("latency case %q: tools/call %s: error %v, result %+v", c.id, c.params.Name, err, res)
	}
	if timed {
		c.lat = append(c.lat, d)
	}
	return nil
}

// micros returns lat (sorted) in microseconds.
func micros(lat []time.Duration) []float64 {
	out := make([]float64, len(lat))
	for i, d := range lat {
		out[i] = float64(d) / float64(time.Microsecond)
	}
	return out
}
