// Package receipt defines bankdoor's receipts: one signed, hash-chained
// record of each gate decision, one file per receipt.
//
// A receipt says that the holder of an agent key saw a tool call and
// denied (or allowed) it, under which rule and which policy. Receipts of
// one key form a chain: each names the SHA-256 of the file before it, so a
// receipt removed from the middle of a directory, or two swapped, breaks
// the chain. Removing the newest receipts (the tail) cannot be seen from
// the chain alone; the ledger's witnessed checkpoints cover that.
//
// [Sign] and [Writer] make receipts, [Parse] and [Receipt.Verify] check
// them, and [Open] does both at once for a receipt file. Parse is strict:
// it accepts exactly the bytes Sign produces, so a receipt has one
// encoding and its hash is well defined. Because of that, the message a
// signature covers is also the file itself less its `,"sig":"…"` member,
// which is how Open checks it without encoding the receipt again.
//
// # Receipt Format
//
// A receipt file is a single JSON object (RFC 8259) in the canonical form
// of RFC 8785 (JSON Canonicalization Scheme, JCS): UTF-8, no byte order
// mark, no white space between tokens, no trailing newline, members sorted
// by name, strings escaped minimally (only quotation mark, reverse solidus
// and control characters; \b \t \n \f \r in short form, other control
// characters as \u00xx with lower-case hex), integers in plain decimal. A
// file is at most 16384 bytes ([MaxSize]).
//
// The object has exactly these fifteen members, shown in canonical order;
// a missing, repeated or unknown member makes the receipt invalid:
//
//	arg_names      array of strings: the names (never the values) of the call's
//	               arguments, sorted by their UTF-8 bytes; at most 32 names,
//	               each at most 64 bytes or cut as tool is, at 64 bytes
//	args_sha256    64 lower-case hex digits: SHA-256 of the RFC 8785 form of the
//	               call's arguments (of their raw bytes if they are not JSON)
//	decision       "deny", or "allow" when the policy says receipts: all
//	key_id         16 lower-case hex digits: the first 8 bytes of the SHA-256
//	               of the signer's raw 32-byte Ed25519 public key
//	policy_id      string: the id of the policy in force
//	policy_sha256  64 lower-case hex digits: SHA-256 of the policy file's bytes
//	prev           64 lower-case hex digits: SHA-256 of the previous receipt
//	               file's bytes; 64 "0" digits exactly when seq is 1
//	reason         string: human-readable text
//	rule           string: the stable id of the rule that decided, e.g. name.write_word
//	seq            integer from 1 to 2⁵³−1: 1, 2, 3, ... per signing key
//	server         string: the MCP server's name in the policy (--server)
//	sig            string of 88 characters: standard, padded base64 (RFC 4648
//	               section 4) of the 64-byte Ed25519 signature described below
//	time           string "YYYY-MM-DDTHH:MM:SS.mmmZ": RFC 3339 in UTC with
//	               exactly three fraction digits, years 0001 to 9999
//	tool           string: the requested tool name, at most 256 bytes; a longer
//	               name is cut at the last UTF-8 character boundary at or
//	               before byte 256 and "…" (U+2026) is appended
//	v              the integer 1, the format version
//
// Invalid UTF-8 in a requested tool or argument name is replaced by U+FFFD
// before it is cut. A future format with other members will have another
// v; this package rejects any v but 1.
//
// # Signature and Chain
//
// The signature is pure Ed25519 (RFC 8032) by the agent's key over the
// RFC 8785 form of the receipt object without its sig member: the file's
// bytes with `"sig":"…",` taken out. A signature is valid exactly when
// Go's crypto/ed25519.Verify accepts it: the cofactorless equation, S
// below the group order (so no one without the key makes a second valid
// file of a receipt), R compared by its encoding. The receipt hash is the
// SHA-256 of the file's bytes, and is the prev of the receipt that
// follows.
//
// # Receipts Directory
//
// The receipt with seq N is the file named N in decimal, zero-padded to at
// least six digits, followed by ".json" ([FileName]): 000001.json, ...,
// 999999.json, 1000000.json. A directory holds the receipts of one key.
// Names starting with "." are not receipts: .lock is the Writers' lock,
// .NNNNNN.json.tmp-* are files being written and .probe.tmp-* is
// OpenWriter's check that the directory can be written. Subdirectories
// are skipped (a gateway keeps each agent's chain in DIR/AGENT), unless
// they are named like a receipt. Any other name is an error.
//
// Any number of Writers, in this process or others, may write one
// directory with one key; together they write one chain. The protocol:
//
//  1. Each Write takes an exclusive flock(2) on DIR/.lock, waiting for
//     it, and holds it for that write only. The kernel releases it when
//     its holder dies.
//  2. Under the lock, the Writer finds the directory's head: the receipt
//     it wrote or found last, seq h, then FileName(h+1), h+2, ... as long
//     as they exist. If the head moved, the new head file must parse,
//     hold its seq and be signed by the Writer's key; otherwise Write
//     fails, naming the file and both key_ids, and writes nothing.
//  3. The new receipt gets seq = head + 1 and prev = the head file's hash.
//     It is written to a temporary file, which is synced and then
//     hard-linked to its name (internal/atomicfile.Create), and the
//     directory is synced before the lock is released. So a name never
//     appears with less than the whole receipt, and a receipt is durable
//     when Write returns. If a step after the link fails, the name is
//     removed under the lock.
//  4. A process killed in the middle of step 3 leaves at most a temporary
//     file (and no receipt, or a whole one). OpenWriter removes
//     temporary files while it holds the lock, when no one is writing.
//
// # Example
//
// The Ed25519 key whose seed is the 32 bytes 00 01 02 ... 1f has the
// public key
//
//	-----BEGIN PUBLIC KEY-----
//	MCowBQYDK2VwAyEAA6EHv/POEL4dcN0Y50vAmWfk1jCbpQ1fHdyGZBJVMbg=
//	-----END PUBLIC KEY-----
//
// (raw 03a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b8)
// and the key_id 56475aa75463474c. Say an agent calls tool transfer on
// server bank with the arguments
//
//	{"to_account":"acc_mallory","amount_cents":100000}
//
// under a policy bankdoor-fixture-readonly whose file has SHA-256
// 89d275167d5f048930eea637939e044f029004cc677e9045db406bc617978b2e. The gate
// denies the call, and the first receipt of the key, 000001.json, is this
// one line of 635 bytes:
//
//	{"arg_names":["amount_cents","to_account"],"args_sha256":"135cb15a8fd21f2c2c502a74e98659ad277efe4f4aea065eb10b893fa8c19bc2","decision":"deny","key_id":"56475aa75463474c","policy_id":"bankdoor-fixture-readonly","policy_sha256":"89d275167d5f048930eea637939e044f029004cc677e9045db406bc617978b2e","prev":"0000000000000000000000000000000000000000000000000000000000000000","reason":"tool name token \"transfer\" is a payment/write word","rule":"name.write_word","seq":1,"server":"bank","sig":"gUMJ4bxUbCAzja50CvEtQ6a+cT/pRBYWscmr/gltunHrM1d7Os1DdR6PTF+IfbqFOMIa8zSBhK3j2KRwEZXMAQ==","time":"2026-12-02T18:42:45.123Z","tool":"transfer","v":1}
//
// Its signature is over the same line without `"sig":"gUMJ…AQ==",`, and
// its receipt hash is
// 4c662e288a98db34feaeda6caa4bbabb60c00109a81b49e3f4390bd809938a26. The
// next denied call, to get_transactions with an undeclared argument,
// leaves 000002.json, whose prev is that hash:
//
//	{"arg_names":["account_id","action"],"args_sha256":"560c2e23bfefbebc871df52c69ccc87db85a78ccbf89e1c8af4fb9ec2bacfa2b","decision":"deny","key_id":"56475aa75463474c","policy_id":"bankdoor-fixture-readonly","policy_sha256":"89d275167d5f048930eea637939e044f029004cc677e9045db406bc617978b2e","prev":"4c662e288a98db34feaeda6caa4bbabb60c00109a81b49e3f4390bd809938a26","reason":"argument \"action\" is not declared in the policy","rule":"args.undeclared","seq":2,"server":"bank","sig":"NsKQyHohK3CoJ9xyj78Kb7Y71w1m2k9tGDwWcLYNTNc6YrHPgy7VP62Knv+DIUfgVpucDNCQf2SqC9GR1TzkDg==","time":"2026-12-02T18:42:46.007Z","tool":"get_transactions","v":1}
//
// Its receipt hash is
// a3a485b2e66e4a891815cb74131f370b3f7acabcf594aafdce2341843c840a35.
package receipt
