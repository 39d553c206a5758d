package main_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/common/model"

	"github.com/bankdoor/bankdoor/internal/mcptest"
	"github.com/bankdoor/bankdoor/internal/promserver"
)

// servingMetrics is the line a process with --metrics-addr prints.
var servingMetrics = regexp.MustCompile(`(?m)^bankdoor: serving metrics at (http://\S+)$`)

// metricsURL returns the metrics URL a process named on stderr.
func metricsURL(t *testing.T, stderr string) string {
	t.Helper()
	m := servingMetrics.FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no %q line on stderr:\n%s", servingMetrics, stderr)
	}
	return m[1]
}

// scrape returns the lines of the exposition at url that start with prefix.
func scrape(t *testing.T, url, prefix string) []string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var lines []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), prefix) {
			lines = append(lines, sc.Text())
		}
	}
	io.Copy(io.Discard, resp.Body)
	return lines
}

// TestE2EMetricsAddrInUse: a --metrics-addr another process listens on
// (the metrics of a second MCP client session with the same settings)
// is a warning; the proxy starts and denies as ever. The first proxy's
// metrics count its own denies.
func TestE2EMetricsAddrInUse(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	p := w.proxy(w.fixture())
	p.Flags = []string{"--metrics-addr", ln.Addr().String()}
	s := start(t, p.Command(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = s.Client().CallTool(ctx, &mcp.CallToolParams{Name: "transfer", Arguments: map[string]any{"amount_cents": 1}})
	deniedWith(t, w, err, "name.write_word")
	if want := "bankdoor: warning: --metrics-addr " + ln.Addr().String() + ": listen tcp " + ln.Addr().String() + ": bind: address already in use; running without metrics"; !strings.Contains(s.Stderr(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, s.Stderr())
	}

	p.Flags = []string{"--metrics-addr", "127.0.0.1:0"}
	s2 := start(t, p.Command(), nil)
	for range 3 {
		_, err = s2.Client().CallTool(ctx, &mcp.CallToolParams{Name: "pay_bill", Arguments: map[string]any{}})
		deniedWith(t, w, err, "name.write_word")
	}
	got := scrape(t, metricsURL(t, s2.Stderr()), `bankdoor_calls_total{decision="deny",rule="name.write_word"}`)
	if len(got) != 1 || !strings.HasSuffix(got[0], " 3") {
		t.Errorf("metrics %q, want the 3 denies of this proxy", got)
	}
}

// hostPort is the host:port of a metrics URL, a Prometheus target.
func hostPort(t *testing.T, metricsURL string) string {
	t.Helper()
	u, err := url.Parse(metricsURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// TestE2EPrometheus: a real Prometheus (Debian's package) scrapes a
// gateway (proxy --listen shipping to a remote ledger) and the ledger
// (ledger serve); after a known burst of allowed and denied calls from
// two agents, its HTTP API reports exactly the deny counter, the allows,
// the ledger's size and an empty spool, and the bank saw the reads only.
func TestE2EPrometheus(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	lw := newLedgerWorld(t)
	tokens, toks := agentTokens(t)
	// The gateway's agents sign with keys made here, so the ledger can
	// enroll them before the first receipt arrives.
	for agent := range toks {
		dir := filepath.Join(w.home, "agents", agent)
		w.bankdoor(0, "keygen", "--dir", dir)
		pub, err := os.ReadFile(filepath.Join(dir, "bankdoor.pub.pem"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(lw.agents, agent+".pem"), pub, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ls := lw.serve("--metrics-addr", "127.0.0.1:0")
	f := w.fixture()
	gw := startListening(t, w, f, "--agent-tokens", tokens, "--ledger", ls.url, "--metrics-addr", "127.0.0.1:0")
	prom := promserver.StartTest(t,
		promserver.Job{Name: "gateway", Targets: []string{hostPort(t, metricsURL(t, gw.Stderr()))}},
		promserver.Job{Name: "ledger", Targets: []string{hostPort(t, metricsURL(t, ls.output()))}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := prom.WaitUp(ctx); err != nil {
		t.Fatal(err)
	}

	// The burst: alice 5 transfers and 2 bill payments, bob 3 transfers,
	// all denied by name.write_word; alice 2 reads and bob 1, allowed.
	burst := map[string][]string{
		"alice": {"transfer", "transfer", "list_accounts", "transfer", "pay_bill", "transfer", "list_accounts", "pay_bill", "transfer"},
		"bob":   {"transfer", "list_accounts", "transfer", "transfer"},
	}
	for agent, tools := range burst {
		cs, err := mcptest.ConnectHTTP(ctx, gw.URL, toks[agent])
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		for _, tool := range tools {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
			if tool == "list_accounts" {
				if err != nil {
					t.Fatalf("%s: %s: %v", agent, tool, err)
				}
				continue
			}
			if err == nil || !strings.Contains(err.Error(), "name.write_word") {
				t.Fatalf("%s: %s: %v, want a name.write_word denial", agent, tool, err)
			}
		}
	}
	for _, c := range []struct {
		query string
		want  float64
	}{
		{`sum(bankdoor_calls_total{job="gateway",decision="deny",rule="name.write_word"})`, 10},
		{`sum(bankdoor_calls_total{job="gateway",decision="allow"})`, 3},
		{`sum(bankdoor_tool_calls_total{job="gateway",tool="other",decision="deny"})`, 10},
		{`sum(bankdoor_receipts_written_total{job="gateway"})`, 10},
		{`sum(bankdoor_sessions_open{job="gateway"})`, 2},
		{`bankdoor_ledger_tree_size{job="ledger"}`, 10},
		{`sum(bankdoor_spool_backlog_receipts{job="gateway"})`, 0},
		{`sum(bankdoor_ledger_commit_receipts_sum{job="ledger"})`, 10},
		{`sum(bankdoor_ledger_append_seconds_count{job="ledger",code="ok"}) > 0`, -1},
	} {
		v, err := prom.WaitFor(ctx, c.query, func(v model.Vector) bool {
			return len(v) == 1 && (c.want < 0 || float64(v[0].Value) == c.want)
		})
		if err != nil {
			t.Errorf("%s: want %v: %v", c.query, c.want, err)
		} else {
			t.Logf("%s = %v", c.query, v[0].Value)
		}
	}
	stopListening(t, gw)
	st, err := mcptest.ReadState(f.State)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range logLines(st) {
		if !strings.Contains(line, "list_accounts") {
			t.Errorf("the bank saw %s", line)
		}
	}
}
