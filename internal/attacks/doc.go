// Package attacks is bankdoor's end-to-end attack catalogue, kept as data,
// and the runner that sends it through a live session.
//
// Each [Attack] is one request an agent (or a prompt injection steering
// one) could send to move money or reach the bank server past the gate:
// look-alike and zero-width tool names, separators, case and camelCase
// spellings of write words, the real write tools, a renamed and a
// rug-pulled tool, smuggled and malformed arguments, arrays that are
// nested, mixed, too long or hold a hidden transfer, and malformed
// JSON-RPC frames and methods; a definition changed in the middle of a
// session (before answering a call, with and without notifying, between
// the pages of a listing) or only in members schema_sha256 leaves out;
// an answer that asks the user to act (a -32042 URL elicitation, an
// embedded elicitation/create, plain or beside a duplicate member, invalid
// UTF-8 or a lone surrogate that a lenient client reads past); frames
// surrounded by Unicode spaces; and values a careless reason would copy
// into the signed receipt. An attack may need warmup calls first (a rug
// pull that follows an answer), and one may be Forwarded: allowed on
// purpose, its answer being what the proxy must refuse.
//
// [Leaks] checks a receipt against the attack that left it: no run of
// eight bytes of any argument value (at any depth, nested member names
// included) may be in it; only top-level argument names may. It says how the request is sent (an SDK
// CallTool, or a raw line), which fixture variant it needs, the rule id
// the proxy must deny it with, and whether the same request sent straight
// to the fixture bank, without the proxy, moves money (Unsafe).
//
// [Run] sends attacks through a session with the proxy and reports, per
// attack, the rule the answer named, the receipt it named and the rule
// recorded in that receipt, whether the request reached the bank (the
// bank's log grew) and whether money moved. [Control] sends the unsafe
// ones straight to the fixture, to show the gate is what stops them.
//
// [Acknowledgements] are attacks on acknowledged write words (a policy's
// acknowledge key): names that share an acknowledged word but are not the
// acknowledged name (case, separators, a leading or never-acknowledgeable
// word, another write word), and the acknowledged read after a rug pull.
// They are written against [AcknowledgePolicy] and the fixture's transfers
// variants, not against policies/bankdoor.yaml as the catalogue is, and are
// kept out of [Catalogue] for that reason.
//
// Expected rules follow the order of the gate's checks (proxy/gate) and of
// the relay's frame checks (proxy): a name is checked before the server,
// the write words, the allowlist, the pin and the arguments, and the first
// failing check names the rule. The catalogue is written against
// policies/bankdoor.yaml with one tool added, [Policy]: the arrays
// variant's get_transactions_by_ids, for the array attacks. Its patterns
// are stricter than its max_length limits, so an oversized account id
// fails args.pattern first.
package attacks
