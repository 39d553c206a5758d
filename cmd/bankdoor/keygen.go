package main

import (
	"path/filepath"

	"fmt"

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
		return fail(e, exitUsage, "keygen takes no arguments (got %q); use --dir DIR", pos[0])
	}
	if *dir == "" {
		d, err := agentkey.Dir()
		if err != nil {
			return fail(e, exitFailure, "keygen: %v", err)
		}
		*dir = d
	}
	pub, err := agentkey.Generate(*dir, *force)
	if err != nil {
		return fail(e, exitFailure, "keygen: %v", err)
	}
	fmt.Fprintf(e.stdout, "key_id %s\nprivate %s\npublic %s\n", agentkey.KeyID(pub),
		filepath.Join(*dir, agentkey.PrivateFile), filepath.Join(*dir, agentkey.PublicFile))
	return exitOK
}
