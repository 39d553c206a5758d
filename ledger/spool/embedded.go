package spool

import (
	"context"
	"errors"

	"github.com/bankdoor/bankdoor/ledger"
)

// Embedded is the Appender of a ledger in the same process.
type Embedded struct {
	Log *ledger.Log
}

// Head returns the log's head for keyID.
func (e Embedded) Head(ctx context.Context, keyID string) (Head, error) {
	h, ok, err := e.Log.Head(ctx, keyID)
	if err != nil || !ok {
		return Head{}, err
	}
	return Head{Seq: h.Seq, SHA256: h.SHA256}, nil
}

// Append appends receipts to the log. The log's refusals (ledger.ErrInvalid,
// ErrUnknownKey, ErrChain) wrap ErrRefused.
func (e Embedded) Append(ctx context.Context, receipts [][]byte) error {
	_, err := e.Log.Append(ctx, receipts)
	switch {
	case errors.Is(err, ledger.ErrUnknownKey):
		return refused(err, "the embedded ledger enrolls only the keys of the proxy's own agents, and the receipts directory holds receipts of another key")
	case errors.Is(err, ledger.ErrChain):
		return refused(err, "the embedded ledger holds another chain for this key; give these receipts a ledger file of their own")
	case errors.Is(err, ledger.ErrInvalid):
		return refused(err, "verify the receipts directory: the ledger finds a receipt in it invalid")
	}
	return err
}
