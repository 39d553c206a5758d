package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/bankdoor/bankdoor/anchor/tlogwitness"
	"github.com/bankdoor/bankdoor/internal/metrics"
	"github.com/bankdoor/bankdoor/ledger/station"
	"github.com/bankdoor/bankdoor/proxy"
	"github.com/bankdoor/bankdoor/proxy/policy"
)

// metricsFlags is --metrics-addr, of proxy and ledger serve.
type metricsFlags struct {
	addr string
	reg  *metrics.Registry // set by check when addr is
}

func (f *metricsFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.addr, "metrics-addr", "", "serve Prometheus metrics at http://HOST:PORT/metrics (port 0 picks one); if it cannot be listened on, a warning says so and the rest runs without")
}

// check parses --metrics-addr and makes the registry.
func (f *metricsFlags) check() error {
	if f.addr == "" {
		return nil
	}
	_, port, err := net.SplitHostPort(f.addr)
	if err == nil {
		if n, perr := strconv.ParseUint(port, 10, 16); perr != nil || strconv.FormatUint(n, 10) != port {
			err = fmt.Errorf("port %q is not a number from 0 to 65535", port)
		}
	}
	if err != nil {
		return hint(fmt.Errorf("--metrics-addr %q: %w", f.addr, err), "give HOST:PORT, e.g. --metrics-addr 127.0.0.1:9464")
	}
	f.reg = metrics.New()
	return nil
}

// serve serves the metrics on --metrics-addr until the returned stop is
// called. An address that cannot be listened on (in use, say, by the
// metrics of another proxy of the same MCP client configuration) is a
// warning, not an error: the gate goes on without metrics.
func (f *metricsFlags) serve(e *env, logger *slog.Logger) (stop func()) {
	if f.reg == nil {
		return func() {}
	}
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		e.warningf("--metrics-addr %s: %v; running without metrics", f.addr, err)
		return func() {}
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", f.reg.Handler())
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	e.printf("serving metrics at http://%s/metrics", ln.Addr())
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Warn("serving metrics stopped", "err", err)
		}
	}()
	return func() { hs.Close() }
}

// proxyMetrics are the metrics of a proxy; nil without --metrics-addr.
type proxyMetrics struct {
	flags  *metricsFlags // its reg holds the metrics below
	gate   *metrics.Proxy
	ledger *metrics.Ledger // the embedded ledger's, if the proxy has one
}

// newProxyMetrics registers the proxy's metrics: the gate's for the
// tools the policy names for server, and the embedded ledger's unless it
// ships to a remote one.
func (f *metricsFlags) newProxyMetrics(p *policy.Policy, server string, embedded bool) *proxyMetrics {
	if f.reg == nil {
		return nil
	}
	var tools []string
	if s := p.Servers[server]; s != nil {
		tools = slices.Sorted(maps.Keys(s.Tools))
	}
	m := &proxyMetrics{flags: f, gate: f.reg.Proxy(tools)}
	if embedded {
		m.ledger = f.reg.Ledger()
	}
	return m
}

// watch registers what is read from the station when the metrics are
// scraped: the spool's backlog, a lapse of the ledger's holder and, with
// the embedded ledger, its log and the witnesses' cosignatures.
func (m *proxyMetrics) watch(st *station.Station, witnesses []string) {
	if m == nil {
		return
	}
	m.flags.reg.Backlog(st.Backlog)
	m.flags.reg.HolderLapse(st.Lapsed)
	if m.ledger != nil {
		m.ledger.Watch(st.Ledger, witnesses)
	}
}

// sessions registers the gateway's open sessions by agent.
func (m *proxyMetrics) sessions(open func() map[string]int) {
	if m != nil {
		m.flags.reg.Sessions(open)
	}
}

// serveMetrics registers the metrics read from the station of ev and
// serves --metrics-addr; the returned func stops serving.
func (c *proxyConfig) serveMetrics(e *env, ev *evidence) (stop func()) {
	if c.metrics == nil {
		return func() {}
	}
	c.metrics.watch(ev.st, witnessNames(c.ledger.anchorTo))
	return c.metrics.flags.serve(e, c.logger)
}

// witnessNames are the names of ws, the values of the witness label.
func witnessNames(ws []*tlogwitness.Client) []string {
	names := make([]string, len(ws))
	for i, w := range ws {
		names[i] = w.Name()
	}
	return names
}

// hooks puts the embedded ledger's metrics hooks into its options.
func (m *proxyMetrics) hooks(e *station.Embedded) {
	if m == nil || m.ledger == nil {
		return
	}
	e.Options.OnCommit = m.ledger.Committed
	e.OnAnchor = m.ledger.Anchored
}

// observer returns the gate's metrics as a proxy.Observer, or nil.
func (m *proxyMetrics) observer() proxy.Observer {
	if m == nil {
		return nil
	}
	return m.gate
}
