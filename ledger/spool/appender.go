package spool

import (
	"context"
	"errors"
)

// ErrRefused is wrapped by every error an Appender returns when the ledger
// will not accept a receipt as it is: retrying the same bytes would be
// refused again (an unknown agent key, a broken chain, an invalid receipt,
// a bad token, a URL that is not a ledger). The error's text says what to
// do. Any other error is taken as the ledger being unavailable, and is
// retried.
var ErrRefused = errors.New("ledger refused the receipts")

// Head is the last receipt a ledger holds for one agent key. Seq 0 means
// the ledger holds none.
type Head struct {
	Seq    uint64
	SHA256 [32]byte // the receipt hash: SHA-256 of the receipt file
}

// An Appender is a ledger, seen from the spool. Embedded wraps the
// in-process *ledger.Log; Remote speaks to `bankdoor ledger serve`.
type Appender interface {
	// Head returns the ledger's head for the agent key keyID.
	Head(ctx context.Context, keyID string) (Head, error)
	// Append stores receipt files, in order, and returns once they are
	// durable. Either all are stored or none. A receipt the ledger already
	// holds is accepted again without being stored twice.
	Append(ctx context.Context, receipts [][]byte) error
}

// refused wraps err with ErrRefused and says how to fix it.
func refused(err error, fix string) error {
	return &refusal{err: err, fix: fix}
}

type refusal struct {
	err error
	fix string
}

func (r *refusal) Error() string {
	return ErrRefused.Error() + ": " + r.err.Error() + "; " + r.fix
}

func (r *refusal) Unwrap() []error { return []error{ErrRefused, r.err} }
