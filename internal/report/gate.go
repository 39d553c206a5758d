package report

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
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
	// Tessera is the Tessera log of the side-by-side, or why none.
	Tessera Tessera
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
		Flags: []string{"--ledger-db", filepath.Join(receipts, ".ledger.db")}}
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
		s, err := mcptest.Start(ctx, b.proxy(f, b.AttackReceipts()).Command(), &mcptest.Options{Client: attacks.AgentOptions()})
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
		Receipt: r.Receipt, Unsafe: r.Attack.Unsafe, Forwarded: r.Attack.Forwarded, Problems: r.Problems()}
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

// RugPulls runs the rug-pull matrix of internal/attacks through the
// proxy, a few sessions at a time.
func (b *Bench) RugPulls(ctx context.Context) ([]RugPullRow, error) {
	dir := filepath.Join(b.Work, "rugpull")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	tokens, err := attacks.WriteTokens(dir, "rug-agent", strings.Repeat("r9", 20))
	if err != nil {
		return nil, err
	}
	env := attacks.RugPullEnv{Bankdoor: b.Bankdoor, BankServer: b.BankServer, Policy: b.Policy, Home: b.Home,
		Tokens: tokens, Agent: "rug-agent", Token: strings.Repeat("r9", 20)}
	cases := attacks.RugPullCases()
	b.progress("rug pulls: %d sessions over stdio, --url and --listen", len(cases))
	rows := make([]RugPullRow, len(cases))
	run := func(i int) {
		c := cases[i]
		r := attacks.RunRugPull(ctx, env, c, filepath.Join(dir, c.Name()))
		rows[i] = RugPullRow{Case: c.Name(), Transport: c.Transport, Allowed: r.Allowed, Denied: r.Denied, Moved: r.Moved, Problems: r.Problems}
	}
	// One --listen session first: it creates the keys the others share.
	first := slices.IndexFunc(cases, func(c attacks.RugPullCase) bool { return c.Transport == "listen" })
	run(first)
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for i := range cases {
		if i == first {
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			run(i)
		})
	}
	wg.Wait()
	return rows, ctx.Err()
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
		s, err := mcptest.Start(ctx, f.Command(), &mcptest.Options{Client: attacks.AgentOptions()})
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

// Latency times calls tools/call of each case with the SDK client: an
// allowed read straight to the fixture, the same read through the proxy,
// and a denied transfer through the proxy (its receipt fsynced before the
// answer), the read and the deny again through a proxy serving metrics
// (--metrics-addr), then over streamable HTTP on 127.0.0.1 (the fixture's
// --http, and proxy --listen as an agent with a bearer token in front of
// another fixture over --url). The eight sessions run side by side and
// the calls are interleaved (each round takes every case once, in a
// shuffled order), so a change in the machine's load hits all alike. It returns the
// distributions in µs, the ratios proxied/direct of each transport and
// the chart series.
func (b *Bench) Latency(ctx context.Context, calls int) (ms []Measurement, chart []Series, err error) {
	read := &mcp.CallToolParams{Name: "get_balances", Arguments: map[string]any{"account_id": "acc_checking"}}
	write := &mcp.CallToolParams{Name: "transfer", Arguments: map[string]any{"from_account": "acc_checking", "to_account": "acc_mallory", "amount_cents": 1}}
	// The proxies run at once: each has its own receipts directory (and
	// the stdio ones their own embedded ledger next to it).
	receipts := func(name string) string { return filepath.Join(b.Work, "latency", name, "receipts") }
	hs, err := b.httpServers(ctx, receipts("http"))
	if err != nil {
		return nil, nil, err
	}
	defer func() { err = errors.Join(err, hs.stop()) }()
	cases := []*latencyCase{
		{id: "latency-direct", name: "direct: allowed read, no proxy", open: stdio(b.fixture("latency-direct", "").Command()), params: read},
		{id: "latency-proxied", name: "proxied: allowed read through the gate", open: stdio(b.proxy(b.fixture("latency-proxied", ""), receipts("proxied")).Command()), params: read},
		{id: "latency-deny", name: "deny: transfer refused, receipt fsynced", open: stdio(b.proxy(b.fixture("latency-deny", ""), receipts("deny")).Command()), params: write, denied: true},
		{id: "latency-proxied-metrics", name: "proxied with --metrics-addr: allowed read through the gate, metrics served", open: stdio(b.metricsProxy(b.fixture("latency-proxied-metrics", ""), receipts("proxied-metrics")).Command()), params: read, unchartered: true},
		{id: "latency-deny-metrics", name: "deny with --metrics-addr: transfer refused, receipt fsynced, metrics served", open: stdio(b.metricsProxy(b.fixture("latency-deny-metrics", ""), receipts("deny-metrics")).Command()), params: write, denied: true, unchartered: true},
		{id: "latency-http-direct", name: "HTTP direct: allowed read, streamable HTTP to the fixture, no proxy", open: overHTTP(hs.direct.URL, ""), params: read},
		{id: "latency-http-proxied", name: "HTTP proxied: allowed read through proxy --listen (bearer token), the fixture behind it over --url", open: overHTTP(hs.proxy.URL, hs.token), params: read},
		{id: "latency-http-deny", name: "HTTP deny: transfer refused by proxy --listen, receipt fsynced", open: overHTTP(hs.proxy.URL, hs.token), params: write, denied: true},
	}
	b.progress("latency: %d calls each, interleaved: direct read, proxied read, deny, over stdio and over HTTP", calls)
	if err := timeInterleaved(ctx, cases, calls); err != nil {
		return nil, nil, err
	}
	rows := make([]Measurement, len(cases))
	for i, c := range cases {
		dist := Distribution(c.lat, time.Microsecond) // sorts c.lat
		if !c.unchartered {
			chart = append(chart, Series{Name: strings.SplitN(c.name, ":", 2)[0], Samples: micros(c.lat)})
		}
		rows[i] = Measurement{ID: c.id, Section: "latency", What: c.name, Status: StatusMeasured, Unit: "µs", N: len(c.lat), Dist: dist}
	}
	ms = append(ms, rows[:3]...)
	ms = append(ms, ratios("latency", "proxied / direct", rows[0], rows[1])...)
	ms = append(ms, rows[3:5]...)
	ms = append(ms, metricsRatio("latency-metrics-ratio-proxied", "proxied with / without --metrics-addr at p50, same run", rows[1], rows[3]),
		metricsRatio("latency-metrics-ratio-deny", "deny with / without --metrics-addr at p50, same run", rows[2], rows[4]))
	ms = append(ms, rows[5:]...)
	ms = append(ms, ratios("latency-http", "HTTP proxied / HTTP direct", rows[5], rows[6])...)
	return ms, chart, nil
}

// metricsProxy is proxy with --metrics-addr on a free loopback port.
func (b *Bench) metricsProxy(f mcptest.Fixture, receipts string) mcptest.Proxy {
	p := b.proxy(f, receipts)
	p.Flags = append(p.Flags, "--metrics-addr", "127.0.0.1:0")
	return p
}

// metricsRatio is the row ID: the p50 of with over the p50 of without.
func metricsRatio(id, what string, without, with Measurement) Measurement {
	return Measurement{ID: id, Section: "latency", What: what, Status: StatusMeasured, Unit: "x", N: with.N, Value: with.Dist.P50 / without.Dist.P50}
}

// ratios returns the rows PREFIX-ratio-p50, -p95 and -p99: proxied over
// direct at each percentile.
func ratios(prefix, what string, direct, proxied Measurement) []Measurement {
	d, p := direct.Dist, proxied.Dist
	var ms []Measurement
	for _, q := range []struct {
		name string
		d, p float64
	}{{"p50", d.P50, p.P50}, {"p95", d.P95, p.P95}, {"p99", d.P99, p.P99}} {
		ms = append(ms, Measurement{ID: prefix + "-ratio-" + q.name, Section: "latency", What: what + " at " + q.name + ", same run",
			Status: StatusMeasured, Unit: "x", N: direct.N, Value: q.p / q.d})
	}
	return ms
}

// latencyCase is one timed kind of tools/call and its samples.
type latencyCase struct {
	id, name string
	// open connects the case's client session; close ends it.
	open   func(context.Context) (client *mcp.ClientSession, close func() error, err error)
	params *mcp.CallToolParams
	denied bool
	// unchartered cases (with --metrics-addr) are left out of the chart,
	// whose curves they would hide.
	unchartered bool
	client      *mcp.ClientSession
	close       func() error
	lat         []time.Duration
}

// stdio opens a session with the program cmd over its stdin and stdout.
func stdio(cmd *exec.Cmd) func(context.Context) (*mcp.ClientSession, func() error, error) {
	return func(ctx context.Context) (*mcp.ClientSession, func() error, error) {
		s, err := mcptest.Start(ctx, cmd, nil)
		if err != nil {
			return nil, nil, err
		}
		return s.Client(), s.Close, nil
	}
}

// overHTTP opens a session with the streamable HTTP endpoint url, with
// token as its bearer token if not empty.
func overHTTP(url, token string) func(context.Context) (*mcp.ClientSession, func() error, error) {
	return func(ctx context.Context) (*mcp.ClientSession, func() error, error) {
		cs, err := mcptest.ConnectHTTP(ctx, url, token)
		if err != nil {
			return nil, nil, err
		}
		return cs, cs.Close, nil
	}
}

// httpBench is what the HTTP cases talk to.
type httpBench struct {
	direct *mcptest.Server // a fixture serving streamable HTTP
	bank   *mcptest.Server // another one, behind proxy
	proxy  *mcptest.Server // bankdoor proxy --listen --url bank
	token  string          // the agent's bearer token
}

// httpAgent is the one agent of the listening proxy; it signs with the
// key in Home/agents/httpAgent, made at its first session.
const httpAgent = "report"

// httpServers starts two fixtures serving streamable HTTP on free
// loopback ports and `bankdoor proxy --listen` in front of the second,
// writing receipts under receipts/httpAgent. On error it stops what it
// started.
func (b *Bench) httpServers(ctx context.Context, receipts string) (hs *httpBench, err error) {
	hs = &httpBench{token: randomToken()}
	defer func() {
		if err != nil {
			err = errors.Join(err, hs.stop())
		}
	}()
	serveHTTP := func(name string) (mcptest.Fixture, *mcptest.Server, error) {
		f := b.fixture(name, "")
		cmd := f.Command()
		cmd.Args = append(cmd.Args, "--http", "127.0.0.1:0")
		s, err := mcptest.Serve(ctx, cmd, mcptest.FixtureServing)
		return f, s, err
	}
	if _, hs.direct, err = serveHTTP("latency-http-direct"); err != nil {
		return hs, err
	}
	f, bank, err := serveHTTP("latency-http-proxied")
	if hs.bank = bank; err != nil {
		return hs, err
	}
	tokens := filepath.Join(b.Work, "latency", "agent-tokens")
	if err := os.MkdirAll(filepath.Dir(tokens), 0o755); err != nil {
		return hs, err
	}
	if err := os.WriteFile(tokens, []byte(httpAgent+" "+hs.token+"\n"), 0o600); err != nil {
		return hs, err
	}
	p := b.proxy(f, receipts)
	p.URL, p.Flags = bank.URL, []string{"--listen", "127.0.0.1:0", "--agent-tokens", tokens}
	hs.proxy, err = mcptest.Serve(ctx, p.Command(), mcptest.ProxyServing)
	return hs, err
}

// stop stops the proxy, then the fixtures.
func (hs *httpBench) stop() error {
	var err error
	for _, s := range []*mcptest.Server{hs.proxy, hs.bank, hs.direct} {
		if s != nil {
			err = errors.Join(err, s.Stop())
		}
	}
	return err
}

// randomToken returns 32 random bytes in hex, a bearer token.
func randomToken() string {
	var b [32]byte
	rand.Read(b[:]) // crypto/rand: never fails
	return hex.EncodeToString(b[:])
}

// timeInterleaved opens every case's session, makes 10 untimed rounds
// to warm them up, then times n rounds of one call per case.
func timeInterleaved(ctx context.Context, cases []*latencyCase, n int) (err error) {
	for _, c := range cases {
		if c.client, c.close, err = c.open(ctx); err != nil {
			err = fmt.Errorf("latency case %q: %w", c.id, err)
			break
		}
	}
	defer func() {
		for _, c := range cases {
			if c.close != nil {
				err = errors.Join(err, c.close())
			}
		}
	}()
	// Each round takes the cases in a new order (a fixed seed, so runs
	// repeat), so that no case always follows the same one: a call right
	// after a deny (its fsync) is slower, and in a fixed order it would
	// always be the same case's.
	rng := mrand.New(mrand.NewPCG(1, 2))
	order := slices.Clone(cases)
	for i := 0; err == nil && i < n+10; i++ {
		rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
		for _, c := range order {
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
	res, err := c.client.CallTool(ctx, c.params)
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
