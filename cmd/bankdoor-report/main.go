// Command bankdoor-report measures bankdoor end to end and writes the
// report: reports/bankdoor.md, reports/bankdoor.json, reports/latency.svg
// and the README's <!-- report:begin --> block (see internal/report for
// what is run and the JSON schema). It is its own command, not part of the
// bankdoor binary, so that the binary a user installs carries no code that
// runs the go command or rewrites README.md.
//
// Usage, from the module root:
//
//	go run ./cmd/bankdoor-report [--quick|--full] [--out DIR] [--readme FILE] [--bankdoor BIN] [--fixture BIN] [--policy P] [--witness BIN] [--tessera BIN] [--work DIR]
//
// Exit status: 0 every claim held, 1 a claim failed or the run failed,
// 2 usage error.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/bankdoor/bankdoor/internal/agentkey"
	"github.com/bankdoor/bankdoor/internal/attacks"
	"github.com/bankdoor/bankdoor/internal/mcptest"
	"github.com/bankdoor/bankdoor/internal/omniwitness"
	"github.com/bankdoor/bankdoor/internal/report"
	"github.com/bankdoor/bankdoor/internal/tesseralog"
)

const usage = `usage: bankdoor-report [--quick|--full] [--out DIR] [--readme FILE] [--bankdoor BIN] [--fixture BIN] [--policy P] [--witness BIN] [--tessera BIN] [--work DIR]

Runs the attack catalogue through bankdoor's proxy and straight to the
fixture bank, times tools/call direct, proxied and denied over stdio and
over streamable HTTP (proxy --listen), counts denies per second with 1,
2, 4 and 8 proxies on one receipts directory and times the takeover of
the embedded ledger after its holder is SIGKILLed, measures the ledger,
side by side with Tessera's POSIX log (the same load generator
driving bankdoor ledger serve and Tessera), anchoring to a real
omniwitness and offline verification (a receipts
directory, and an export bundle against its checkpoint, whole and
truncated), runs the MCP conformance suite directly and through proxy
--listen (against its reference server and server-everything; --quick
leaves the suite to go test ./internal/conformance), and writes
DIR/bankdoor.md, DIR/bankdoor.json and DIR/latency.svg; it rewrites the
<!-- report:begin --> block of the README. Nothing leaves the machine
(HTTP on 127.0.0.1 only) except the first install of the conformance
suite's pinned npm project, which needs the npm registry; fresh keys in a
temporary directory.

Run it from the module root (go run ./cmd/bankdoor-report): without
--bankdoor and --fixture it builds ./cmd/bankdoor and ./fixtures/bank-server
with the go command into the working directory, and (except with --quick)
the omniwitness that tools/go.mod pins as a tool; if that
fails, anchoring is "not measured". Without --tessera it builds Tessera's
POSIX conformance log at the version tools/tessera/go.mod pins (not
with --quick, which leaves the side by side to go test ./internal/report);
if that fails, Tessera's side is "not measured".

Flags:
    --quick          small sizes, for CI (seconds)
    --full           large sizes: inclusion proofs up to a 1,000,000-leaf log (minutes)
    --out DIR        directory for bankdoor.md, bankdoor.json and latency.svg (default reports)
    --readme FILE    README whose report block is rewritten; skipped if the
                     file does not exist (default README.md)
    --bankdoor BIN   the bankdoor binary measured as the proxy
                     (default: go build ./cmd/bankdoor of the current module)
    --fixture BIN    the fixture bank binary
                     (default: go build ./fixtures/bank-server of the current module)
    --policy P       policy for the fixture, copied with the array attacks'
                     tool added and pinned, never changed
                     (default: policies/bankdoor.yaml of the current module)
    --witness BIN    omniwitness binary for the anchoring figures
                     (default: go build it, except with --quick)
    --tessera BIN    Tessera POSIX conformance log binary for the side by side
                     (default: go build it from tools/tessera/go.mod)
    --work DIR       working directory, kept afterwards
                     (default: a temporary directory, removed)

Exit status: 0 every claim held, 1 a claim failed or the run failed,
2 usage error.
`

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// options are the flags of bankdoor-report.
type options struct {
	quick, full                                  bool
	out, readme, bankdoor, fixture, policy, work string
	witness, tessera                             string
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stderr)
	stop()
	os.Exit(code)
}

// run runs the command with args and returns its exit status; progress
// and errors go to stderr.
func run(ctx context.Context, args []string, stderr io.Writer) int {
	o, err := parseFlags(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stderr, usage)
		return exitOK
	case err != nil:
		fmt.Fprintf(stderr, "bankdoor-report: error: %v\n\n%s", err, usage)
		return exitUsage
	}
	if err := runReport(ctx, stderr, o); err != nil {
		fmt.Fprintf(stderr, "bankdoor-report: error: %v\n", err)
		return exitFailure
	}
	return exitOK
}

// flagSet returns the flags of bankdoor-report, bound to o. It prints
// nothing: run prints the error and the usage text.
func flagSet(o *options) *flag.FlagSet {
	fs := flag.NewFlagSet("bankdoor-report", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.BoolVar(&o.quick, "quick", false, "")
	fs.BoolVar(&o.full, "full", false, "")
	fs.StringVar(&o.out, "out", "reports", "")
	fs.StringVar(&o.readme, "readme", "README.md", "")
	fs.StringVar(&o.bankdoor, "bankdoor", "", "")
	fs.StringVar(&o.fixture, "fixture", "", "")
	fs.StringVar(&o.policy, "policy", "", "")
	fs.StringVar(&o.witness, "witness", "", "")
	fs.StringVar(&o.tessera, "tessera", "", "")
	fs.StringVar(&o.work, "work", "", "")
	return fs
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flagSet(&o)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if o.quick && o.full {
		return o, errors.New("--quick and --full exclude each other")
	}
	return o, nil
}

func runReport(ctx context.Context, stderr io.Writer, o options) error {
	mode := map[bool]string{true: "quick"}[o.quick]
	if o.full {
		mode = "full"
	}
	root, rootErr := mcptest.ModuleRoot(ctx)
	policy, err := readPolicy(o.policy, root, rootErr)
	if err != nil {
		return err
	}
	work, cleanup, err := workDir(o.work)
	if err != nil {
		return err
	}
	defer cleanup()
	b, err := bench(ctx, stderr, o, rootErr, policy, work)
	if err != nil {
		return err
	}
	b.Tessera = tessera(ctx, stderr, o, root, work)
	r, err := report.Run(ctx, report.SettingsFor(mode), b, root, witness(ctx, stderr, o, root, work))
	if err != nil {
		return err
	}
	if err := writeReport(stderr, r, o); err != nil {
		return err
	}
	if failed := report.Failed(r.Claims); len(failed) > 0 {
		var ids []string
		for _, c := range failed {
			ids = append(ids, c.ID+" ("+c.Status+")")
		}
		return fmt.Errorf("claims failed: %s; see %s", strings.Join(ids, "; "), filepath.Join(o.out, "bankdoor.md"))
	}
	return nil
}

// readPolicy reads --policy, or policies/bankdoor.yaml of the module,
// before anything is built or written.
func readPolicy(src, root string, rootErr error) ([]byte, error) {
	if src == "" {
		if rootErr != nil {
			return nil, fmt.Errorf("no --policy given and %v", rootErr)
		}
		src = filepath.Join(root, "policies", "bankdoor.yaml")
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return nil, fmt.Errorf("--policy: %w", err)
	}
	return data, nil
}

func workDir(dir string) (string, func(), error) {
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

// bench prepares what the gate runs need: the bankdoor binary as the
// proxy, the fixture, a fresh key and a pinned copy of the policy.
func bench(ctx context.Context, stderr io.Writer, o options, rootErr error, policy []byte, work string) (*report.Bench, error) {
	b := &report.Bench{Bankdoor: o.bankdoor, BankServer: o.fixture, Home: filepath.Join(work, "home"), Work: work, Progress: stderr}
	if err := buildMissing(ctx, stderr, b, rootErr); err != nil {
		return nil, err
	}
	if _, err := agentkey.Generate(b.Home, false); err != nil {
		return nil, fmt.Errorf("making the report's signing key: %w", err)
	}
	var err error
	if b.Policy, err = pinnedCopy(ctx, b.Bankdoor, policy, b.BankServer, work); err != nil {
		return nil, err
	}
	return b, nil
}

// buildMissing builds into b.Work the binaries that --bankdoor and
// --fixture did not name: ./cmd/bankdoor and ./fixtures/bank-server of
// the current module (one go build when both are missing).
func buildMissing(ctx context.Context, stderr io.Writer, b *report.Bench, rootErr error) error {
	var missing []string
	if b.Bankdoor == "" {
		missing = append(missing, "--bankdoor")
	}
	if b.BankServer == "" {
		missing = append(missing, "--fixture")
	}
	if len(missing) == 0 {
		return nil
	}
	if rootErr != nil {
		return fmt.Errorf("no %s given and %v", strings.Join(missing, " or "), rootErr)
	}
	var err error
	switch {
	case len(missing) == 2:
		fmt.Fprintln(stderr, "report: building ./cmd/bankdoor and ./fixtures/bank-server")
		b.Bankdoor, b.BankServer, err = mcptest.Build(ctx, b.Work)
	case b.Bankdoor == "":
		fmt.Fprintln(stderr, "report: building ./cmd/bankdoor")
		b.Bankdoor, err = mcptest.BuildBankdoor(ctx, b.Work)
	default:
		fmt.Fprintln(stderr, "report: building ./fixtures/bank-server")
		b.BankServer, err = mcptest.BuildFixture(ctx, b.Work)
	}
	return err
}

// witness returns --witness, or builds omniwitness into work, or says
// why anchoring is not measured.
func witness(ctx context.Context, stderr io.Writer, o options, root, work string) report.Witness {
	switch {
	case o.witness != "":
		return report.Witness{Bin: o.witness}
	case o.quick:
		return report.Witness{Skipped: "--quick does not build the omniwitness (tens of seconds on a cold build cache); pass --witness BIN"}
	case root == "":
		return report.Witness{Skipped: "no --witness given and not run inside the bankdoor module, so omniwitness cannot be built"}
	}
	fmt.Fprintf(stderr, "report: building %s (the tools module's version)\n", omniwitness.Pkg)
	bin := filepath.Join(work, "omniwitness")
	if err := omniwitness.Build(ctx, root, bin); err != nil {
		first, _, _ := strings.Cut(err.Error(), "\n")
		return report.Witness{Skipped: first}
	}
	return report.Witness{Bin: bin}
}

// tessera returns --tessera, or builds Tessera's POSIX conformance log
// into work, or says why the side by side has no Tessera.
func tessera(ctx context.Context, stderr io.Writer, o options, root, work string) report.Tessera {
	switch {
	case o.tessera != "":
		return report.Tessera{Bin: o.tessera}
	case o.quick:
		return report.Tessera{Skipped: "--quick runs no side by side"}
	case root == "":
		return report.Tessera{Skipped: "no --tessera given and not run inside the bankdoor module, so the Tessera log cannot be built"}
	}
	fmt.Fprintf(stderr, "report: building %s %s (tools/tessera/go.mod)\n", tesseralog.Pkg, tesseralog.Version)
	bin := filepath.Join(work, "tessera-posix")
	if err := tesseralog.Build(ctx, root, bin); err != nil {
		first, _, _ := strings.Cut(err.Error(), "\n")
		return report.Tessera{Skipped: first}
	}
	return report.Tessera{Bin: bin}
}

// pinnedCopy writes into work the policy the attack catalogue runs
// against (attacks.Policy: the policy with the array attacks' tool
// added) and pins it against the fixture with `bankdoor pin --write`.
func pinnedCopy(ctx context.Context, bankdoor string, policy []byte, fixture, work string) (string, error) {
	dst := filepath.Join(work, "policy.yaml")
	f := mcptest.Fixture{Bin: fixture, State: filepath.Join(work, "pin-state.json")}
	if err := attacks.PinPolicy(ctx, bankdoor, f, policy, dst); err != nil {
		return "", fmt.Errorf("the report's policy: %w", err)
	}
	return dst, nil
}

// writeReport writes the JSON, the markdown and the chart into --out,
// and the README block if --readme exists.
func writeReport(stderr io.Writer, r *report.Report, o options) error {
	if err := os.MkdirAll(o.out, 0o755); err != nil {
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
		if err := os.WriteFile(filepath.Join(o.out, name), []byte(content), 0o644); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	}
	fmt.Fprintf(stderr, "report: wrote %s/bankdoor.md, bankdoor.json and %s\n", o.out, report.ChartFile)
	readme, err := os.ReadFile(o.readme)
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(stderr, "report: no %s here; its report block is left alone\n", o.readme)
		return nil
	}
	if err != nil {
		return fmt.Errorf("--readme: %w", err)
	}
	updated, err := report.ReadmeBlock(string(readme), r)
	if err != nil {
		return fmt.Errorf("--readme %s: %w", o.readme, err)
	}
	fmt.Fprintf(stderr, "report: rewrote the report block of %s\n", o.readme)
	return os.WriteFile(o.readme, []byte(updated), 0o644)
}
