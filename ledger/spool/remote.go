package spool

import (
	"context"
	"errors"
	"fmt"

	"connectrpc.com/connect"

	ledgerv1 "github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1"
	"github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1/ledgerv1connect"
)

// Remote is the Appender of a ledger reached over Connect RPC
// (bankdoor.ledger.v1.LedgerService: GetAgentHead and Append).
type Remote struct {
	Client ledgerv1connect.LedgerServiceClient
	URL    string // for messages
}

// Head calls GetAgentHead.
func (r Remote) Head(ctx context.Context, keyID string) (Head, error) {
	resp, err := r.Client.GetAgentHead(ctx, connect.NewRequest(&ledgerv1.GetAgentHeadRequest{KeyId: keyID}))
	if err != nil {
		return Head{}, r.classify(err)
	}
	m := resp.Msg
	if !m.GetFound() {
		if m.GetSeq() != 0 {
			return Head{}, refused(fmt.Errorf("GetAgentHead answered found=false with seq %d", m.GetSeq()), r.notLedger())
		}
		return Head{}, nil
	}
	sum := m.GetReceiptSha256()
	if m.GetSeq() == 0 || len(sum) != 32 {
		return Head{}, refused(fmt.Errorf("GetAgentHead answered seq %d with a %d-byte receipt_sha256", m.GetSeq(), len(sum)), r.notLedger())
	}
	h := Head{Seq: m.GetSeq()}
	copy(h.SHA256[:], sum)
	return h, nil
}

// Append calls Append with the batch.
func (r Remote) Append(ctx context.Context, receipts [][]byte) error {
	resp, err := r.Client.Append(ctx, connect.NewRequest(&ledgerv1.AppendRequest{Receipts: receipts}))
	if err != nil {
		return r.classify(err)
	}
	if n := len(resp.Msg.GetIndexes()); n != len(receipts) {
		return refused(fmt.Errorf("Append answered %d indexes for %d receipts", n, len(receipts)), r.notLedger())
	}
	return nil
}

func (r Remote) notLedger() string {
	return "check that " + r.URL + " is a bankdoor ledger server"
}

// classify wraps the ledger's refusals with ErrRefused; every other error
// (unavailable, deadline, internal, a proxy in the way) is retried.
func (r Remote) classify(err error) error {
	var fix string
	switch connect.CodeOf(err) {
	case connect.CodeInvalidArgument, connect.CodeOutOfRange:
		fix = "the ledger finds the receipt invalid; verify the receipts directory"
	case connect.CodeFailedPrecondition:
		fix = "the ledger holds another chain for this key; verify the receipts directory and compare it with the ledger's head"
	case connect.CodePermissionDenied:
		fix = "the ledger has not enrolled this agent key: enroll the agent's public key with the ledger, then restart the proxy"
	case connect.CodeUnauthenticated:
		fix = "the ledger did not accept the bearer token, or none was sent"
	case connect.CodeUnimplemented:
		fix = r.notLedger()
	default:
		return fmt.Errorf("ledger %s: %w", r.URL, err)
	}
	var ce *connect.Error
	if errors.As(err, &ce) {
		err = fmt.Errorf("ledger %s: %s: %s", r.URL, ce.Code(), ce.Message())
	}
	return refused(err, fix)
}
