package proxy_test

import (
	"context"
	"errors"
	"flag"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bankdoor/bankdoor/proxy"
	"github.com/bankdoor/bankdoor/proxy/gate"
	"github.com/bankdoor/bankdoor/proxy/httpserve"
)

var (
	loadSessions = flag.Int("load.sessions", 0, "concurrent agent sessions of TestLoad (default 8, or 50 with -load.duration)")
	loadCalls    = flag.Int("load.calls", 10, "reads (and as many denied transfers) per session of TestLoad when -load.duration is not set")
	loadDuration = flag.Duration("load.duration", 0, "run TestLoad for this long through the proxy, and again straight to the bank, logging p50/p99 latencies (e.g. 30s); 0 runs -load.calls calls per session")
)

const loadToken = "load-test-token-0123456789abcdef0123"

// TestLoad runs many agent sessions at once through an httpserve.Server,
// each with its own relay and bank session, mixing allowed reads and
// denied transfers: no error but the intended denies, and no goroutine
// left behind once everything is closed. By default each session makes
// -load.calls reads and as many transfers, which keeps the default run
// short; with -load.duration the sessions run for that long, and again
// straight to the bank, and the test logs the p99 latency of a read
// proxied over HTTP against the bank served directly over HTTP (a figure
// for a person, never asserted).
func TestLoad(t *testing.T) {
	sessions := *loadSessions
	if sessions <= 0 {
		sessions = 8
		if *loadDuration > 0 {
			sessions = 50
		}
	}
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithTimeout(context.Background(), *loadDuration+time.Minute)
	defer cancel()
	bank := proxy.NewBank()
	pol := proxy.BankPolicy(t, ctx, bank)
	rec := &proxy.SliceRecorder{}
	tokens, err := httpserve.ParseTokens("load", []byte("agent "+loadToken))
	if err != nil {
		t.Fatal(err)
	}
	srv := httpserve.New(httpserve.Config{Tokens: tokens, MaxSessions: sessions, MaxBankSessions: sessions, MaxRequests: 2 * sessions, Start: func(ctx context.Context, agent string, side proxy.AgentSide) error {
		ct, st := mcp.NewInMemoryTransports()
		if _, err := bank.Connect(ctx, st, nil); err != nil {
			return err
		}
		down, err := ct.Connect(ctx)
		if err != nil {
			return err
		}
		r := proxy.New(proxy.Config{Policy: pol, Server: "bank", Gate: gate.New(pol), Recorder: rec}, down)
		return r.RunAgent(ctx, side)
	}})
	proxied := httptest.NewServer(srv)

	viaProxy := runLoad(t, ctx, proxied.URL, sessions, true)
	if want := sessions * *loadCalls; *loadDuration == 0 && len(viaProxy) != want && !t.Failed() {
		t.Errorf("%d reads answered through the proxy, want %d", len(viaProxy), want)
	}
	if *loadDuration > 0 {
		direct := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return bank }, nil))
		straight := runLoad(t, ctx, direct.URL, sessions, false)
		direct.Close()
		t.Logf("%d sessions for %v: proxied %d reads, p50 %v p99 %v; direct %d reads, p50 %v p99 %v; p99 ratio proxied/direct %.2f",
			sessions, *loadDuration, len(viaProxy), pct(viaProxy, 50), pct(viaProxy, 99),
			len(straight), pct(straight, 50), pct(straight, 99), float64(pct(viaProxy, 99))/float64(pct(straight, 99)))
	}

	proxied.Close()
	srv.Close()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines after the load test, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}

// runLoad runs sessions against url and returns the latencies of the
// reads: -load.calls reads per session, or as many as fit in
// -load.duration when it is set. Through the proxy every other call is a
// transfer, which must be denied with name.write_word.
func runLoad(t *testing.T, ctx context.Context, url string, sessions int, withDenies bool) []time.Duration {
	hs := &proxy.HTTPServer{URL: url, Header: http.Header{"Authorization": {"Bearer " + loadToken}}}
	client := hs.Client()
	defer client.CloseIdleConnections()
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	stop := time.Now().Add(*loadDuration)
	more := func(done int) bool {
		if *loadDuration > 0 {
			return time.Now().Before(stop)
		}
		return done < *loadCalls
	}
	read := &mcp.CallToolParams{Name: "get_balances", Arguments: map[string]any{"account": "acc_1"}}
	write := &mcp.CallToolParams{Name: "transfer", Arguments: map[string]any{"to": "acc_2", "amount": 1}}
	for range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := mcp.NewClient(&mcp.Implementation{Name: "load", Version: "1"}, nil)
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: client, MaxRetries: -1}, nil)
			if err != nil {
				t.Errorf("connect: %v", err)
				return
			}
			defer cs.Close()
			var mine []time.Duration
			for more(len(mine)) {
				start := time.Now()
				res, err := cs.CallTool(ctx, read)
				if err != nil || res.IsError {
					t.Errorf("get_balances: %v %v", res, err)
					return
				}
				mine = append(mine, time.Since(start))
				if withDenies {
					_, err := cs.CallTool(ctx, write)
					var we *jsonrpc.Error
					if !errors.As(err, &we) || !strings.Contains(we.Message, "name.write_word") {
						t.Errorf("transfer: %v, want denied with name.write_word", err)
						return
					}
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return lat
}

func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[(len(s)-1)*p/100]
}
