// Package ledger is bankdoor's receipt log: an append-only Merkle tree
// (RFC 6962) of receipt files in one bbolt file or a PostgreSQL database,
// with a signed checkpoint
// (C2SP tlog-checkpoint) after every committed batch, inclusion and
// consistency proofs, and per-agent chain heads.
//
// An agent's receipts form a hash chain (see package receipt); the log
// adds what a chain alone cannot give: one tree over the receipts of all
// agents whose signed root commits to every receipt so far, so a receipt
// can be shown to be in the log (inclusion proof), a later tree shown to
// extend an earlier one (consistency proof), and witnesses that cosign
// checkpoints make removing the newest receipts detectable.
//
// # Leaves and Tree Hashes
//
// The leaves are the receipt files' bytes, in the order the log accepted
// them; leaf indexes start at 0. Hashing is RFC 6962 section 2.1 with
// SHA-256:
//
//	leaf hash  SHA-256(0x00 || file)
//	node hash  SHA-256(0x01 || left || right)
//	empty tree SHA-256("") = e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
//
// For a tree of n leaves, the left subtree holds the largest power of two
// below n leaves. Example, with one-byte leaves "a" and "b" to keep it
// short (real leaves are receipt files):
//
//	leaf hash of "a"  022a6979e6dab7aa5ae4c3e5e45f7e977112a7e63593820dbec1ec738a24f93c
//	leaf hash of "b"  57eb35615d47f34ec714cacdf5fd74608a5e8e102724e80b24b287c0c27b6a31
//	root of size 2    b137985ff484fb600db93107c77b0365c80d78f5b429ded0fd97361d077999eb
//
// Inclusion and consistency proofs are those of RFC 6962 section 2.1.1
// and 2.1.2: lists of 32-byte hashes, ordered from the leaf (or the older
// tree) upward. Any tree size from 1 to the current one can be proved; a
// consistency proof from size 0 is empty (C2SP tlog-witness).
//
// # Checkpoints
//
// After each committed batch the log signs a checkpoint,
// SPEC: https://c2sp.org/tlog-checkpoint: a signed note
// (golang.org/x/mod/sumdb/note) whose text is three lines, each ending in a
// newline — the origin, the tree size in decimal, the standard base64
// root hash — then a blank line and one signature line: an em dash
// (U+2014), a space, the key name (equal to the origin), a space, and the
// base64 of the 4-byte key hash followed by the 64-byte Ed25519 signature
// of the text. Witness cosignatures (C2SP tlog-cosignature) are further
// signature lines on the same note. The checkpoint of the two-leaf example
// above, for origin bank.example/ledger, signed with the Ed25519 key whose
// seed is the bytes 0x00, 0x01, ..., 0x1f:
//
//	bank.example/ledger
//	2
//	sTeYX/SE+2ANuTEHx3sDZcgNePW0Kd7Q/Zc2HQd5mes=
//
//	— bank.example/ledger HiWmq89BK0HbZQrHKNP1MVj+0I7sNoPMJ8Bm58AW70jR4N+2UYOyQZAXIjAdhIyggGi9wnfkD/PIi6Hgh2Kd5Bd0AAs=
//
// Its verifier key, the line of the .vkey file (see [WriteKey]):
//
//	bank.example/ledger+1e25a6ab+AQOhB7/zzhC+HXDdGOdLwJln5NYwm6UNXx3chmQSVTG4
//
// A new log starts with the signed checkpoint of size 0 and the empty
// tree's root.
//
// # Appending
//
// [Log.Append] takes a request of receipt files and stores all or none
// of them. Each must be a receipt [receipt.Parse] accepts (at most
// receipt.MaxSize bytes, canonical), signed by an enrolled agent key, and
// extend that agent's chain: seq one more than the agent's head and prev
// the hex SHA-256 of the head's file, or seq 1 and 64 zeros for an agent
// the log has not seen. A file already in the log (same leaf hash) is not
// stored again; Append returns its index, so retries are harmless.
//
// One committer goroutine takes the waiting requests, up to
// Options.MaxBatch receipts, and commits them in one transaction, synced
// to disk (bbolt) or committed with synchronous_commit on (PostgreSQL),
// together with the new checkpoint (group commit). A
// refused request does not affect the others in its group. Append returns
// only once its receipts and a checkpoint covering them are durable.
//
// The committer never waits for more requests: a batch is what is queued
// when the previous commit ends, so the requests that come during a
// commit's fsyncs share the next one, and a lone appender is never
// delayed. Stats reports the batches.
//
// # Storage
//
// One bbolt file (go.etcd.io/bbolt) with seven buckets. Integers are
// 8-byte big-endian, so key order is numeric order.
//
//	bucket        key                                   value
//	entries       leaf index                            the receipt file's bytes
//	leaves        leaf hash (32 bytes)                  leaf index
//	nodes         storage index of node (level, index)  the node's 32-byte hash
//	heads         agent key_id (16 ASCII hex digits)    seq || receipt SHA-256 (32 bytes) || leaf index
//	cosignatures  tree size || witness key name         the witness's signature line(s) on the checkpoint of that size
//	witnesses     witness key name                      the largest tree size it cosigned
//	meta          "version"                             "3" (ASCII decimal)
//	              "origin"                              the origin the log was created with
//	              "size"                                tree size
//	              "checkpoint"                          the latest signed checkpoint note, log signature only
//	              "leaves_from"                         leaf index: every leaf below it is in bucket leaves
//	              "copy_incomplete"                     only while [Copy] writes the store: what it copies, from when
//
// Bucket leaves lags behind the entries: the committer keeps the leaves
// it has not indexed yet in memory, at most 32,768 plus one batch, and
// once more than 32,768 wait, each commit also writes the waiting leaves
// of the next few first bytes of the hash, in hash order, at least as many
// as it adds; so each write fills pages instead of dirtying one page per
// receipt. A leaf at or above "leaves_from" may be missing from the
// bucket; its hash is then the level 0 node of its index, and [Open]
// rebuilds the waiting set from those nodes. Lookups by leaf hash see both.
//
// A cosignature line is "— " (U+2014, space), the witness key name, a
// space, and the base64 of the key hash (4 bytes), timestamp (8) and
// Ed25519 signature (64) of C2SP tlog-cosignature. The lines in
// [CosignatureStore] were verified over the log's checkpoint of that size
// ([Log.CheckpointAt]) before they were put there, by the anchor or by the
// RPC's AddCosignature, and GetCheckpoint serves the latest checkpoint
// with those of its size (package anchor/cosignature has a worked
// example). For example, witness
// "witness.example" cosigning size 3 is the key
// 00 00 00 00 00 00 00 03 77 69 74 6e 65 73 73 2e 65 78 61 6d 70 6c 65.
//
// Node (level, index) is the root of the perfect subtree over leaves
// index·2^level to (index+1)·2^level − 1; level 0 holds the leaf hashes.
// Every complete node is stored, none of the incomplete ones on the right
// edge, so a proof reads O(log n) nodes, and [Log.NodeHashes] reads the
// hashes of the tiles of a tiled log (package ledger/tiles, SPEC:
// https://c2sp.org/tlog-tiles) without computing any. The storage index of a node is
// golang.org/x/mod/sumdb/tlog's StoredHashIndex(level, index), its
// position in the order nodes complete: (0,0) is 0, (0,1) is 1, (1,0) is
// 2, (0,2) is 3, (0,3) is 4, (1,1) is 5, (2,0) is 6.
//
// Versioning: the meta "version" names the layout above, "3"; no other
// version was released. [Open], [Fsck] and [Copy] refuse a file of any
// other version, and one lacking a bucket or "leaves_from"; any change
// to a bucket, key or value encoding, or to what a bucket is sure to
// hold, takes a new version.
//
// [Fsck] recomputes everything derivable from the entries and names the
// first inconsistency.
//
// # Copying
//
// [Copy] moves a log to another store (a bbolt file into PostgreSQL, say)
// without its log key: it copies every keyspace's stored bytes as they
// are, so the signed checkpoint and the witnesses' cosignatures stay
// valid, and writes the leaf index whole ("leaves_from" is the size). It
// writes in bounded transactions: the first sets meta "copy_incomplete",
// the meta follow the rows, and the last, once the copy's roots at every
// checkpointed size (the latest and each one a witness cosigned) match
// the source's and Fsck finds the copy consistent, deletes
// "copy_incomplete". [Open], [Fsck] and [Copy] refuse a store that still
// has it (ErrIncompleteCopy): a copy that stopped halfway holds part of a
// log at most. Nothing resumes it: empty the store and copy again.
//
// # PostgreSQL
//
// [Open] of a postgres:// or postgresql:// URL keeps the same seven
// keyspaces, with the same meta and versions, in seven tables
// (ledger_entries, ledger_leaves, ledger_nodes, ledger_heads,
// ledger_cosignatures, ledger_witnesses, ledger_meta) and a schema
// version table (ledger_schema), created on first use; the schema, table
// by table, and its transactions are documented in package
// ledger/internal/store. Each commit is one transaction that holds the
// database's writer lock (a PostgreSQL advisory lock) throughout.
//
// Several Logs, in several ledger servers, may serve one database: one
// log. The committer keeps the tree's compact range and size in memory,
// so each commit first reads, under that lock, the stored size; if another
// server appended since (or a commit of this one whose answer was lost
// was applied), it reloads the stored tree, checkpoint and leaf index and
// publishes that checkpoint before putting its batch on top. Appends from
// every server are so serialised into one tree, and each size's
// checkpoint is signed once, by the server that committed it: none writes
// over another's leaves or signs a second checkpoint of a size. Two
// servers given forks of one agent's chain at once store one; the other
// append fails with ErrChain. In PostgreSQL the leaf index is written in
// the commit that adds the leaves (no pending leaves, see leafindex.go),
// so every server finds every leaf. A server that appends nothing follows
// the others: its committer reads the stored size every second, and at
// once when [Log.Head] reads a head its checkpoint does not cover yet.
// When the database cannot be reached, appends and reads that need it
// fail with [ErrUnavailable] (retryable); the published checkpoint is
// still served.
//
// # Errors
//
// Every error a [Log] method returns wraps exactly one of [ErrInvalid],
// [ErrUnknownKey], [ErrChain], [ErrNotFound], [ErrRange], [ErrClosed],
// [ErrStorage] and [ErrUnavailable] (which may come with ErrStorage), for
// errors.Is; the message says which receipt (position
// in the request, seq, key_id) and what is wrong. An Append on a shared
// store whose log another log's database replaced returns ErrStorage
// with [ErrOtherLog]. [Open] also returns
// [ErrOtherLog], [ErrLocked] and [ErrIncompleteCopy]; [Copy] returns
// [ErrNotEmpty] too. Messages are in the ledger's own terms:
// what a command-line user should do about them is the command's to say.
package ledger
