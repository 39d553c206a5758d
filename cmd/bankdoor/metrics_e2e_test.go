package main_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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
