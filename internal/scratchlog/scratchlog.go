// Package scratchlog opens throwaway ledgers: a ledger.Log in a new bbolt
// file whose checkpoints are signed by a note key generated for it
// (ledger.GenerateKey, named the origin), returned with that key's
// verifier so checkpoints can be checked. Tests, benchmarks and bankdoor
// report use it; a real ledger's key comes from bankdoor ledger keygen.
package scratchlog

import (
	"fmt"

	"golang.org/x/mod/sumdb/note"

	"github.com/bankdoor/bankdoor/ledger"
)

// Log is an open ledger with its verifier key.
type Log struct {
	*ledger.Log
	VKey     string        // the log's note verifier key, ORIGIN+HASH+KEY
	Verifier note.Verifier // VKey, parsed
}

// Open opens the ledger file path (created if missing) with opts and a
// new signer key named opts.Origin, which replaces opts.Signer.
func Open(path string, opts ledger.Options) (*Log, error) {
	skey, vkey, err := ledger.GenerateKey(opts.Origin)
	if err != nil {
		return nil, fmt.Errorf("generating a log key for origin %q: %w", opts.Origin, err)
	}
	if opts.Signer, err = note.NewSigner(skey); err != nil {
		return nil, err
	}
	l := &Log{VKey: vkey}
	if l.Verifier, err = note.NewVerifier(vkey); err != nil {
		return nil, err
	}
	if l.Log, err = ledger.Open(path, opts); err != nil {
		return nil, err
	}
	return l, nil
}
