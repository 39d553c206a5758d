// Package gate decides whether one MCP tools/call may reach the server.
//
// [Gate.Decide] runs six checks in a fixed order and stops at the first that
// fails; the [Decision] names that check (1..6), its stable rule id and a
// reason. A call is forwarded only if every check passes, and then exactly
// the bytes in Decision.Args are forwarded: the RFC 8785 canonical form of
// the arguments that were checked. [Gate.Listable] runs checks 1 to 5 for
// one entry of a tools/list result, so the agent is shown only tools it
// could call. [Gate.Precheck] runs checks 1 to 4, which need no listing of
// the server: the proxy denies what they deny before it lists the server.
//
// # Checks and rule ids
//
// Rule ids are stable: receipts, tests and users' alerting depend on them.
//
//	check  rule                 fails when
//	1      name.length          the tool name is empty or longer than 128 bytes
//	1      name.charset         a byte of the name is outside [A-Za-z0-9_-]
//	2      server.unknown       --server names no server of the policy
//	3      name.write_word      a run of the name's tokens spells a write word (package words)
//	                            that the tool's policy entry does not acknowledge, or that no
//	                            policy can acknowledge, or the entry acknowledging it is unpinned
//	4      tool.not_allowed     the name is not a key of the server's tools (exact, case-sensitive)
//	5      pin.missing          the tool has no schema_sha256 and require_pins is true
//	5      pin.unlisted         the server's current tools/list has no tool of that name
//	5      pin.mismatch         the listed definition's schema_sha256, or its
//	                            definition_sha256 where the policy pins one, differs
//	5      pin.unavailable      (the proxy, not Decide) the server's tools/list could not be read
//	6      args.too_large       the raw arguments are longer than 65536 bytes
//	6      args.encoding        invalid UTF-8, or a \u escape of a lone surrogate
//	6      args.duplicate       an object, at any depth, has a member name twice
//	6      args.not_object      not exactly one well-formed JSON value, or not an object
//	6      args.too_many        more than 32 arguments
//	6      args.nested          an argument's value is an object, or an array where the
//	                            policy declares no array; an array's item is an array or an object
//	6      args.unknown         an argument the policy does not declare for the tool
//	6      args.type            a value, or an array's item, not of the declared type (see below)
//	6      args.min_items       an array with fewer items than min_items
//	6      args.max_items       an array with more items than max_items
//	6      args.pattern         a string not matching its pattern (RE2, whole value)
//	6      args.min_length      a string with fewer code points than min_length
//	6      args.max_length      a string with more code points than max_length
//	6      args.min             a number below min
//	6      args.max             a number above max
//	6      args.enum            a value whose canonical JSON is not one of the enum's
//	6      args.required        a required argument is missing
//
// Check 1 runs on the bytes of the name, so Unicode look-alikes (trаnsfer
// with a Cyrillic а), zero-width characters, '.', '/', spaces, newlines and
// NUL all fail it; the reason gives the first offending rune as U+XXXX (or
// the byte, if it is not UTF-8) and its byte offset. Check 4 is a Go map
// lookup: no globs, no case folding, no normalisation, and names such as
// __proto__ or constructor are just names that are not in the map.
// Check 3 looks the name up exactly as check 4 does: an acknowledgement
// (the acknowledge key of a tool, package policy) covers that one name, so
// list_TRANSFERS and list-transfers are denied by the words even when
// list_transfers acknowledges transfers. An acknowledged tool must carry
// schema_sha256 (else check 3 denies it, whatever require_pins says), and
// check 5 still compares its live definition with its pins: a mismatch is
// pin.mismatch (pin.unlisted if the server no longer lists it), whose
// reason says the acknowledgement is void, and Listable hides the tool.
// Call.SkipPinCheck skips check 5 entirely; only `bankdoor decide` without
// --tools-file sets it. A tool pinned with require_pins false and no
// schema_sha256 still fails pin.unlisted if the server does not list it.
//
// # Arguments (check 6)
//
// Absent arguments (Call.Args nil) and the literal null (with optional
// surrounding whitespace) mean {}. The rules of check 6 apply in the order
// of the table. The first four look at the whole value: too_large, then
// encoding (a scan of all bytes), then one strict parse by jsontext, which
// reports duplicate names, syntax errors and a value that is not an object,
// whichever it meets first in byte order. The other rules look at the
// members in turn: each rule is applied to every argument in ascending byte
// order of the names before the next rule is applied, so a call with an
// undeclared argument reports args.unknown even if another argument has the
// wrong type, and the reported argument is the first in that order.
//
// Arrays: an argument the policy declares of type array must be a JSON
// array (null is of no type, so it is args.type like any wrong type) of at
// most max_items and at least min_items items, each a string, number or
// boolean of the items' type that meets the items' constraints. Rules that
// apply to values (nested, type, pattern, min_length, max_length, min, max,
// enum) apply to each item in order, and the reason names the first
// failing item by its index ("item 2 of "ids""); min_items and
// max_items apply to the array, after the type of every item is checked.
// Duplicate items are allowed and forwarded as sent: unlike a duplicate
// member name, a repeated item means the same to every JSON parser, and
// max_items bounds the list. An array where the policy declares a scalar,
// or for an undeclared argument, is args.nested, as before arrays were
// declarable.
//
// Types: string is a JSON string; boolean is true or false; integer is a
// number literal with no fraction and no exponent whose value is within
// ±2^53 (so 5.0 and 1e2 are not integers); number is a number literal whose
// value is finite as a float64 and, if written without fraction or
// exponent, within ±2^53, so the value checked is the value forwarded. null
// is of no type. min_length and max_length count Unicode code points; min
// and max compare the value as a float64. enum compares the RFC 8785
// canonical JSON of the value with the policy's canonical enum texts, so
// 5, 5.0 and 5e0 are the same number.
//
// Reasons never contain argument values, since they go into receipts; they
// may contain top-level argument names (quoted, at most 64 bytes), the
// index of an array's item, byte offsets, lengths, counts, and the
// policy's own constraints. A member name inside
// an argument's value is part of that value: args.duplicate names the
// top-level argument whose value repeats a name, and the byte offset,
// never the repeated name or jsontext's error text.
//
// # Decision evidence
//
// Every decision, allowed or not, carries ArgNames (the sorted argument
// names, at most 32, each cut to at most 64 bytes at a UTF-8 boundary;
// empty if the arguments do not parse as an object) and ArgsSHA256 (hex
// SHA-256 of the canonical arguments, {} for absent or null, or of the raw
// bytes if they cannot be canonicalised).
package gate
