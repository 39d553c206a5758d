// Package bundle is the format of an export bundle: the directory
// `bankdoor export` writes for an auditor to carry offline, and
// `bankdoor verify DIR --checkpoint FILE --log-key VKEY --witness-key VKEY`
// checks with nothing else (package verifier, VerifyAnchored).
//
// A bundle holds one agent's receipts, the ledger checkpoint they are
// proved against with the witness cosignatures the ledger had for it, an
// inclusion proof per receipt in that checkpoint's tree, and the tail
// evidence that shows the agent has no later receipt in the tree. The
// verifier keys in it are for the auditor's information only: verify
// trusts the keys given on its command line, never the bundle's.
//
// # Files
//
// All text files are UTF-8, lines end in "\n" (also the last), fields are
// separated by one space, numbers are canonical decimal (no sign, no
// leading zero), hashes are 32 bytes in standard padded base64 (RFC 4648
// section 4) and all proofs are RFC 6962 (section 2.1.1) with SHA-256, as
// in package ledger.
//
//	bundle        the manifest, five lines:
//	                bankdoor export v1
//	                key_id K        the agent's key_id (16 lower-case hex digits)
//	                size N          the checkpoint's tree size
//	                head SEQ INDEX  the agent's last receipt in the tree: its seq and leaf index
//	                range H...      the inclusion proof of leaf INDEX in the tree of size
//	                                INDEX+1 (empty when INDEX is 0): read from the last
//	                                hash to the first, the compact range of leaves 0..INDEX-1
//	checkpoint    the checkpoint note as the ledger served it: a C2SP
//	              tlog-checkpoint signed by the log, with C2SP tlog-cosignature
//	              lines by witnesses (https://c2sp.org/tlog-checkpoint,
//	              https://c2sp.org/tlog-cosignature)
//	log.vkey      the log's verifier key (note vkey format), one line; empty if
//	              the exporter was not given it
//	witness.vkey  zero or more witness verifier keys, one a line
//	proofs        one line per receipt, seq 1 to SEQ in order:
//	                SEQ INDEX H...  the inclusion proof of leaf INDEX in the tree of size N
//	tail          the log's entries INDEX to N-1 (the head receipt, then every
//	              later entry of the log, of any agent), each followed by "\n";
//	              a receipt holds no newline byte (RFC 8785 escapes it)
//	receipts/     the agent's receipt files 000001.json to SEQ, as in package
//	              receipt
//	tlog-proofs/  000001.tlog-proof to SEQ: each receipt's proofs line and the
//	              checkpoint as a C2SP tlog-proof (https://c2sp.org/tlog-proof,
//	              package tlogproof), whose entry is the receipt file's bytes:
//	              one receipt and its tlog-proof verify with any tlog-proof
//	              verifier and the log's and witnesses' keys. A bundle written
//	              before it may lack the directory; verify checks it when it is
//	              there
//
// # What the tail proves
//
// The compact range of the leaves before INDEX (from range) followed by
// the leaf hashes of the tail entries hashes to the checkpoint's root
// only if the tail is exactly the log's last N-INDEX entries. The first
// of them is the head receipt; a receipt of the agent later in the tail
// would be one the bundle lacks. A ledger appends an agent's receipts in
// seq order, so every receipt of the agent in the tree has a seq at most
// SEQ, and the hash chain from the head down to seq 1 (each prev is the
// SHA-256 of the receipt before) binds every earlier receipt. Anyone who
// removes receipts from the directory and rewrites the manifest, proofs
// and tail to match cannot make them hash to the cosigned root: verify
// names the missing seqs either way.
//
// The cost is the tail: every entry the log took after the agent's last
// receipt, with those entries' metadata (tool names, argument names,
// never values) of other agents. Limits: receipts appended after the
// checkpoint are not covered by it; export again after the next cosigned
// checkpoint. A log that broke its own seq-order rule, signed by the log
// key and cosigned, is shown by `bankdoor ledger fsck`, not by a bundle.
//
// # Example
//
// A log whose leaves are, in order, A1, B1, A2, B2 (receipts seq 1 and 2
// of agents A and B), signed by the ledger package's example key, and
// exported for A (key_id a18112b0b7b4225f). Example in example_test.go
// makes it from fixed keys and checks every byte below. A's head is seq
// 2 at leaf 2; range is the one hash of leaves 0..1; the tail is leaves 2
// and 3, A2 then B2; witness.vkey is empty (no witness in the example).
//
//	-- bundle --
//	bankdoor export v1
//	key_id a18112b0b7b4225f
//	size 4
//	head 2 2
//	range L1dblwjRLeWBSBzhzLFWB3fKFWoZrVpimP1kj91tTsA=
//	-- proofs --
//	1 0 qzTzSntI4GAy2m2uKBFaMZr1vp2Z8nWfvrxpWA3ZlSU= VURjN8C9Sgy2jMqhig1X9zXhQv0/iYoFJ4xZ5cVp5LM=
//	2 2 c36ghI8jFWn6JASdrd4UWWYHeOAWBrFKVwr0fn+d0NY= L1dblwjRLeWBSBzhzLFWB3fKFWoZrVpimP1kj91tTsA=
//	-- checkpoint --
//	bank.example/ledger
//	4
//	kZUgG00GUqFg31KNNgmyee/l/2tHduJbeWDAZUSydwM=
//
//	— bank.example/ledger HiWmq30/0AClBPayAXkuJHF+faESmWL9EhaJDNggqh72sXId7YFzWBCqH5ITdrLjSnwg/juk78Bw+XqWdesS+jSxnAo=
//	-- log.vkey --
//	bank.example/ledger+1e25a6ab+AQOhB7/zzhC+HXDdGOdLwJln5NYwm6UNXx3chmQSVTG4
//	-- tail --
//	leaf 2: {"arg_names":...} (549 bytes and a newline): key_id a18112b0b7b4225f, seq 2
//	leaf 3: {"arg_names":...} (549 bytes and a newline): key_id 1ccc5644e1da30f8, seq 2
//	the first is receipts/000002.json: true
//
// Each proofs line verifies with RFC 6962 against the checkpoint's root;
// range, read backwards, then the leaf hashes of the two tail lines
// (SHA-256 of 0x00 and the line without its newline), give the same root.
//
// # Finding the receipts
//
// [Export] walks the agent's chain backwards from its head, reading the
// log a page at a time: from the head's leaf down to the agent's first
// receipt, each receipt taken is the entry whose SHA-256 is the prev of
// the one taken before. It reads the entries between the agent's first
// and last receipt once, and the tail once, rather than the whole log.
//
// # Writing
//
// [Write] writes a new directory beside the target, syncs every file and
// the directory, and renames it into place: a bundle is there whole or
// not at all. It refuses a target that exists and is not empty.
package bundle
