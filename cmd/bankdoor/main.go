// Command bankdoor is an allowlist proxy for financial MCP servers: it
// relays MCP over stdio between an agent and a bank's server, lets through
// only pinned, allowlisted reads with checked arguments, and leaves an
// Ed25519-signed, hash-chained receipt for every call it denies.
//
// Usage:
//
//	bankdoor keygen [--dir DIR] [--force]
//	bankdoor pin [--policy P --server S --write] -- CMD ARGS...
//	bankdoor lint --policy P
//	bankdoor decide --policy P --server S --tool T [--args JSON] [--tools-file LIST.json]
//	bankdoor proxy --policy P --server S [--receipts DIR] [--ledger URL | --ledger-db PATH] -- CMD ARGS...
//	bankdoor verify DIR --pub PEM [--policy P] [--ledger URL --log-key VKEY]
//	bankdoor verify DIR --pub PEM [--policy P] --checkpoint FILE --log-key VKEY [--witness-key VKEY]... [--witness-quorum N]
//	bankdoor export (--ledger URL | --ledger-db PATH) --key-id K --out DIR [--log-key VKEY [--witness-key VKEY]...]
//	bankdoor ledger keygen --out FILE --origin ORIGIN [--force]
//	bankdoor ledger serve --db PATH --addr HOST:PORT --log-key FILE --origin ORIGIN --agents DIR [--witness URL --witness-key VKEY]... [auth flags]
//	bankdoor anchor --ledger URL --log-key VKEY --witness URL --witness-key VKEY [--witness URL --witness-key VKEY]...
//	bankdoor ledger fsck --db PATH
//	bankdoor version
//
// Exit status: 0 ok or allow, 1 verification failed or runtime error,
// 2 deny (decide) or usage error.
//
// The measured report is a command of its own, go run ./cmd/bankdoor-report,
// so that this binary links none of its harness.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
)

const usage = `bankdoor: an allowlist proxy for financial MCP servers

Usage:
    bankdoor keygen [--dir DIR] [--force]
    bankdoor pin [--policy P --server S --write] -- CMD ARGS...
    bankdoor lint --policy P
    bankdoor decide --policy P --server S --tool T [--args JSON] [--tools-file LIST.json]
    bankdoor proxy --policy P --server S [--receipts DIR] [--ledger URL | --ledger-db PATH] -- CMD ARGS...
    bankdoor verify DIR --pub PEM [--policy P] [--ledger URL --log-key VKEY]
    bankdoor verify DIR --pub PEM [--policy P] --checkpoint FILE --log-key VKEY [--witness-key VKEY]... [--witness-quorum N]
    bankdoor export (--ledger URL | --ledger-db PATH) --key-id K --out DIR [--log-key VKEY [--witness-key VKEY]...]
    bankdoor ledger keygen --out FILE --origin ORIGIN [--force]
    bankdoor ledger serve --db PATH --addr HOST:PORT --log-key FILE --origin ORIGIN --agents DIR [--witness URL --witness-key VKEY]... [auth flags]
    bankdoor anchor --ledger URL --log-key VKEY --witness URL --witness-key VKEY [--witness URL --witness-key VKEY]...
    bankdoor ledger fsck --db PATH
    bankdoor version

Run "bankdoor COMMAND -h" for the flags of one command.
Keys live in $BANKDOOR_HOME, or ~/.config/bankdoor when it is not set.

Exit status: 0 ok or allow, 1 verification failed or runtime error,
2 deny (decide) or usage error.
`

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2 // also: decide denied
)

// env is what a command may touch of the outside world.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

type command func(e *env, args []string) int

func commands() map[string]command {
	return map[string]command{
		"keygen":  cmdKeygen,
		"pin":     cmdPin,
		"lint":    cmdLint,
		"decide":  cmdDecide,
		"proxy":   cmdProxy,
		"verify":  cmdVerify,
		"export":  cmdExport,
		"ledger":  cmdLedger,
		"anchor":  cmdAnchor,
		"version": cmdVersion,
	}
}

func main() {
	os.Exit(run(&env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}, os.Args[1:]))
}

func run(e *env, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(e.stderr, usage)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	cmd, ok := commands()[args[0]]
	if !ok {
		fmt.Fprintf(e.stderr, "bankdoor: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
	return cmd(e, args[1:])
}

func cmdVersion(e *env, args []string) int {
	v := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		v = bi.Main.Version
	}
	fmt.Fprintf(e.stdout, "bankdoor %s\n", v)
	return exitOK
}

// newFlags returns a flag set for one subcommand whose usage text is the
// synopsis followed by the flag defaults.
func newFlags(e *env, name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet("bankdoor "+name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "usage: bankdoor %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses flags that may come before or after positional arguments,
// up to a "--" after which everything is returned in rest.
func parse(fs *flag.FlagSet, args []string) (positional, rest []string, code int, ok bool) {
	for i, a := range args {
		if a == "--" {
			args, rest = args[:i], args[i+1:]
			if rest == nil {
				rest = []string{}
			}
			break
		}
	}
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, nil, exitOK, false
			}
			return nil, nil, exitUsage, false
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, rest, 0, true
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}

// fail prints an error with the command name and returns code.
func fail(e *env, code int, format string, a ...any) int {
	fmt.Fprintf(e.stderr, "bankdoor: "+format+"\n", a...)
	return code
}

// required reports a missing required flag.
func required(e *env, fs *flag.FlagSet, names ...string) bool {
	for _, n := range names {
		if fs.Lookup(n).Value.String() == "" {
			fmt.Fprintf(e.stderr, "bankdoor %s: flag --%s is required\n", fs.Name()[len("bankdoor "):], n)
			fs.Usage()
			return false
		}
	}
	return true
}
