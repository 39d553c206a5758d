package proxy

import (
	"github.com/bankdoor/bankdoor/ledger/receipt"
)

// ReceiptWriter is the part of *receipt.Writer a ReceiptRecorder uses.
type ReceiptWriter interface {
	Write(r *receipt.Receipt) (name string, sum [32]byte, err error)
}

// ReceiptRecorder records events as signed receipts in a receipts
// directory (see package ledger/receipt).
type ReceiptRecorder struct {
	W            ReceiptWriter
	Server       string
	PolicyID     string
	PolicySHA256 string
	// Notify, if set, is called after each receipt is durable, e.g. to
	// wake the spool that ships receipts to a ledger. It must not block.
	Notify func()
	// Durable, if set, is called after each receipt is durable with the
	// receipt as signed and its receipt hash, e.g. to queue it for an
	// event stream (package internal/events). It must not block.
	Durable func(r *receipt.Receipt, sum [32]byte)
}

// Record writes the event's receipt; it is durable when Record returns.
func (rr *ReceiptRecorder) Record(ev Event) (string, error) {
	names := ev.ArgNames
	if names == nil {
		names = []string{}
	}
	r := &receipt.Receipt{
		V:            1,
		Decision:     ev.Decision,
		Server:       rr.Server,
		Tool:         ev.Tool,
		Rule:         ev.Rule,
		Reason:       ev.Reason,
		ArgNames:     names,
		ArgsSHA256:   ev.ArgsSHA256,
		PolicyID:     rr.PolicyID,
		PolicySHA256: rr.PolicySHA256,
	}
	name, sum, err := rr.W.Write(r)
	if err != nil {
		return name, err
	}
	if rr.Notify != nil {
		rr.Notify()
	}
	if rr.Durable != nil {
		rr.Durable(r, sum)
	}
	return name, nil
}
