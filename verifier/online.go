package verifier

// Online verification: receipts that verified offline (VerifyDir) are
// proved to be in a bankdoor ledger.
//
// [VerifyInLog] fetches the ledger's latest checkpoint (a C2SP
// tlog-checkpoint signed note, https://c2sp.org/tlog-checkpoint) and
// verifies its signature with the log's verifier key, whose name must be
// the checkpoint's origin. Then, for every receipt, it asks for an
// inclusion proof of the receipt's RFC 6962 leaf hash (SHA-256 of 0x00
// followed by the receipt file) in the tree of the checkpoint's size, and
// verifies the proof against the checkpoint's root hash (RFC 6962 section
// 2.1.1). Nothing the ledger says is trusted unless the log key signed it
// or it hashes up to what the log key signed.
//
// It also asks the ledger for the agent's head (GetAgentHead). If the
// ledger holds receipts of the agent beyond the directory's last one, the
// directory has lost its tail, and verification fails. The head is not
// signed: a ledger can raise a false alarm this way, but not hide what
// the inclusion proofs show. Proving that a ledger has not itself dropped
// a tail takes a checkpoint cosigned by a witness.

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"connectrpc.com/connect"
	"github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"

	"github.com/bankdoor/bankdoor/anchor/cosignature"
	"github.com/bankdoor/bankdoor/ledger/receipt"
	ledgerv1 "github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1"
)

// LedgerClient is the part of the ledger's Connect client
// (ledgerv1connect.LedgerServiceClient) that VerifyInLog calls.
type LedgerClient interface {
	GetCheckpoint(context.Context, *connect.Request[ledgerv1.GetCheckpointRequest]) (*connect.Response[ledgerv1.GetCheckpointResponse], error)
	GetInclusionProof(context.Context, *connect.Request[ledgerv1.GetInclusionProofRequest]) (*connect.Response[ledgerv1.GetInclusionProofResponse], error)
	GetAgentHead(context.Context, *connect.Request[ledgerv1.GetAgentHeadRequest]) (*connect.Response[ledgerv1.GetAgentHeadResponse], error)
}

// A LogReport describes receipts proved to be in a ledger.
type LogReport struct {
	Origin  string   // the checkpoint's origin: the log key's name
	Size    uint64   // the checkpoint's tree size
	Root    []byte   // the checkpoint's root hash
	Indexes []uint64 // the leaf index of each receipt, in the order of Report.Receipts
}

// NotInLogError lists receipts the ledger has no proof for in the tree of
// the checkpoint's size: not shipped yet, or never.
type NotInLogError struct {
	Files []string // base names, in seq order
	Size  uint64   // the checkpoint's tree size
}

func (e *NotInLogError) Error() string {
	return fmt.Sprintf("%d of the receipts are not in the log at its checkpoint (size %d): %s; a proxy ships them when the ledger is reachable (see its log), then verify again",
		len(e.Files), e.Size, strings.Join(e.Files, ", "))
}

// VerifyInLog proves that every receipt of rep, a report of VerifyDir, is
// in the ledger client talks to, as described above; logKey is the log's
// verifier key. A receipt the ledger has no proof for gives a
// *NotInLogError naming every such receipt; a checkpoint or proof that
// does not verify, or a ledger that holds more of the chain than the
// directory, gives an *Error. Other errors are the ledger's, unreachable
// or refusing.
func VerifyInLog(ctx context.Context, rep *Report, client LedgerClient, logKey note.Verifier) (*LogReport, error) {
	cp, err := fetchCheckpoint(ctx, client, logKey)
	if err != nil {
		return nil, err
	}
	if err := checkHead(ctx, rep, client); err != nil {
		return nil, err
	}
	lr := &LogReport{Origin: cp.Origin, Size: cp.Size, Root: cp.Hash}
	var missing []string
	for _, c := range rep.Receipts {
		index, found, err := proveIncluded(ctx, client, cp, rep.Dir, c)
		if err != nil {
			return nil, err
		}
		if !found {
			missing = append(missing, c.File)
		}
		lr.Indexes = append(lr.Indexes, index)
	}
	if len(missing) > 0 {
		return nil, &NotInLogError{Files: missing, Size: cp.Size}
	}
	return lr, nil
}

// fetchCheckpoint gets the latest checkpoint and verifies it with logKey.
func fetchCheckpoint(ctx context.Context, client LedgerClient, logKey note.Verifier) (*log.Checkpoint, error) {
	resp, err := client.GetCheckpoint(ctx, connect.NewRequest(&ledgerv1.GetCheckpointRequest{}))
	if err != nil {
		return nil, fmt.Errorf("get the ledger's checkpoint: %w", err)
	}
	// The one opener every reader of checkpoints uses (verify --checkpoint,
	// the anchor, the ledger's Cosign): signature, then canonical text.
	cp, _, err := cosignature.Open(resp.Msg.GetCheckpoint(), logKey)
	if err != nil {
		return nil, &Error{Reason: fmt.Sprintf("the ledger's checkpoint does not verify with the log key %q: %v", logKey.Name(), err)}
	}
	return cp, nil
}

// checkHead fails if the ledger holds the agent's chain beyond the
// directory's last receipt.
func checkHead(ctx context.Context, rep *Report, client LedgerClient) error {
	resp, err := client.GetAgentHead(ctx, connect.NewRequest(&ledgerv1.GetAgentHeadRequest{KeyId: rep.KeyID}))
	if err != nil {
		return fmt.Errorf("get the ledger's head for key_id %s: %w", rep.KeyID, err)
	}
	if h := resp.Msg; h.GetFound() && h.GetSeq() > rep.LastSeq {
		return &Error{Reason: fmt.Sprintf("the ledger holds key_id %s up to seq %d, but the directory ends at %s (seq %d): receipts seq %d..%d are missing from the directory",
			rep.KeyID, h.GetSeq(), receipt.FileName(rep.LastSeq), rep.LastSeq, rep.LastSeq+1, h.GetSeq())}
	}
	return nil
}

// proveIncluded fetches and verifies the inclusion proof of receipt c in
// the tree of cp. found is false if the ledger has none.
func proveIncluded(ctx context.Context, client LedgerClient, cp *log.Checkpoint, dir string, c Checked) (index uint64, found bool, err error) {
	if cp.Size == 0 {
		return 0, false, nil // tree_size 0 would mean "the latest", not this one
	}
	leaf, err := leafHash(dir, c)
	if err != nil {
		return 0, false, err
	}
	resp, err := client.GetInclusionProof(ctx, connect.NewRequest(&ledgerv1.GetInclusionProofRequest{
		Leaf: &ledgerv1.GetInclusionProofRequest_LeafHash{LeafHash: leaf}, TreeSize: cp.Size,
	}))
	switch code := connect.CodeOf(err); {
	case err == nil:
	case code == connect.CodeNotFound || code == connect.CodeOutOfRange:
		return 0, false, nil
	default:
		return 0, false, fmt.Errorf("get the inclusion proof of %s: %w", c.File, err)
	}
	p := resp.Msg
	if p.GetTreeSize() != cp.Size {
		return 0, false, &Error{c.File, fmt.Sprintf("the ledger proved it in a tree of size %d, not the checkpoint's %d", p.GetTreeSize(), cp.Size)}
	}
	if err := proof.VerifyInclusion(rfc6962.DefaultHasher, p.GetIndex(), cp.Size, leaf, p.GetHashes(), cp.Hash); err != nil {
		return 0, false, &Error{c.File, fmt.Sprintf("the ledger's inclusion proof (leaf %d, tree size %d) does not verify against its signed checkpoint: %v",
			p.GetIndex(), cp.Size, err)}
	}
	return p.GetIndex(), true, nil
}

// leafHash reads the receipt file again, checks it is the one VerifyDir
// verified, and returns its RFC 6962 leaf hash.
func leafHash(dir string, c Checked) ([]byte, error) {
	b, err := readReceipt(filepath.Join(dir, c.File))
	if err != nil {
		return nil, err
	}
	if receipt.Hash(b) != c.SHA256 {
		return nil, &Error{c.File, "changed while it was being verified; verify again"}
	}
	return rfc6962.DefaultHasher.HashLeaf(b), nil
}
