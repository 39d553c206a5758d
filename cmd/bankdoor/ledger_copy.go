package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"

	"github.com/bankdoor/bankdoor/ledger"
)

const ledgerCopySynopsis = "ledger copy --from bolt:PATH --to postgres://USER@HOST[:PORT]/DBNAME --log-key VKEY [--db-password-file FILE|--db-password-env VAR]"

// boltScheme prefixes --from: the source is named by its kind, as --to
// is by its URL scheme.
const boltScheme = "bolt:"

// cmdLedgerCopy moves a bbolt ledger into an empty PostgreSQL database
// (ledger.Copy) and prints what it copied and checked.
func cmdLedgerCopy(e *env, args []string) int {
	fs := newFlags(e, "ledger copy", ledgerCopySynopsis)
	from := fs.String("from", "", "the ledger to copy: bolt:PATH, a bbolt file no running bankdoor ledger serve or proxy has open (required)")
	var to dbFlags
	to.registerAs(fs.FlagSet, "to", "the empty PostgreSQL database to copy it into: postgres://USER@HOST[:PORT]/DBNAME, without a password (required)")
	logKey := fs.String("log-key", "", logKeyUsage)
	pos, _, code, ok := parse(fs, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return fs.usageErr("ledger copy takes no arguments (got %q); the ledgers are --from bolt:PATH and --to URL", pos[0])
	}
	if !required(fs, "from", "to", "log-key") {
		return exitUsage
	}
	vkey, err := ledger.LoadVerifier(*logKey)
	if err != nil {
		return fail(e, exitUsage, "--log-key: %w", err)
	}
	path, err := copySource(*from)
	if err == nil {
		err = copyDestination(to.db)
	}
	if err != nil {
		return exitErr(e, exitUsage, err)
	}
	password, err := to.password()
	if err != nil {
		return exitErr(e, exitUsage, err)
	}
	if _, err := os.Stat(path); err != nil {
		return fail(e, exitFailure, "--from: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rep, err := ledger.Copy(ctx, path, to.db, ledger.CopyOptions{ToPassword: password, LogKey: vkey})
	if err != nil {
		return exitErr(e, exitFailure, copyError(ctx, err))
	}
	fmt.Fprintln(e.stdout, rep)
	return exitOK
}

// copySource returns the path of --from's bolt:PATH.
func copySource(from string) (string, error) {
	path, ok := strings.CutPrefix(from, boltScheme)
	switch {
	case strings.HasPrefix(from, "postgres://") || strings.HasPrefix(from, "postgresql://"):
		return "", hint(errors.New("--from is a PostgreSQL database; ledger copy copies a bbolt file into one"),
			"to move a PostgreSQL ledger, copy the database with PostgreSQL's tools (pg_dump)")
	case !ok:
		return "", hint(fmt.Errorf("--from %q does not start with %q", from, boltScheme),
			"write --from %s%s", boltScheme, from)
	case path == "":
		return "", hint(errors.New("--from bolt: names no file"), "write --from bolt:PATH")
	}
	return path, nil
}

// copyDestination checks that --to is a PostgreSQL URL.
func copyDestination(to string) error {
	if strings.HasPrefix(to, "postgres://") || strings.HasPrefix(to, "postgresql://") {
		return nil
	}
	return hint(fmt.Errorf("--to %q is not a postgres:// URL", to),
		"to copy a bbolt ledger to another file, stop its server and copy the file (cp); ledger copy writes PostgreSQL")
}

// logKeyUsage is the --log-key of ledger copy and fsck.
const logKeyUsage = "the log's verifier key, <origin>+<hash>+<key>: the line of its .vkey file (ledger.key.vkey in the key directory for a proxy's embedded ledger); the stored checkpoint must verify with it (required)"

// copyError adds the hint that fixes a failed copy.
func copyError(ctx context.Context, err error) error {
	const again = "drop the database and create it anew (DROP DATABASE, CREATE DATABASE), or drop its ledger_* tables, then run bankdoor ledger copy again"
	switch {
	case errors.Is(err, ledger.ErrLocked):
		return hint(fmt.Errorf("--from: %w", err), "stop the ledger server or proxy that has it open, then copy again")
	case errors.Is(err, ledger.ErrNotEmpty) && errors.Is(err, ledger.ErrIncompleteCopy):
		return hint(fmt.Errorf("--to: %w", err), "the database holds part of an earlier copy: %s", again)
	case errors.Is(err, ledger.ErrNotEmpty):
		return hint(fmt.Errorf("--to: %w", err), "copy into a new, empty database (CREATE DATABASE), which the ledger keeps to itself")
	case errors.Is(err, ledger.ErrCorrupt) && strings.Contains(err.Error(), "does not verify with the log key"):
		return hint(err, "nothing was copied; give the verifier key of this ledger's log key with --log-key, or, if it is that key, the ledger's checkpoint is forged or damaged")
	case errors.Is(err, ledger.ErrIncompleteCopy):
		return hint(fmt.Errorf("--from: %w", err), "it is itself an unfinished copy: copy from the ledger it was copied from")
	case errors.Is(err, ledger.ErrCorrupt):
		return hint(err, "the copy is marked unfinished and will not be served; check the source with bankdoor ledger fsck --db PATH, then %s", again)
	case ctx.Err() != nil:
		return hint(fmt.Errorf("interrupted: %w", err), "the copy is marked unfinished and will not be served: %s", again)
	}
	return hint(hint(err, "if the copy began, %s", again),
		"check that --from is a bankdoor ledger (bankdoor ledger fsck --db PATH), and that the database server is up and --to, the password and the database are right")
}
