package ledger

// API CONTRACT (skeleton written by the lead so that the RPC handler, the
// proxy's shipper and the verifier can be written in parallel). The ledger
// helper replaces every body; signatures change only by agreement.

import (
	"context"
	"crypto/ed25519"
	"errors"
	"log/slog"

	"golang.org/x/mod/sumdb/note"
)

// Error kinds. Every error the Log returns wraps exactly one of them, so the
// RPC edge can map it to a Connect code with errors.Is.
var (
	ErrInvalid    = errors.New("invalid receipt")           // malformed, oversized, not canonical, bad signature -> InvalidArgument
	ErrUnknownKey = errors.New("agent key is not enrolled") // -> PermissionDenied
	ErrChain      = errors.New("receipt does not extend the agent's chain") // -> FailedPrecondition
	ErrNotFound   = errors.New("not found")                 // -> NotFound
	ErrRange      = errors.New("out of range")              // -> OutOfRange / InvalidArgument
	ErrClosed     = errors.New("ledger is closed")          // -> Unavailable
)

// Agents resolves a receipt key_id to an enrolled agent's public key.
type Agents interface {
	Lookup(keyID string) (ed25519.PublicKey, bool)
}

// Options configure a Log.
type Options struct {
	Origin   string      // checkpoint origin line; must match Signer's name
	Signer   note.Signer // signs checkpoints (Ed25519 note key)
	Agents   Agents      // enrolled agents; Append refuses others
	MaxBatch int         // receipts per group commit; 0 means the default
	Logger   *slog.Logger
}

// Head is the last receipt the log holds for one agent key.
type Head struct {
	Seq    uint64
	SHA256 [32]byte // SHA-256 of the receipt file
	Index  uint64   // its leaf index
}

// Log is an append-only Merkle log of receipts in one bbolt file.
type Log struct{}

// Open opens or creates the log at path.
func Open(path string, opts Options) (*Log, error) { return nil, errors.New("ledger: not implemented yet") }

// Close waits for in-flight batches, then closes the file.
func (l *Log) Close() error { return nil }

// Append verifies and stores receipts in order and returns their leaf
// indexes once they are durable. Either all are stored or none; the error
// names the position in the batch and the receipt's seq.
func (l *Log) Append(ctx context.Context, receipts [][]byte) ([]uint64, error) {
	return nil, ErrClosed
}

// Checkpoint returns the latest signed checkpoint note (with cosignatures).
func (l *Log) Checkpoint() []byte { return nil }

// Size returns the size of the latest checkpoint.
func (l *Log) Size() uint64 { return 0 }

// LeafIndex returns the index of the leaf with the RFC 6962 leaf hash.
func (l *Log) LeafIndex(leafHash []byte) (uint64, error) { return 0, ErrNotFound }

// InclusionProof returns the audit path of leaf index in the tree of size.
func (l *Log) InclusionProof(index, size uint64) ([][]byte, error) { return nil, ErrRange }

// ConsistencyProof proves the tree of size from is a prefix of size to.
func (l *Log) ConsistencyProof(from, to uint64) ([][]byte, error) { return nil, ErrRange }

// Entries returns up to count receipt files from index start.
func (l *Log) Entries(start, count uint64) ([][]byte, error) { return nil, ErrRange }

// Head returns the agent's head; ok is false if the log has none.
func (l *Log) Head(keyID string) (h Head, ok bool, err error) { return Head{}, false, nil }

// Watch returns a channel that receives the latest checkpoint, then every
// new one, until ctx is done. A slow reader skips to the newest.
func (l *Log) Watch(ctx context.Context) <-chan []byte { return nil }
