package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/bankdoor/bankdoor/ledger"
)

const ledgerUsage = `usage: bankdoor ledger COMMAND [flags]

Commands:
    bankdoor ledger keygen --out FILE --origin ORIGIN [--force]
    bankdoor ledger serve --db PATH --addr HOST:PORT --log-key FILE --origin ORIGIN --agents DIR
                          [--tls-cert FILE --tls-key FILE] [--client-ca FILE] [--token-file FILE] [--auth-reads]
    bankdoor ledger fsck --db PATH

Run "bankdoor ledger COMMAND -h" for the flags of one command.
`

// cmdLedger runs the ledger's subcommands.
func cmdLedger(e *env, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(e.stderr, ledgerUsage)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	cmds := map[string]command{
		"keygen": cmdLedgerKeygen,
		"serve":  cmdLedgerServe,
		"fsck":   cmdLedgerFsck,
	}
	cmd, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(e.stderr, "bankdoor: unknown ledger command %q\n\n%s", args[0], ledgerUsage)
		return exitUsage
	}
	return cmd(e, args[1:])
}

func cmdLedgerKeygen(e *env, args []string) int {
	fs := newFlags(e, "ledger keygen", "ledger keygen --out FILE --origin ORIGIN [--force]")
	out := fs.String("out", "", "write the log's note signer key here (mode 0600), and its verifier key to FILE.vkey (required)")
	origin := fs.String("origin", "", "the log's origin, the first line of its checkpoints, e.g. ledger.example.com/bankdoor (required)")
	force := fs.Bool("force", false, "replace existing key files (checkpoints signed by the old key no longer verify with the new one)")
	pos, _, code, ok := parse(fs, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return fail(e, exitUsage, "ledger keygen takes no arguments (got %q); use --out FILE", pos[0])
	}
	if !required(e, fs, "out", "origin") {
		return exitUsage
	}
	if !*force {
		for _, p := range []string{*out, *out + ledger.VerifierKeySuffix} {
			if _, err := os.Lstat(p); err == nil {
				return fail(e, exitFailure, "ledger keygen: %s already exists; use --force to replace it", p)
			} else if !errors.Is(err, os.ErrNotExist) {
				return fail(e, exitFailure, "ledger keygen: --out: %v", err)
			}
		}
	}
	skey, vkey, err := ledger.GenerateKey(*origin)
	if err != nil {
		return fail(e, exitUsage, "ledger keygen: --origin: %v", err)
	}
	if *force {
		// WriteKey never replaces a file: remove the old pair first.
		for _, p := range []string{*out, *out + ledger.VerifierKeySuffix} {
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fail(e, exitFailure, "ledger keygen: --force: %v", err)
			}
		}
	}
	if err := ledger.WriteKey(*out, skey); err != nil {
		return fail(e, exitFailure, "ledger keygen: --out: %v", err)
	}
	fmt.Fprintln(e.stdout, vkey)
	return exitOK
}
