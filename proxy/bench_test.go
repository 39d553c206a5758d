package proxy

import (
	"context"
	"io"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bankdoor/bankdoor/internal/metrics"
	"github.com/bankdoor/bankdoor/proxy/gate"
)

// BenchmarkRoundTrip measures one tools/call get_balances from an SDK
// client to an in-process SDK server, directly and through a Relay over
// in-memory pipes, in one run so that the two are comparable.
func BenchmarkRoundTrip(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := newBank()
	args := &mcp.CallToolParams{Name: "get_balances", Arguments: map[string]any{"account": "acc_1"}}
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	run := func(b *testing.B, cs *mcp.ClientSession) {
		b.ReportAllocs()
		for b.Loop() {
			res, err := cs.CallTool(ctx, args)
			if err != nil || res.IsError {
				b.Fatalf("CallTool = %+v, %v", res, err)
			}
		}
	}
	b.Run("direct", func(b *testing.B) {
		ct, st := mcp.NewInMemoryTransports()
		if _, err := s.Connect(ctx, st, nil); err != nil {
			b.Fatal(err)
		}
		cs, err := client.Connect(ctx, ct, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		run(b, cs)
	})
	proxied := func(b *testing.B, obs Observer) {
		p := bankPolicy(b, ctx, s)
		r := New(Config{Policy: p, Server: "bank", Gate: gate.New(p), Recorder: &sliceRecorder{}, Observer: obs}, connectBank(b, ctx, s))
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		done := make(chan error, 1)
		go func() { done <- r.Run(ctx, inR, outW); outW.Close() }()
		cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
		if err != nil {
			b.Fatal(err)
		}
		run(b, cs)
		cs.Close()
		if err := <-done; err != nil {
			b.Errorf("Run = %v", err)
		}
	}
	b.Run("proxied", func(b *testing.B) { proxied(b, nil) })
	// The Prometheus metrics of --metrics-addr, as bankdoor proxy feeds them.
	b.Run("proxied-metrics", func(b *testing.B) { proxied(b, metrics.New().Proxy([]string{"get_balances"})) })
}
