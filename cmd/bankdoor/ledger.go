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
    bankdoor ledger serve --db PATH|URL [--db-password-file FILE|--db-password-env VAR] --addr HOST:PORT --log-key FILE --origin ORIGIN --agents DIR
                          [--tls-cert FILE --tls-key FILE] [--client-ca FILE] [--token-file FILE] [--auth-reads]
    bankdoor ledger fsck --db PATH|URL --log-key VKEY [--db-password-file FILE|--db-password-env VAR]
    bankdoor ledger copy --from bolt:PATH --to postgres://USER@HOST[:PORT]/DBNAME --log-key VKEY [--db-password-file FILE|--db-password-env VAR]

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
		"copy":   cmdLedgerCopy,
	}
	cmd, ok := cmds[args[0]]
	if !ok {
		return exitErr(e, exitUsage, hint(fmt.Errorf("unknown ledger command %q", args[0]),
			`run "bankdoor ledger help" for the list of ledger commands`))
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
		return fs.usageErr("ledger keygen takes no arguments (got %q); the key file is --out FILE", pos[0])
	}
	if !required(fs, "out", "origin") {
		return exitUsage
	}
	skey, vkey, err := ledger.GenerateKey(*origin)
	if err != nil {
		return fail(e, exitUsage, "--origin: %w", err)
	}
	files := []string{*out, *out + ledger.VerifierKeySuffix}
	if !*force {
		for _, p := range files {
			if _, err := os.Lstat(p); err == nil {
				return exitErr(e, exitFailure, existsHint(fmt.Errorf("--out: %s: %w", p, os.ErrExist),
					"checkpoints signed by the old key then no longer verify with the new one"))
			} else if !errors.Is(err, os.ErrNotExist) {
				return fail(e, exitFailure, "--out: %w", err)
			}
		}
	}
	if err := ledger.WriteKey(*out, skey, *force); err != nil {
		return fail(e, exitFailure, "--out: %w", err)
	}
	fmt.Fprintln(e.stdout, vkey)
	return exitOK
}
