// Package words holds bankdoor's built-in payment and write words and the
// tokenizer that finds them in tool names (check 3 of the gate, rule
// name.write_word).
//
// # Tokens
//
// [Tokens] splits a name into lower-case ASCII tokens:
//
//  1. Every byte that is not an ASCII letter or digit separates tokens and is
//     dropped: '_', '-', and also '.', '/', spaces and every byte of a
//     non-ASCII rune. Any string is accepted, valid UTF-8 or not.
//  2. Inside a run of letters and digits a new token starts
//     - where a letter meets a digit or a digit meets a letter
//     (transfer2 -> transfer 2, 2transfer -> 2 transfer);
//     - where a lower-case letter is followed by an upper-case one
//     (payBill -> pay bill, sendMONEY -> send money);
//     - before the last upper-case letter of an upper-case run that is
//     followed by a lower-case letter (PAYBill -> pay bill,
//     XMLHttpSend -> xml http send).
//  3. Tokens are lower-cased (ASCII only).
//
// So the tokens concatenated are exactly the ASCII letters and digits of the
// name, lower-cased.
//
// # Matching
//
// [Find] reports a name as a write name if any run of one or more
// consecutive tokens, concatenated, equals a write word. A single token
// catches pay_bill, pay-bill, payBill, PAYBill, transfer2 and TRANSFER; runs
// of tokens catch spellings that the case rules split inside a word
// (paY -> pa y, TRansfer -> t ransfer, trANSfer -> tr an sfer), words written
// with separators inside them (top_up -> topup, with-draw -> withdraw) and
// policy words that contain digits. A word hidden inside a longer token
// (movemoney) is not found: substring matching would deny reads such as
// get_investments or get_exchange_rates. The allowlist (check 4) is what
// stops such names; this check is defence in depth against an allowlist
// that names a write tool by mistake.
//
// The write words are the built-in list ([Builtin]) plus the policy's
// never_allow words, which only ever add. A never_allow word is compared
// as its lower-cased ASCII letters and digits (top_up as topup).
//
// # Built-in words
//
// A word is built in when a tool whose name contains it as a token is likely
// to move money or change state. Words common in the names of reads are left
// out on purpose, because a read that contains a write word is denied unless
// a policy acknowledges the word for it (below): get, list, balance(s),
// transaction(s), account(s), history, status, and also credit (credit
// cards, credit scores), open (open orders, open banking), exchange
// (exchange rates), fund(s) (mutual funds), request, schedule, issue, label
// and borrow (left to never_allow). Reads of payments, transfers and orders
// (list_payments, get_transfer, list_orders) are denied by payment…,
// transfer… and order… words; that is the price of denying their writes,
// and what acknowledgements are for.
//
// # Acknowledgements
//
// A policy may let one exact, pinned tool name contain write words by
// listing them under the tool's acknowledge key (list_transfers
// acknowledges transfers). [FindAll] returns every write word of a name as a
// [Match]; the gate allows the name only if every match is acknowledged and
// [Match.Acknowledgeable]. Two kinds of match never are, whatever a policy
// says:
//
//   - the leading word: a run that starts at the name's first token of
//     letters (digit tokens before it are skipped). A name that starts with
//     a write word names that write: transfer_funds, pay_bill, send_money,
//     create_refund, set_limit, transfers_list, 2transfer;
//   - a word of [Never], anywhere in the name: verbs that name a payment or a
//     write wherever they stand and are not the nouns reads list (pay, send,
//     create, delete, set, withdraw, wire, move, approve, confirm, submit,
//     finalize, … with their third-person forms). Nouns such as transfer(s),
//     payment(s), refund(s), charge(s), payout(s), order(s) and link(s) can be
//     acknowledged where they do not lead: get_transfer, list_payments,
//     get_payment_status, list_refunds, list_charges, list_payouts,
//     list_orders, list_payment_intents, get-resource-links.
//
// So an acknowledgement can only ever allow a name whose first word is not a
// write word and whose write words are all nouns a human has looked at in a
// pinned definition; it cannot shrink the built-in list for any other name.
package words

import "slices"

// builtin is the one list of built-in write words: sorted, unique,
// lower-case ASCII letters. It is read-only; Builtin returns a copy.
//
// Sources: besides the words of banking and payment APIs in general, the
// list covers the write tools of these MCP servers (tool lists read in
// 2025-2026):
//
//   - Stripe, github.com/stripe/agent-toolkit typescript/src/shared/tools.ts
//     (the 22 tools of @stripe/mcp 0.2.x): create_*, update_*,
//     cancel_subscription, finalize_invoice (finalize: finalising charges the
//     customer when auto-advance is on);
//   - PayPal, github.com/paypal/agent-toolkit typescript/src/shared/tools.ts:
//     create_*, send_invoice, cancel_sent_invoice, delete_invoice,
//     setup_invoice_auto_reminders (setup), activate_recurring_series,
//     accept_dispute_claim, pay_order (a capture), update_*;
//   - Square, github.com/square/square-mcp-server services/*.ts (the methods
//     marked isWrite): CompletePayment (complete), PublishInvoice (publish),
//     PauseSubscription and ResumeSubscription (pause, resume), CloneOrder
//     (clone), AdjustLoyaltyPoints and AccumulateLoyaltyPoints (adjust,
//     accumulate), DismissTerminalCheckout (dismiss), SwapPlan, Bulk/Batch
//     Create, Update, Upsert and Delete, RegisterDomain, LinkCustomerToGiftCard;
//   - Adyen, github.com/Adyen/adyen-mcp typescript/src/tools: cancel_payment,
//     refund_payment, create_payment_links, update_payment_link,
//     create_terminal_action, reassign_terminal (reassign);
//   - Plaid, github.com/crmchattie/plaid-mcp README.md: create_transfer,
//     remove_item, set_disclosure_level (and the reads get_transfer,
//     list_transfers);
//   - Hyperswitch, github.com/gorakhnathy7/hs-mcp packages/mcp-server/src/tools:
//     capture_payments (capture), confirm_payments,
//     complete_authorize_payments, fulfill_payouts (fulfil, fulfill),
//     toggle_blocklist (toggle), retry_events (retry), revoke_mandates, and
//     Stripe's API increment_authorization (increment);
//   - open banking: UK Open Banking payment initiation (domestic payment
//     consents, submitted payments) and Token.io's MCP tools createTransfer and
//     initiateOpenBankingPayment; the read-only servers
//     github.com/elcukro/bank-mcp and github.com/tkom04/openbankingMCP use
//     only reads (get_accounts, get_transactions), which pass.
//
// Left out although these servers use them: generate (generate_invoice_number,
// but also every report), exchange (Plaid's exchange_public_token, but also
// exchange rates), obtain (Square's ObtainToken), test (Adyen's
// test_merchant_webhook), fire (Plaid's sandbox_fire_webhook); and names made
// of one token (transfercreate) are the allowlist's to stop.
var builtin = []string{
	"accept", "accepts", "accumulate", "accumulates", "activate", "activates", "add",
	"adds", "adjust", "adjusts", "approve", "approves", "assign", "assigns", "authorise",
	"authorises", "authorize", "authorizes",
	"billpay", "billpays", "block", "blocks", "burn", "burns", "buy", "buys",
	"cancel", "cancels", "capture", "captures", "change", "changes", "charge", "chargeback",
	"chargebacks", "charges", "clone", "clones", "close", "closes", "complete", "completes",
	"confirm", "confirms", "convert", "converts", "create", "creates",
	"deactivate", "deactivates", "debit", "debits", "delete", "deletes", "deposit",
	"deposits", "destroy", "destroys", "disable", "disables", "disburse", "disbursement",
	"disbursements", "disburses", "disconnect", "disconnects", "dismiss", "dismisses",
	"drop", "drops",
	"edit", "edits", "enable", "enables", "enrol", "enroll", "enrolls", "enrols", "erase",
	"erases", "exec", "execute", "executes",
	"finalise", "finalises", "finalize", "finalizes", "freeze", "freezes", "fulfil",
	"fulfill", "fulfills", "fulfils",
	"grant", "grants",
	"increment", "increments", "initiate", "initiates", "insert", "inserts", "invest",
	"invests",
	"lend", "lends", "link", "links", "loan", "loans", "lock", "locks",
	"mint", "mints", "modify", "move", "moves",
	"order", "orders",
	"patch", "patches", "pause", "pauses", "pay", "payment", "payments", "payoff",
	"payoffs", "payout", "payouts", "pays", "place", "places", "post", "posts", "prepay",
	"prepays", "publish", "publishes", "purchase", "purchases", "purge", "purges", "put",
	"puts",
	"reassign", "reassigns", "redeem", "redeems", "refund", "refunds", "register",
	"registers", "remit", "remits", "remittance", "remittances", "remove", "removes",
	"repay", "repayment", "repayments", "repays", "replace", "replaces", "reset", "resets",
	"resume", "resumes", "retries", "retry", "reversal", "reversals", "reverse", "reverses",
	"revoke", "revokes",
	"save", "saves", "sell", "sells", "send", "sends", "set", "sets", "settle", "settles",
	"setup", "setups", "sign", "signs", "spend", "spends", "stake", "stakes", "submit",
	"submits", "swap", "swaps", "sweep", "sweeps",
	"toggle", "toggles", "topup", "topups", "trade", "trades", "transact", "transacts",
	"transfer", "transfers",
	"unblock", "unblocks", "unfreeze", "unfreezes", "unlink", "unlinks", "unlock",
	"unlocks", "unstake", "unstakes", "update", "updates", "upload", "uploads", "upsert",
	"upserts",
	"void", "voids",
	"wipe", "wipes", "wire", "wires", "withdraw", "withdrawal", "withdrawals", "withdraws",
	"write", "writes",
}

// never lists the built-in words that no policy can acknowledge, sorted:
// verbs that name a payment or a write wherever they stand in a name, with
// their third-person forms. It is read-only; Never returns a copy.
var never = []string{
	"approve", "approves", "authorise", "authorises", "authorize", "authorizes",
	"cancel", "cancels", "confirm", "confirms", "create", "creates",
	"delete", "deletes", "destroy", "destroys", "disburse", "disburses",
	"erase", "erases", "execute", "executes",
	"finalise", "finalises", "finalize", "finalizes",
	"initiate", "initiates", "move", "moves",
	"pay", "pays", "prepay", "prepays", "purge", "purges",
	"remit", "remits", "repay", "repays",
	"send", "sends", "set", "sets", "submit", "submits",
	"transact", "transacts",
	"wipe", "wipes", "wire", "wires", "withdraw", "withdraws",
}

// Builtin returns a sorted copy of the built-in write words.
func Builtin() []string {
	return slices.Clone(builtin)
}

// IsBuiltin reports whether w is a built-in write word (lower-case, as
// Builtin lists it).
func IsBuiltin(w string) bool {
	_, ok := slices.BinarySearch(builtin, w)
	return ok
}

// Never returns a sorted copy of the built-in words that can never be
// acknowledged, wherever they stand in a name.
func Never() []string {
	return slices.Clone(never)
}

// A Match is one write word that a run of a name's tokens spells.
type Match struct {
	Word string // the write word: built in, or an extra word as normalized
	// Leading is true when the run starts at the name's first token of
	// letters: the word is what the name begins with.
	Leading bool
}

// Acknowledgeable reports whether a policy may acknowledge m: false for a
// leading word and for a word of Never.
func (m Match) Acknowledgeable() bool {
	return m.Why() == ""
}

// Why says why m can never be acknowledged, as a phrase that completes
// "the write word "w" …", or returns "" if it can be.
func (m Match) Why() string {
	if m.Leading {
		return "leads the name, and a name that starts with a write word names that write"
	}
	if _, ok := slices.BinarySearch(never, m.Word); ok {
		return "names a payment or a write wherever it stands in a name"
	}
	return ""
}

// Tokens returns the lower-case tokens of name, by the rules in the package
// documentation. It never fails; a name with no ASCII letter or digit has no
// tokens.
func Tokens(name string) []string {
	flatBytes, ends := split(name, nil, nil)
	flat := string(flatBytes)
	toks := make([]string, len(ends))
	start := 0
	for i, end := range ends {
		toks[i] = flat[start:end]
		start = end
	}
	return toks
}

// Find reports the first write word that a run of consecutive tokens of
// name spells, looking at runs in order of their first token and then of
// their length. The words are the built-in list plus extra (policy
// never_allow words; each is reduced to its lower-cased ASCII letters and
// digits, and one that is empty after that is ignored). Find is safe on any
// string.
func Find(name string, extra []string) (word string, ok bool) {
	more := normalize(extra)
	longest := longestWord(more)
	var flatBuf [256]byte // names the gate passes are at most 128 bytes
	var endsBuf [128]int
	flat, ends := split(name, flatBuf[:0], endsBuf[:0])
	start := 0
	for i := range ends {
		for j := i; j < len(ends) && ends[j]-start <= longest; j++ {
			if w, ok := lookup(flat[start:ends[j]], more); ok {
				return w, true
			}
		}
		start = ends[i]
	}
	return "", false
}

// FindAll returns every write word that a run of consecutive tokens of name
// spells, in the order Find looks at runs (so the first is Find's), with
// the words Find uses. A word spelt by two runs is returned twice. It
// returns nil when the name has no write word.
func FindAll(name string, extra []string) []Match {
	more := normalize(extra)
	longest := longestWord(more)
	flat, ends := split(name, nil, nil)
	lead := leadingToken(flat, ends)
	var out []Match
	start := 0
	for i := range ends {
		for j := i; j < len(ends) && ends[j]-start <= longest; j++ {
			if w, ok := lookup(flat[start:ends[j]], more); ok {
				out = append(out, Match{Word: w, Leading: i == lead})
			}
		}
		start = ends[i]
	}
	return out
}

// leadingToken returns the index of the first token of letters, or -1 if
// every token is digits.
func leadingToken(flat []byte, ends []int) int {
	start := 0
	for i, end := range ends {
		if !isDigit(flat[start]) {
			return i
		}
		start = end
	}
	return -1
}

// split appends to flat the ASCII letters and digits of name lower-cased,
// and to ends the end offset in flat of each token.
func split(name string, flat []byte, ends []int) ([]byte, []int) {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !isAlnum(c) {
			continue
		}
		if len(flat) > 0 && (!isAlnum(name[i-1]) || boundary(name, i)) {
			ends = append(ends, len(flat))
		}
		flat = append(flat, lower(c))
	}
	if len(flat) > 0 {
		ends = append(ends, len(flat))
	}
	return flat, ends
}

// boundary reports whether a token starts at name[i], given that name[i-1]
// and name[i] are both ASCII letters or digits.
func boundary(name string, i int) bool {
	prev, c := name[i-1], name[i]
	switch {
	case isDigit(prev) != isDigit(c):
		return true
	case isLower(prev) && isUpper(c):
		return true
	case isUpper(prev) && isUpper(c):
		return i+1 < len(name) && isLower(name[i+1])
	}
	return false
}

// lookup returns the write word equal to run, if there is one.
func lookup(run []byte, more []string) (string, bool) {
	lo, hi := 0, len(builtin)
	for lo < hi { // binary search; string(run) in a comparison does not allocate
		m := int(uint(lo+hi) >> 1)
		if builtin[m] < string(run) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(builtin) && builtin[lo] == string(run) {
		return builtin[lo], true
	}
	for _, w := range more {
		if w == string(run) {
			return w, true
		}
	}
	return "", false
}

// normalize returns the extra words as Find compares them: lower-case ASCII
// letters and digits only, empty words dropped. Words already in that form,
// as policy.Parse stores them, are returned without copying.
func normalize(extra []string) []string {
	if !slices.ContainsFunc(extra, needsNormal) {
		return extra
	}
	out := make([]string, 0, len(extra))
	for _, w := range extra {
		if flat, _ := split(w, nil, nil); len(flat) > 0 {
			out = append(out, string(flat))
		}
	}
	return out
}

func needsNormal(w string) bool {
	if w == "" {
		return true
	}
	for i := 0; i < len(w); i++ {
		if !isDigit(w[i]) && !isLower(w[i]) {
			return true
		}
	}
	return false
}

// maxBuiltin is the length of the longest built-in word ("disbursements");
// a test keeps it in step with the list.
const maxBuiltin = 13

func longestWord(more []string) int {
	n := maxBuiltin
	for _, w := range more {
		n = max(n, len(w))
	}
	return n
}

func isAlnum(c byte) bool { return isDigit(c) || isLower(c) || isUpper(c) }
func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isLower(c byte) bool { return 'a' <= c && c <= 'z' }
func isUpper(c byte) bool { return 'A' <= c && c <= 'Z' }

func lower(c byte) byte {
	if isUpper(c) {
		return c + 'a' - 'A'
	}
	return c
}
