package fleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bankdoor/bankdoor/internal/agentkey"
	"github.com/bankdoor/bankdoor/internal/mcptest"
	"github.com/bankdoor/bankdoor/ledger/receipt"
)

// bins are the proxy and the fixture bank, built once by TestMain.
var bins struct{ bankdoor, bankServer string }

func TestMain(m *testing.M) {
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "fleet-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if bins.bankdoor, bins.bankServer, err = mcptest.Build(ctx, dir); err != nil {
		fmt.Fprintf(os.Stderr, "building the binaries: %v\n", err)
		return 1
	}
	return m.Run()
}

// config is a fleet on a fresh key and receipts directory, with no
// embedded ledger's log key yet: the members make it as they start.
func config(t *testing.T) Config {
	t.Helper()
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	if _, err := agentkey.Generate(home, false); err != nil {
		t.Fatal(err)
	}
	policy, err := filepath.Abs("../../policies/bankdoor.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return Config{StateDir: dir, Proxy: mcptest.Proxy{Bin: bins.bankdoor, Policy: policy, Server: "bank",
		Receipts: filepath.Join(dir, "receipts"), Home: home, Fixture: mcptest.Fixture{Bin: bins.bankServer}}}
}

// TestRate: 3 proxies started at once on a new key directory (one makes
// the log key, the others load it), 3 warm-up denies and 20 timed ones
// make one chain of 23 that the embedded ledger holds.
func TestRate(t *testing.T) {
	t.Parallel()
	wall, chain, err := Rate(t.Context(), config(t), 3, 20, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("20 denies through 3 proxies in %v", wall)
	if chain != 23 || wall <= 0 {
		t.Errorf("Rate: chain %d, wall %v; want 23 receipts in a positive time", chain, wall)
	}
}

// TestCheckCatches: Check passes on the directory a fleet left, and fails
// on copies of it with a receipt missing, without the ledger, or with more
// denies answered than receipts written, or two denies answered with one
// receipt.
func TestCheckCatches(t *testing.T) {
	t.Parallel()
	cfg := config(t)
	f, err := Start(t.Context(), cfg, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Deny(t.Context(), 7); err != nil {
		t.Fatal(errors.Join(err, f.Close()))
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if n, err := f.Check(); n != 7 || err != nil {
		t.Fatalf("Check of the fleet = %d, %v; want 7, nil", n, err)
	}
	for _, c := range []struct {
		name   string
		change func(dir string, names *[]string) error
		want   string
	}{
		{"receipt missing", func(dir string, _ *[]string) error { return os.Remove(filepath.Join(dir, receipt.FileName(4))) }, "does not verify"},
		{"no ledger", func(dir string, _ *[]string) error { return os.Remove(filepath.Join(dir, LedgerFile)) }, "the embedded ledger"},
		{"deny without receipt", func(_ string, names *[]string) error { *names = append(*names, receipt.FileName(8)); return nil }, "a chain of 7, for 8 denies"},
		{"one receipt twice", func(_ string, names *[]string) error { (*names)[1] = (*names)[0]; return nil }, "two denies were answered with receipt"},
	} {
		t.Run(c.name, func(t *testing.T) {
			copied := *f
			copied.cfg.Proxy.Receipts = filepath.Join(t.TempDir(), "receipts")
			if err := os.CopyFS(copied.cfg.Proxy.Receipts, os.DirFS(cfg.Proxy.Receipts)); err != nil {
				t.Fatal(err)
			}
			copied.receipts = append([]string(nil), f.receipts...)
			if err := c.change(copied.cfg.Proxy.Receipts, &copied.receipts); err != nil {
				t.Fatal(err)
			}
			if _, err := copied.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Check: %v; want an error containing %q", err, c.want)
			}
		})
	}
}

// TestTakeover: of 3 proxies, the holder is SIGKILLed twice and each time
// another takes over within the bound; the chain and the ledger lose
// nothing (Takeover checks them).
func TestTakeover(t *testing.T) {
	t.Parallel()
	took, err := Takeover(t.Context(), config(t), 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(took) != 2 {
		t.Fatalf("%d takeovers timed, want 2", len(took))
	}
	t.Logf("takeovers after SIGKILL of the holder: %v", took)
	for i, d := range took {
		if d <= 0 || d > takeoverBound {
			t.Errorf("takeover %d took %v, want within (0, %v]", i+1, d, takeoverBound)
		}
	}
}

// TestTakeoverNeedsTwo: one proxy has no one to take over from it.
func TestTakeoverNeedsTwo(t *testing.T) {
	t.Parallel()
	if _, err := Takeover(t.Context(), config(t), 1, 1); err == nil || !strings.Contains(err.Error(), "2 or more proxies") {
		t.Errorf("Takeover with 1 proxy: %v, want an error asking for 2 or more", err)
	}
}
