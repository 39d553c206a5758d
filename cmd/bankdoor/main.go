// Command bankdoor is an allowlist proxy for financial MCP servers: it
// relays MCP over stdio between an agent and a bank's server, lets through
// only pinned, allowlisted reads with checked arguments, and leaves an
// Ed25519-signed, hash-chained receipt for every call it denies.
//
// Usage:
//
//	bankdoor keygen [--dir DIR] [--force]
//	bankdoor pin [--policy P --server S --write] [--hashes] (-- CMD ARGS... | --url URL)
//	bankdoor init [--server S] [--id ID] (-- CMD ARGS... | --url URL)
//	bankdoor lint --policy P
//	bankdoor decide --policy P --server S --tool T [--args JSON] [--tools-file LIST.json]
//	bankdoor proxy --policy P --server S [--receipts DIR] [--ledger URL | --ledger-db PATH] -- CMD ARGS...
//	bankdoor verify DIR --pub PEM [--policy P] [--ledger URL --log-key VKEY]
//	bankdoor verify DIR --pub PEM [--policy P] --checkpoint FILE --log-key VKEY [--witness-key VKEY]... [--witness-quorum N]
//	bankdoor export (--ledger URL | --ledger-db PATH) --key-id K --out DIR [--log-key VKEY [--witness-key VKEY]...]
//	bankdoor export (--ledger URL --log-key VKEY | --ledger-db PATH) --tiles DIR [--witness-key VKEY]...
//	bankdoor ledger keygen --out FILE --origin ORIGIN [--force]
//	bankdoor ledger serve --db PATH --addr HOST:PORT --log-key FILE --origin ORIGIN --agents DIR [--witness URL --witness-key VKEY]... [auth flags]
//	bankdoor anchor --ledger URL --log-key VKEY --witness URL --witness-key VKEY [--witness URL --witness-key VKEY]...
//	bankdoor ledger fsck --db PATH --log-key VKEY
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
    bankdoor pin [--policy P --server S --write] [--hashes] (-- CMD ARGS... | --url URL)
    bankdoor init [--server S] [--id ID] (-- CMD ARGS... | --url URL)
    bankdoor lint --policy P
    bankdoor decide --policy P --server S --tool T [--args JSON] [--tools-file LIST.json]
    bankdoor proxy --policy P --server S [--receipts DIR] [--ledger URL | --ledger-db PATH] -- CMD ARGS...
    bankdoor verify DIR --pub PEM [--policy P] [--ledger URL --log-key VKEY]
    bankdoor verify DIR --pub PEM [--policy P] --checkpoint FILE --log-key VKEY [--witness-key VKEY]... [--witness-quorum N]
    bankdoor export (--ledger URL | --ledger-db PATH) --key-id K --out DIR [--log-key VKEY [--witness-key VKEY]...]
    bankdoor export (--ledger URL --log-key VKEY | --ledger-db PATH) --tiles DIR [--witness-key VKEY]...
    bankdoor ledger keygen --out FILE --origin ORIGIN [--force]
    bankdoor ledger serve --db PATH --addr HOST:PORT --log-key FILE --origin ORIGIN --agents DIR [--witness URL --witness-key VKEY]... [auth flags]
    bankdoor anchor --ledger URL --log-key VKEY --witness URL --witness-key VKEY [--witness URL --witness-key VKEY]...
    bankdoor ledger fsck --db PATH --log-key VKEY
    bankdoor version

Run "bankdoor COMMAND -h" for the flags of one command.
Keys live in $BANKDOOR_HOME, or ~/.config/bankdoor when it is not set.

Exit status: 0 ok or allow, 1 verification failed or runtime error,
2 deny (decide) or usage error.
`

// Exit codes, one rule for every command:
//
//   - exitUsage: the command line cannot work as given: a flag or
//     argument missing, malformed or in conflict with another, or a file
//     a flag names as input (policy, key, certificate, token or tools
//     file) that cannot be read or parsed; nothing has been done. Also
//     decide's deny.
//   - exitFailure: the work failed: the check that is the command's
//     purpose found a fault (verify, lint, ledger fsck), or a runtime
//     error (a ledger file or receipts directory that cannot be used, an
//     address that cannot be listened on, a ledger or bank server that
//     cannot be reached or refuses).
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
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
		"init":    cmdInit,
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
	if args[0] == "--version" || args[0] == "-version" {
		return cmdVersion(e, args[1:])
	}
	cmd, ok := commands()[args[0]]
	if !ok {
		return exitErr(e, exitUsage, hint(fmt.Errorf("unknown command %q", args[0]),
			`run "bankdoor help" for the list of commands`))
	}
	return cmd(e, args[1:])
}

// cmdVersion prints the version the binary was built as: its module
// version, or "(devel)" for a build from a work tree.
func cmdVersion(e *env, args []string) int {
	if len(args) > 0 {
		return exitErr(e, exitUsage, hint(fmt.Errorf("version takes no arguments (got %q)", args[0]), "usage: bankdoor version"))
	}
	v := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		v = bi.Main.Version
	}
	fmt.Fprintf(e.stdout, "bankdoor %s\n", v)
	return exitOK
}

// Errors and notes on stderr, in one shape for every command (after
// cmd/age):
//
//	bankdoor: error: WHAT IS WRONG
//	bankdoor: hint: HOW TO FIX IT
//	bankdoor: warning: WHAT MAY BE WRONG
//	bankdoor: WHAT HAPPENED
//
// Messages are lower-case, without a final period. Library packages
// return errors in their own terms; the commands add the flag at fault
// (as a prefix, "--db: ...") and the hints, which name flags and
// commands. The exit code is the command's to choose: exitUsage for
// flags or arguments that cannot work as given, exitFailure for
// everything that went wrong while doing the work.

// hinted is an error with lines that say how to fix it.
type hinted struct {
	err   error
	hints []string
}

func (h *hinted) Error() string { return h.err.Error() }
func (h *hinted) Unwrap() error { return h.err }

// hint returns err with one more hint; an error that wraps the result
// (with %w) keeps the hints. hint(nil, ...) is nil.
func hint(err error, format string, a ...any) error {
	if err == nil {
		return nil
	}
	return &hinted{err: err, hints: []string{fmt.Sprintf(format, a...)}}
}

// hints returns the hints of err and of every error it wraps, outermost
// first.
func hints(err error) []string {
	var out []string
	var walk func(error)
	walk = func(err error) {
		if h, ok := err.(*hinted); ok {
			out = append(out, h.hints...)
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			if next := u.Unwrap(); next != nil {
				walk(next)
			}
		case interface{ Unwrap() []error }:
			for _, next := range u.Unwrap() {
				walk(next)
			}
		}
	}
	walk(err)
	return out
}

// exitErr prints err and its hints and returns code.
func exitErr(e *env, code int, err error) int {
	fmt.Fprintf(e.stderr, "bankdoor: error: %v\n", err)
	for _, h := range hints(err) {
		fmt.Fprintf(e.stderr, "bankdoor: hint: %s\n", h)
	}
	return code
}

// fail prints an error made with fmt.Errorf(format, a...), and the hints
// of any error it wraps, and returns code.
func fail(e *env, code int, format string, a ...any) int {
	return exitErr(e, code, fmt.Errorf(format, a...))
}

// printf prints a note about what the command did.
func (e *env) printf(format string, a ...any) {
	fmt.Fprintf(e.stderr, "bankdoor: "+format+"\n", a...)
}

// warningf prints a warning: the command goes on.
func (e *env) warningf(format string, a ...any) {
	fmt.Fprintf(e.stderr, "bankdoor: warning: "+format+"\n", a...)
}

// flags is the flag set of one command, with its synopsis.
type flags struct {
	*flag.FlagSet
	e        *env
	name     string // e.g. "ledger serve"
	synopsis string
}

// newFlags returns the flag set of the command name, whose usage text
// (-h) is the synopsis followed by the flag defaults.
func newFlags(e *env, name, synopsis string) *flags {
	f := &flags{FlagSet: flag.NewFlagSet("bankdoor "+name, flag.ContinueOnError), e: e, name: name, synopsis: synopsis}
	f.SetOutput(io.Discard) // parse prints errors in the bankdoor shape
	f.Usage = f.usage
	return f
}

func (f *flags) usage() {
	fmt.Fprintf(f.e.stderr, "usage: bankdoor %s\n\nFlags:\n", f.synopsis)
	f.SetOutput(f.e.stderr)
	f.PrintDefaults()
	f.SetOutput(io.Discard)
}

// usageErr prints a usage error (flags or arguments the command does
// not take) with the synopsis as a hint, and returns exitUsage.
func (f *flags) usageErr(format string, a ...any) int {
	return exitErr(f.e, exitUsage, hint(fmt.Errorf(format, a...), "usage: bankdoor %s", f.synopsis))
}

// parse parses flags that may come before or after positional arguments,
// up to a "--" after which everything is returned in rest. On -h it
// prints the usage and returns exit code 0 and ok false; on a flag error
// it prints a usage error and returns exitUsage and ok false.
func parse(fs *flags, args []string) (positional, rest []string, code int, ok bool) {
	for i, a := range args {
		if a == "--" {
			args, rest = args[:i], args[i+1:]
			if rest == nil {
				rest = []string{}
			}
			break
		}
	}
	fs.Usage = func() {} // the flag package calls it on every error
	defer func() { fs.Usage = fs.usage }()
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.usage()
				return nil, nil, exitOK, false
			}
			return nil, nil, fs.usageErr("%v", err), false
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, rest, 0, true
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}

// required reports the first of the named flags that is missing as a
// usage error.
func required(fs *flags, names ...string) bool {
	for _, n := range names {
		if fs.Lookup(n).Value.String() == "" {
			fs.usageErr("--%s is required", n)
			return false
		}
	}
	return true
}

// flagSet reports whether the named flag was given.
func flagSet(fs *flag.FlagSet, name string) bool {
	found := false
	fs.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	return found
}
