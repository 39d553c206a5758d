// Package store is the ledger's storage: a narrow, transactional
// key-value interface (Store, Tx) that the ledger's Merkle log is written
// against, a bbolt backend (OpenBolt), a PostgreSQL backend
// (OpenPostgres), and testStorage, the suite every backend must pass.
//
// # Layout
//
// A store holds seven keyspaces. Integers are unsigned 64-bit big-endian, so
// byte order is numeric order.
//
//	entries       key: leaf index (8 bytes)             value: the receipt file's bytes (1..receipt.MaxSize)
//	leaves        key: RFC 6962 leaf hash (32 bytes)     value: leaf index (8 bytes)
//	nodes         key: storage index (8 bytes)          value: 32-byte hash of that complete subtree
//	heads         key: agent key_id (ASCII)             value: seq (8) || receipt SHA-256 (32) || leaf index (8)
//	meta          key: name (ASCII)                     value: see the Meta* constants
//	cosignatures  key: tree size (8) || witness name    value: the witness's signature line(s) on the checkpoint of that size
//	witnesses     key: witness name                     value: the largest tree size it cosigned (8 bytes)
//
// Node (level, index) is the root of the perfect subtree over leaves
// [index·2^level, (index+1)·2^level); level 0 nodes are the leaf hashes.
// The store keeps every complete node, none of the ephemeral ones. A
// node's storage index is golang.org/x/mod/sumdb/tlog's
// StoredHashIndex(level, index): the position of the node in the order
// nodes complete as leaves are appended (leaf 0, leaf 1, node (1,0),
// leaf 2, ...), so appends only ever add keys at the end. For example
// node (0,0) is key 0, (0,1) is 1, (1,0) is 2, (0,2) is 3, (2,0) is 6.
//
// The bbolt backend keeps each keyspace in the bucket of that name, keys
// and values as above.
//
// # PostgreSQL
//
// The PostgreSQL backend keeps each keyspace in a table named ledger_
// and the keyspace, in the connection's schema (search_path; give the
// ledger a database, or a schema, of its own: its tables are not created
// in a schema that holds others). Integers are bigint: a
// value above 2⁶³−1 is refused on write. Text columns are COLLATE "C",
// so they sort by bytes, as the bbolt keys do.
//
//	ledger_schema        version integer                   one row: the schema version, SchemaVersion (1)
//	ledger_meta          key text PRIMARY KEY              value bytea: as in keyspace meta
//	ledger_entries       idx bigint PRIMARY KEY            data bytea: the receipt file's bytes
//	ledger_leaves        hash bytea PRIMARY KEY            idx bigint: leaf index
//	ledger_nodes         id bigint PRIMARY KEY             hash bytea: the node of storage index id (see below)
//	ledger_heads         key_id text PRIMARY KEY           seq bigint, sha256 bytea (32 bytes), leaf_index bigint
//	ledger_cosignatures  (size bigint, witness text) PK    lines bytea: the witness's signature line(s) on that size
//	ledger_witnesses     witness text PRIMARY KEY          size bigint: the largest tree size it cosigned
//
// ledger_schema's version names the tables above, as meta "version"
// names what they hold: OpenPostgres creates the tables in a database
// without them, will migrate an older schema when there is one, and
// refuses a newer one. Any change to a table or column takes a new
// schema version.
//
// Every Update takes the transaction-level advisory lock
// pg_advisory_xact_lock(0x62616e6b646f6f72) (the bytes "bankdoor") first,
// so the Updates of all the processes using one database run one at a
// time, each seeing what the previous one committed. Transactions are
// READ COMMITTED: under that lock nothing else writes, so the stronger
// levels would add only their cost (SERIALIZABLE's predicate locks and
// retries). Connections set synchronous_commit on, so a commit has
// reached the server's WAL on disk (with the server's fsync on) before
// Update returns. Views are REPEATABLE READ READ ONLY: one snapshot.
// Writes are buffered in the transaction and sent before its next read
// and at commit as one multi-row upsert per table (INSERT ... SELECT FROM
// unnest(...) ON CONFLICT DO UPDATE), in one round trip. The ForEach
// methods read pageRows rows per query (keyset pagination in key order),
// so they stream a table of any size in bounded memory. Errors that say
// the server could not be reached or the connection broke (no connection
// made, a network error or timeout, SQLSTATE class 08, 57P01-57P03,
// 53300) wrap ErrUnavailable; a connection is given 10 s to be made
// unless the connection string sets connect_timeout.
//
// # Versioning
//
// The leaves keyspace may lag behind the entries: meta "leaves_from" (8
// bytes) says that every leaf below that index is in it; a leaf at or
// above it may be missing, and its hash is then only the level 0 node of
// its index. An entry in the leaves keyspace is always right.
//
// Meta key "version" holds the decimal ASCII format version, "3" (no
// other version was released). A reader refuses a store of any other
// version: any change to a key or value encoding above, or to what a
// keyspace is guaranteed to hold, takes a new version.
package store

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/transparency-dev/merkle/compact"
	"golang.org/x/mod/sumdb/tlog"
)

// Version is the storage format version written to meta key "version".
const Version = "3"

// Meta keys.
const (
	MetaVersion    = "version"     // decimal ASCII, Version
	MetaOrigin     = "origin"      // the checkpoint origin line the log was created with
	MetaSize       = "size"        // tree size, 8 bytes big-endian
	MetaCheckpoint = "checkpoint"  // the latest signed checkpoint note, as served
	MetaLeavesFrom = "leaves_from" // 8 bytes big-endian: every leaf below it is in the leaves keyspace
	// MetaCopyIncomplete marks a store a copy is being written into (see
	// ledger.Copy): ASCII text naming the source and the time the copy
	// began. The copy sets it in its first transaction, before any row,
	// and deletes it in its last, once the rows and the other meta keys
	// are written and checked. A reader refuses a store that has it.
	MetaCopyIncomplete = "copy_incomplete"
)

// ErrReadOnly is returned by a write in a View transaction or in a store
// opened read-only.
var ErrReadOnly = errors.New("store is read-only")

// Head is the latest receipt of one agent key.
type Head struct {
	Seq    uint64
	SHA256 [32]byte
	Index  uint64
}

// A Store runs closure transactions. Update makes fn's writes durable
// (synced to stable storage) before it returns nil; if fn returns an
// error, or the commit fails, nothing fn wrote is kept. View runs fn on a
// consistent snapshot. Stores are safe for concurrent use; a backend may
// serialise Update calls. Postgres serialises them across processes too:
// the Updates of every process on one database run one at a time, each
// seeing everything the previous ones committed, so an Update can tell
// whether another process wrote since (e.g. by meta "size").
type Store interface {
	View(fn func(Tx) error) error
	// Read runs fn read-only without the promise of one snapshot: each
	// read sees what was committed when it ran (a PostgreSQL statement
	// outside a transaction: no BEGIN and ROLLBACK round trips). It is
	// for reads of what no commit changes once written, e.g. the nodes
	// and entries of a tree size already published.
	Read(fn func(Tx) error) error
	Update(fn func(Tx) error) error
	Close() error
	// Shared reports whether other processes may write to the store
	// while this one has it open: true for PostgreSQL, false for a
	// bbolt file, which one process holds at a time.
	Shared() bool
}

// ErrUnavailable is wrapped by the errors of a store that could not be
// reached: a database connection that could not be made or was lost, or
// a server shutting down or refusing connections. Trying again later may
// succeed; if it was a commit that failed, it may have been applied.
var ErrUnavailable = errors.New("the ledger database is unreachable")

// Tx reads and writes one transaction. Slices returned by getters belong
// to the caller; slices passed to ForEach callbacks are valid only during
// the call. Getters return a nil slice or ok == false for a missing key.
type Tx interface {
	Meta(key string) ([]byte, error)
	SetMeta(key string, value []byte) error
	// DeleteMeta removes key from the meta keyspace; a missing key is
	// not an error.
	DeleteMeta(key string) error

	Entry(index uint64) ([]byte, error)
	PutEntry(index uint64, data []byte) error
	// ForEachEntry calls fn for each entry from index start on, in order,
	// until fn returns an error.
	ForEachEntry(start uint64, fn func(index uint64, data []byte) error) error
	// Entries returns the first n entries from index start on, in order,
	// with their indexes (fewer if the store holds fewer), in one read.
	Entries(start uint64, n int) (indexes []uint64, data [][]byte, err error)

	LeafIndex(leafHash []byte) (index uint64, ok bool, err error)
	// LeafIndexes returns LeafIndex of each of leafHashes, in order (found
	// false for a missing one), in one read where the backend can (Open's
	// and fsck's checks of many leaves).
	LeafIndexes(leafHashes [][]byte) (indexes []uint64, found []bool, err error)
	PutLeafIndex(leafHash []byte, index uint64) error
	ForEachLeaf(fn func(leafHash []byte, index uint64) error) error

	Node(id compact.NodeID) ([]byte, error)
	// Nodes returns the hashes of ids, in order, nil for a missing one:
	// Node of each, in one read where the backend can (a proof's or a
	// tile's nodes).
	Nodes(ids []compact.NodeID) ([][]byte, error)
	PutNode(id compact.NodeID, hash []byte) error
	ForEachNode(fn func(id compact.NodeID, hash []byte) error) error

	Head(keyID string) (h Head, ok bool, err error)
	// Heads returns the heads of the keyIDs the store has, in one read
	// where the backend can (the agents of a batch).
	Heads(keyIDs []string) (map[string]Head, error)
	PutHead(keyID string, h Head) error
	ForEachHead(fn func(keyID string, h Head) error) error

	// Cosignature returns the lines witness signed over the log's
	// checkpoint of size, or nil.
	Cosignature(size uint64, witness string) ([]byte, error)
	// PutCosignature stores lines as witness's cosignature of size,
	// replacing any earlier one. witness must not be empty.
	PutCosignature(size uint64, witness string, lines []byte) error
	// ForEachCosignature calls fn for each witness's lines on the
	// checkpoint of size, in witness name order, until fn returns an error.
	ForEachCosignature(size uint64, fn func(witness string, lines []byte) error) error
	// ForEachCosignedSize calls fn for each tree size with at least one
	// stored cosignature, in increasing order, until fn returns an error.
	// fn may read the transaction.
	ForEachCosignedSize(fn func(size uint64) error) error
	// WitnessSize returns the largest size recorded for witness with
	// PutWitnessSize; ok is false if none was.
	WitnessSize(witness string) (size uint64, ok bool, err error)
	PutWitnessSize(witness string, size uint64) error
	// ForEachWitness calls fn for each witness with its WitnessSize, in
	// name order, until fn returns an error.
	ForEachWitness(fn func(witness string, size uint64) error) error
}

// Encodings shared by backends that store bytes under byte keys.

// IndexKey encodes a leaf index.
func IndexKey(i uint64) []byte { return binary.BigEndian.AppendUint64(nil, i) }

// ParseIndex decodes IndexKey's output.
func ParseIndex(b []byte) (uint64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("index is %d bytes, want 8", len(b))
	}
	return binary.BigEndian.Uint64(b), nil
}

// MaxNodeIndex bounds node indexes at level 0: a log holds fewer than
// 2⁶¹ leaves, so every storage index fits in an int64.
const MaxNodeIndex = 1 << 61

// NodeKey encodes a node ID as its 8-byte storage index. id.Index<<id.Level
// must be below MaxNodeIndex.
func NodeKey(id compact.NodeID) []byte {
	return IndexKey(uint64(tlog.StoredHashIndex(int(id.Level), int64(id.Index))))
}

// ParseNodeKey decodes NodeKey's output.
func ParseNodeKey(b []byte) (compact.NodeID, error) {
	i, err := ParseIndex(b)
	if err != nil || i >= 2*MaxNodeIndex {
		return compact.NodeID{}, fmt.Errorf("node key %x is not an 8-byte storage index below 2⁶²", b)
	}
	level, n := tlog.SplitStoredHashIndex(int64(i))
	return compact.NewNodeID(uint(level), uint64(n)), nil
}

// headSize is the encoded size of a Head.
const headSize = 8 + 32 + 8

// EncodeHead encodes h as seq || sha256 || index.
func EncodeHead(h Head) []byte {
	b := make([]byte, 0, headSize)
	b = binary.BigEndian.AppendUint64(b, h.Seq)
	b = append(b, h.SHA256[:]...)
	return binary.BigEndian.AppendUint64(b, h.Index)
}

// ParseHead decodes EncodeHead's output.
func ParseHead(b []byte) (Head, error) {
	if len(b) != headSize {
		return Head{}, fmt.Errorf("head is %d bytes, want %d", len(b), headSize)
	}
	var h Head
	h.Seq = binary.BigEndian.Uint64(b)
	copy(h.SHA256[:], b[8:40])
	h.Index = binary.BigEndian.Uint64(b[40:])
	return h, nil
}
