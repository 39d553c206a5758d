// Package scratchlog opens throwaway ledgers: a ledger.Log in a new bbolt
// file or PostgreSQL database whose checkpoints are signed by a note key
// generated for it (ledger.GenerateKey, named the origin), returned with
// that key's verifier so checkpoints can be checked; Replica opens
// another ledger with the same key on the same database. Tests,
// benchmarks and bankdoor report use it; a real ledger's key comes from
// bankdoor ledger keygen.
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
	skey     string        // the signer key
}

// Open opens the ledger file path (created if missing) with opts and a
// new signer key named opts.Origin, which replaces opts.Signer.
func Open(path string, opts ledger.Options) (*Log, error) {
	skey, vkey, err := ledger.GenerateKey(opts.Origin)
	if err != nil {
		return nil, fmt.Errorf("generating a log key for origin %q: %w", opts.Origin, err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return nil, err
	}
	return open(path, opts, &Log{VKey: vkey, Verifier: v, skey: skey})
}

// Replica opens another ledger on path, a PostgreSQL database l is
// open on, with opts and l's key, as a second ledger server on one
// database runs (see ledger.Open).
func (l *Log) Replica(path string, opts ledger.Options) (*Log, error) {
	return open(path, opts, &Log{VKey: l.VKey, Verifier: l.Verifier, skey: l.skey})
}

// open opens path with opts signed by l's key, into l.
func open(path string, opts ledger.Options, l *Log) (*Log, error) {
	var err error
	if opts.Signer, err = note.NewSigner(l.skey); err != nil {
		return nil, err
	}
	if l.Log, err = ledger.Open(path, opts); err != nil {
		return nil, err
	}
	return l, nil
}
