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
	h, ok, err := e.Log.Head(keyID)
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
		return refused(err, "the embedded ledger enrolls only the keys of the proxy's agents (its own key; with --listen, those in $BANKDOOR_HOME/agents); the receipts directory holds receipts of another key")
	case errors.Is(err, ledger.ErrChain):
		return refused(err, "the ledger database holds another chain for this key; give --ledger-db a file of its own")
	case errors.Is(err, ledger.ErrInvalid):
		return refused(err, "run bankdoor verify on the receipts directory")
	}
	return err
}
