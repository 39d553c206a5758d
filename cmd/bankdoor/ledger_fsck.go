package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"

	"github.com/bankdoor/bankdoor/ledger"
)

func cmdLedgerFsck(e *env, args []string) int {
	fs := newFlags(e, "ledger fsck", "ledger fsck --db PATH|URL --log-key VKEY [--db-password-file FILE|--db-password-env VAR]")
	var f dbFlags
	f.register(fs.FlagSet, "the ledger to check (a bbolt file must not be open in a running bankdoor ledger serve; a PostgreSQL database is read in one snapshot and may be)")
	db := &f.db
	logKey := fs.String("log-key", "", logKeyUsage)
	pos, _, code, ok := parse(fs, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return fs.usageErr("ledger fsck takes no arguments (got %q); the ledger file is --db PATH", pos[0])
	}
	if !required(fs, "db", "log-key") {
		return exitUsage
	}
	vkey, err := ledger.LoadVerifier(*logKey)
	if err != nil {
		return fail(e, exitUsage, "--log-key: %w", err)
	}
	password, err := f.password()
	if err != nil {
		return exitErr(e, exitUsage, err)
	}
	if !f.postgres() {
		if _, err := os.Stat(*db); err != nil {
			return fail(e, exitFailure, "--db: %w", err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rep, err := ledger.FsckDB(ctx, *db, password, vkey)
	if errors.Is(err, ledger.ErrLocked) {
		return exitErr(e, exitFailure, hint(fmt.Errorf("--db: %w", err), "stop the ledger server or proxy that has it open, then check it again"))
	} else if err != nil {
		return exitErr(e, exitFailure, err)
	}
	fmt.Fprintf(e.stdout, "%s: ok: %s\n", rep.Path, rep)
	return exitOK
}
