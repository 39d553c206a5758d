package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/bankdoor/bankdoor/ledger"
)

func cmdLedgerFsck(e *env, args []string) int {
	fs := newFlags(e, "ledger fsck", "ledger fsck --db PATH")
	db := fs.String("db", "", "the ledger's bbolt file; it must not be open in a running bankdoor ledger serve (required)")
	pos, _, code, ok := parse(fs, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return fail(e, exitUsage, "ledger fsck takes no arguments (got %q); use --db PATH", pos[0])
	}
	if !required(e, fs, "db") {
		return exitUsage
	}
	if _, err := os.Stat(*db); err != nil {
		return fail(e, exitFailure, "ledger fsck: --db: %v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rep, err := ledger.Fsck(ctx, *db)
	if err != nil {
		return fail(e, exitFailure, "ledger fsck: FAILED: %v", err)
	}
	fmt.Fprintf(e.stdout, "%s: ok: %s\n", *db, rep)
	return exitOK
}
