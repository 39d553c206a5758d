package main

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/bankdoor/bankdoor/internal/agentkey"
)

func cmdKeygen(e *env, args []string) int {
	fs := newFlags(e, "keygen", "keygen [--dir DIR] [--force]")
	dir := fs.String("dir", "", "key directory (default $BANKDOOR_HOME or ~/.config/bankdoor)")
	force := fs.Bool("force", false, "replace an existing key (its receipts stay verifiable only with the old public key)")
	pos, _, code, ok := parse(fs, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return fs.usageErr("keygen takes no arguments (got %q); the key directory is --dir DIR", pos[0])
	}
	if *dir == "" {
		d, err := agentkey.Dir()
		if err != nil {
			return exitErr(e, exitFailure, err)
		}
		*dir = d
	}
	pub, err := agentkey.Generate(*dir, *force)
	if err != nil {
		return exitErr(e, exitFailure, existsHint(err, "receipts signed with the old key then verify only with its public key"))
	}
	fmt.Fprintf(e.stdout, "key_id %s\nprivate %s\npublic %s\n", agentkey.KeyID(pub),
		filepath.Join(*dir, agentkey.PrivateFile), filepath.Join(*dir, agentkey.PublicFile))
	return exitOK
}

// existsHint adds the --force hint to an error about a key file that
// exists, saying what replacing it costs.
func existsHint(err error, cost string) error {
	if errors.Is(err, fs.ErrExist) {
		return hint(err, "use --force to replace it (%s)", cost)
	}
	return err
}
