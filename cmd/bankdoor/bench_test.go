package main_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bankdoor/bankdoor/internal/fleet"
	"github.com/bankdoor/bankdoor/internal/mcptest"
)

// BenchmarkRoundTrip measures one tools/call over real stdio with the Go
// SDK client, straight to the fixture and through the built proxy, in the
// same run so that the ratio proxied/direct means something. deny is a
// call the gate refuses, including its fsynced receipt.
func BenchmarkRoundTrip(b *testing.B) {
	dir := b.TempDir()
	home := filepath.Join(dir, "home")
	if out, err := exec.Command(built.bankdoor, "keygen", "--dir", home).CombinedOutput(); err != nil {
		b.Fatalf("keygen: %v\n%s", err, out)
	}
	policy, err := filepath.Abs("../../policies/bankdoor.yaml")
	if err != nil {
		b.Fatal(err)
	}
	// Each case has its own state file: the fixture rewrites its whole log
	// on every call, so a shared file would make later cases slower.
	fixture := func(name string) mcptest.Fixture {
		return mcptest.Fixture{Bin: built.bankServer, State: filepath.Join(dir, name+".json")}
	}
	proxy := func(name string) mcptest.Proxy {
		return mcptest.Proxy{Bin: built.bankdoor, Policy: policy, Server: "bank",
			Receipts: filepath.Join(dir, "receipts"), Home: home, Fixture: fixture(name)}
	}
	read := &mcp.CallToolParams{Name: "get_balances", Arguments: map[string]any{"account_id": "acc_checking"}}
	write := &mcp.CallToolParams{Name: "transfer", Arguments: map[string]any{"from_account": "acc_checking", "to_account": "acc_mallory", "amount_cents": 1}}
	for _, bc := range []struct {
		name   string
		cmd    func() *exec.Cmd
		params *mcp.CallToolParams
		denied bool
	}{
		{"direct", fixture("direct").Command, read, false},
		{"proxied", proxy("proxied").Command, read, false},
		{"deny", proxy("deny").Command, write, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			s, err := mcptest.Start(ctx, bc.cmd(), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			var took []time.Duration
			for b.Loop() {
				start := time.Now()
				res, err := s.Client().CallTool(ctx, bc.params)
				took = append(took, time.Since(start))
				if bc.denied != (err != nil) || (err == nil && res.IsError) {
					b.Fatalf("CallTool %s: err = %v, result = %+v", bc.params.Name, err, res)
				}
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(took[len(took)*99/100].Nanoseconds()), "p99-ns")
		})
	}
}

// BenchmarkDenyProcs measures denies through 1, 2, 4 and 8 proxies on one
// receipts directory and one key, as the report's denies-procs-N rows do
// (internal/fleet): b.N denies spread over the proxies, each proxy's own
// SDK client calling as fast as it is answered, timed after one untimed
// deny through each; afterwards the directory must verify as one chain of
// one receipt per deny and the embedded ledger must hold it. ns/op is the
// wall time per deny of all proxies together; denies/s its inverse. Each
// round starts its proxies anew (untimed): give -benchtime 400x rather
// than a duration.
func BenchmarkDenyProcs(b *testing.B) {
	policy, err := filepath.Abs("../../policies/bankdoor.yaml")
	if err != nil {
		b.Fatal(err)
	}
	for _, procs := range []int{1, 2, 4, 8} {
		b.Run(fmt.Sprintf("procs=%d", procs), func(b *testing.B) {
			b.StopTimer() // Rate runs it around the timed denies only
			dir := b.TempDir()
			home := filepath.Join(dir, "home")
			if out, err := exec.Command(built.bankdoor, "keygen", "--dir", home).CombinedOutput(); err != nil {
				b.Fatalf("keygen: %v\n%s", err, out)
			}
			cfg := fleet.Config{StateDir: dir, Proxy: mcptest.Proxy{Bin: built.bankdoor, Policy: policy, Server: "bank",
				Receipts: filepath.Join(dir, "receipts"), Home: home, Fixture: mcptest.Fixture{Bin: built.bankServer}}}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			wall, _, err := fleet.Rate(ctx, cfg, procs, b.N, b)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/wall.Seconds(), "denies/s")
		})
	}
}
