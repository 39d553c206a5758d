// Package rpc serves a ledger.Log as the Connect RPC service
// bankdoor.ledger.v1.LedgerService (proto/bankdoor/ledger/v1/ledger.proto),
// reachable with the Connect protocol (JSON or binary protobuf, over
// HTTP/1.1 or HTTP/2), gRPC and gRPC-Web, as connect-go provides them.
//
// The ledger is an RFC 6962 Merkle log of receipt files whose checkpoints
// are C2SP signed notes (SPEC: https://c2sp.org/tlog-checkpoint); this
// package adds no format of its own. It validates every request field
// before the log sees it, and gives the log's errors their Connect codes
// here, at the edge, and nowhere else.
//
// # Requests
//
//	Append               1 to 1000 receipts, each 1 to 16384 bytes. All or none are stored.
//	GetCheckpoint        the latest signed checkpoint, cosignatures included.
//	GetInclusionProof    exactly one of leaf_hash (32 bytes) or index; tree_size 0 means
//	                     the latest checkpoint's size, and no size beyond it is served.
//	GetConsistencyProof  1 <= from_size <= to_size <= the latest size (to_size 0: latest).
//	GetEntries           start below the latest size; count 0 or above 1000 means 1000,
//	                     and no entry beyond the latest checkpoint is returned.
//	GetAgentHead         key_id: 16 lower-case hex digits.
//	WatchCheckpoints     the latest checkpoint, then each new one, and again each time a
//	                     cosignature of its size is stored; cosignatures included.
//	AddCosignature       tree_size at most the latest size; cosignature: the signature
//	                     line(s) of one configured witness key, verified over the log's
//	                     checkpoint of tree_size before they are stored (see [Service.Cosign]).
//
// An Append message may be at most [MaxRequestBytes] on the wire, any
// other request [MaxReadRequestBytes]; a larger one is ResourceExhausted.
//
// # Errors
//
// Error messages say what was wrong and what fixes it. Codes:
//
//	InvalidArgument     a request field is malformed; a receipt is malformed,
//	                    oversized, not canonical or badly signed (ledger.ErrInvalid)
//	PermissionDenied    the receipt's key_id is not an enrolled agent (ledger.ErrUnknownKey);
//	                    a cosignature by no configured witness key, or one that does not verify
//	FailedPrecondition  the receipt does not extend its agent's chain (ledger.ErrChain)
//	NotFound            no leaf has that leaf_hash (ledger.ErrNotFound)
//	OutOfRange          a size or index beyond the latest checkpoint (ledger.ErrRange)
//	Unavailable         the ledger is closed or the server is stopping (ledger.ErrClosed)
//	Unauthenticated     the call needs credentials the caller did not present (see [Auth])
//	Internal            anything else; details go to the server's log only
//
// # Agents and Authentication
//
// Two separate questions are asked of an Append. Whose receipts are these?
// Each must be signed by an agent enrolled in a [Directory] of public
// keys; the log checks that. Who may send them? [Auth] answers: a bearer
// token or an mTLS client certificate. A shipper may send receipts of any
// enrolled agent, so a stolen token can replay receipts but never forge
// one, and appends are idempotent. AddCosignature is checked the same
// way, by what it carries and by who sends it: the ledger stores only
// lines that verify, with a witness key it was started with, over its own
// checkpoint of the size named, so a caller can add genuine cosignatures
// and nothing else.
//
// # Cosignatures
//
// With [Service.Cosign], GetCheckpoint and WatchCheckpoints serve the
// latest checkpoint note with the log's signature line first and then one
// line per witness that cosigned its size (C2SP tlog-cosignature, sorted
// by key name; see anchor/cosignature.Merge), read from the ledger's file
// ([ledger.CosignatureStore]). A reader checks them with
// anchor/cosignature.Policy and needs nothing else from the server.
package rpc
