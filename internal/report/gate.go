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

// latencyCase is one timed kind of tools/call.
type latencyCase struct {
	id, name string
	cmd      *exec.Cmd
	params   *mcp.CallToolParams
	denied   bool
}

// Latency times calls tools/call of each case in turn, over real stdio
// with the SDK client: an allowed read straight to the fixture, the same
// read through the proxy, and a denied transfer through the proxy (its
// receipt fsynced before the answer). It returns the three distributions
// in µs, the ratio proxied/direct at p50 and p99, and the chart series.
func (b *Bench) Latency(ctx context.Context, calls int) ([]Measurement, []Series, error) {
	read := &mcp.CallToolParams{Name: "get_balances", Arguments: map[string]any{"account_id": "acc_checking"}}
	write := &mcp.CallToolParams{Name: "transfer", Arguments: map[string]any{"from_account": "acc_checking", "to_account": "acc_mallory", "amount_cents": 1}}
	receipts := filepath.Join(b.Work, "latency", "receipts")
	cases := []latencyCase{
		{"latency-direct", "direct: allowed read, no proxy", b.fixture("latency-direct", "").Command(), read, false},
		{"latency-proxied", "proxied: allowed read through the gate", b.proxy(b.fixture("latency-proxied", ""), receipts).Command(), read, false},
		{"latency-deny", "deny: transfer refused, receipt fsynced", b.proxy(b.fixture("latency-deny", ""), receipts).Command(), write, true},
	}
	var ms []Measurement
	var chart []Series
	for _, c := range cases {
		b.progress("latency: %d calls, %s", calls, c.name)
		lat, err := timeCalls(ctx, c, calls)
		if err != nil {
			return nil, nil, err
		}
		dist := Distribution(lat, time.Microsecond) // sorts lat
		chart = append(chart, Series{Name: strings.SplitN(c.name, ":", 2)[0], Samples: micros(lat)})
		ms = append(ms, Measurement{ID: c.id, Section: "latency", What: c.name, Status: StatusMeasured, Unit: "µs", N: len(lat), Dist: dist})
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

// timeCalls starts c's program, makes 10 untimed calls to warm it up,
// then times n calls one after the other.
func timeCalls(ctx context.Context, c latencyCase, n int) ([]time.Duration, error) {
	s, err := mcptest.Start(ctx, c.cmd, nil)
	if err != nil {
		return nil, err
	}
	lat := make([]time.Duration, 0, n)
	for i := range n + 10 {
		start := time.Now()
		res, err := s.Client().CallTool(ctx, c.params)
		d := time.Since(start)
		if c.denied != (err != nil) || (err == nil && res.IsError) {
			s.Close()
			return nil, fmt.Errorf("latency case %q: tools/call %s: error %v, result %+v", c.id, c.params.Name, err, res)
		}
		if i >= 10 {
			lat = append(lat, d)
		}
	}
	return lat, errors.Join(s.Close())
}

// micros returns lat (sorted) in microseconds.
func micros(lat []time.Duration) []float64 {
	out := make([]float64, len(lat))
	for i, d := range lat {
		out[i] = float64(d) / float64(time.Microsecond)
	}
	return out
}
