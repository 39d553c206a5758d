package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/bankdoor/bankdoor/internal/agentkey"
	"github.com/bankdoor/bankdoor/internal/mcptest"
	"github.com/bankdoor/bankdoor/internal/omniwitness"
	"github.com/bankdoor/bankdoor/internal/report"
)

const reportSynopsis = `report [--quick|--full] [--out DIR] [--readme FILE] [--fixture BIN] [--policy P] [--witness BIN] [--work DIR]

Runs the attack catalogue through this binary's proxy and straight to the
fixture bank, times tools/call direct, proxied and denied over stdio and
over streamable HTTP (proxy --listen), measures the ledger, anchoring to
a real omniwitness and offline verification (a receipts directory, and an
export bundle against its checkpoint, whole and truncated), and writes
DIR/bankdoor.md, DIR/bankdoor.json and DIR/latency.svg; it rewrites the
<!-- report:begin --> block of the README. Nothing leaves the machine
(HTTP on 127.0.0.1 only); fresh keys in a temporary directory. Run it from the module
root (go run ./cmd/bankdoor report): without --fixture it builds
./fixtures/bank-server with the go command into the working directory,
and (except with --quick) the omniwitness that tools/go.mod pins as a
tool; if that fails, anchoring is "not measured".
Exit status 1 if any claim failed.`

// reportFlags are the flags of bankdoor report.
type reportFlags struct {
	quick, full                        bool
	out, readme, fixture, policy, work string
	witness                            string
}

func cmdReport(e *env, args []string) int {
	fs := newFlags(e, "report", reportSynopsis)
	var f reportFlags
	fs.BoolVar(&f.quick, "quick", false, "small sizes, for CI (seconds)")
	fs.BoolVar(&f.full, "full", false, "large sizes: inclusion proofs up to a 1,000,000-leaf log (minutes)")
	fs.StringVar(&f.out, "out", "reports", "directory for bankdoor.md, bankdoor.json and latency.svg")
	fs.StringVar(&f.readme, "readme", "README.md", "README whose report block is rewritten; skipped if the file does not exist")
	fs.StringVar(&f.fixture, "fixture", "", "fixture bank binary (default: go build ./fixtures/bank-server of the current module)")
	fs.StringVar(&f.policy, "policy", "", "policy for the fixture (default: policies/bankdoor.yaml of the current module); it is copied and pinned, never changed")
	fs.StringVar(&f.witness, "witness", "", "omniwitness binary for the anchoring figures (default: go build it, except with --quick)")
	fs.StringVar(&f.work, "work", "", "working directory, kept afterwards (default: a temporary directory, removed)")
	pos, _, code, ok := parse(fs, args)
	if !ok {
		return code
	}
	if len(pos) > 0 || f.quick && f.full {
		fs.Usage()
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := runReport(ctx, e, f); err != nil {
		return fail(e, exitFailure, "report: %v", err)
	}
	return exitOK
}

func runReport(ctx context.Context, e *env, f reportFlags) error {
	mode := map[bool]string{true: "quick"}[f.quick]
	if f.full {
		mode = "full"
	}
	work, cleanup, err := reportWorkDir(f.work)
	if err != nil {
		return err
	}
	defer cleanup()
	b, root, err := reportBench(ctx, e, f, work)
	if err != nil {
		return err
	}
	r, err := report.Run(ctx, report.SettingsFor(mode), b, root, reportWitness(ctx, e, f, root, work))
	if err != nil {
		return err
	}
	if err := writeReport(e, r, f); err != nil {
		return err
	}
	if failed := report.Failed(r.Claims); len(failed) > 0 {
		var ids []string
		for _, c := range failed {
			ids = append(ids, c.ID+" ("+c.Status+")")
		}
		return fmt.Errorf("claims failed: %s; see %s", strings.Join(ids, "; "), filepath.Join(f.out, "bankdoor.md"))
	}
	return nil
}

func reportWorkDir(dir string) (string, func(), error) {
	cleanup := func() {}
	if dir == "" {
		tmp, err := os.MkdirTemp("", "bankdoor-report-")
		if err != nil {
			return "", nil, err
		}
		dir, cleanup = tmp, func() { os.RemoveAll(tmp) }
	}
	// The fixture's state files go in state/; it does not create the directory.
	if err := os.MkdirAll(filepath.Join(dir, "state"), 0o755); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("--work: %w", err)
	}
	return dir, cleanup, nil
}

// reportBench prepares what the gate runs need: this binary as the
// proxy, the fixture, a fresh key and a pinned copy of the policy.
func reportBench(ctx context.Context, e *env, f reportFlags, work string) (*report.Bench, string, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, "", fmt.Errorf("finding the bankdoor binary: %w", err)
	}
	root, rootErr := mcptest.ModuleRoot(ctx)
	b := &report.Bench{Bankdoor: self, BankServer: f.fixture, Home: filepath.Join(work, "home"), Work: work, Progress: e.stderr}
	if b.BankServer == "" {
		if rootErr != nil {
			return nil, "", fmt.Errorf("no --fixture given and %v", rootErr)
		}
		fmt.Fprintf(e.stderr, "report: building ./fixtures/bank-server of %s\n", root)
		if b.BankServer, err = mcptest.BuildFixture(ctx, work); err != nil {
			return nil, "", err
		}
	}
	src := f.policy
	if src == "" {
		if rootErr != nil {
			return nil, "", fmt.Errorf("no --policy given and %v", rootErr)
		}
		src = filepath.Join(root, "policies", "bankdoor.yaml")
	}
	if _, err := agentkey.Generate(b.Home, false); err != nil {
		return nil, "", fmt.Errorf("making the report's signing key: %w", err)
	}
	if b.Policy, err = pinnedCopy(ctx, self, src, b.BankServer, work); err != nil {
		return nil, "", err
	}
	return b, root, nil
}

// reportWitness returns --witness, or builds omniwitness into work, or
// says why anchoring is not measured.
func reportWitness(ctx context.Context, e *env, f reportFlags, root, work string) report.Witness {
	switch {
	case f.witness != "":
		return report.Witness{Bin: f.witness}
	case f.quick:
		return report.Witness{Skipped: "--quick does not build the omniwitness (tens of seconds on a cold build cache); pass --witness BIN"}
	case root == "":
		return report.Witness{Skipped: "no --witness given and not run inside the bankdoor module, so omniwitness cannot be built"}
	}
	fmt.Fprintf(e.stderr, "report: building %s with the tools module (tools/go.mod)\n", omniwitness.Pkg)
	bin := filepath.Join(work, "omniwitness")
	if err := omniwitness.Build(ctx, root, bin); err != nil {
		first, _, _ := strings.Cut(err.Error(), "\n")
		return report.Witness{Skipped: first}
	}
	return report.Witness{Bin: bin}
}

// pinnedCopy copies the policy into work and pins it against the
// fixture with `bankdoor pin --write`.
func pinnedCopy(ctx context.Context, self, src, fixture, work string) (string, error) {
	data, err := os.ReadFile(src)
	if err != nil {
		return "", fmt.Errorf("--policy: %w", err)
	}
	dst := filepath.Join(work, "policy.yaml")
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, self, "pin", "--policy", dst, "--server", "bank", "--write", "--", fixture)
	cmd.Env = mcptest.Env("BANK_FIXTURE_STATE=" + filepath.Join(work, "pin-state.json"))
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("bankdoor pin --write against %s: %v\n%s", fixture, err, out)
	}
	return dst, nil
}

// writeReport writes the JSON, the markdown and the chart into --out,
// and the README block if --readme exists.
func writeReport(e *env, r *report.Report, f reportFlags) error {
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	files := map[string]string{
		"bankdoor.json":  string(js) + "\n",
		"bankdoor.md":    report.Markdown(r),
		report.ChartFile: report.LatencySVG("tools/call latency, cumulative distribution", r.Chart),
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(f.out, name), []byte(content), 0o644); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	}
	fmt.Fprintf(e.stderr, "report: wrote %s/bankdoor.md, bankdoor.json and %s\n", f.out, report.ChartFile)
	readme, err := os.ReadFile(f.readme)
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(e.stderr, "report: no %s here; its report block is left alone\n", f.readme)
		return nil
	}
	if err != nil {
		return fmt.Errorf("--readme: %w", err)
	}
	updated, err := report.ReadmeBlock(string(readme), r)
	if err != nil {
		return fmt.Errorf("--readme %s: %w", f.readme, err)
	}
	fmt.Fprintf(e.stderr, "report: rewrote the report block of %s\n", f.readme)
	return os.WriteFile(f.readme, []byte(updated), 0o644)
}
