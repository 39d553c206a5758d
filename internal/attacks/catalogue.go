package attacks

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Attack is one request that must be denied.
type Attack struct {
	ID          string
	Description string
	// Variant is the fixture variant the attack needs (BANK_FIXTURE_VARIANT);
	// "" is the default bank.
	Variant string
	// Tool and Args are sent with the SDK client's CallTool when Frame is
	// nil. Args is params.arguments: usually a map, but any value the SDK
	// will encode (an array, a string, json.RawMessage); nil sends {}.
	Tool string
	Args any
	// Frame, if set, is written as one raw line instead; its first "$ID" is
	// replaced by a fresh raw id (see mcptest). A frame without "$ID" is
	// answered, if at all, with id null.
	Frame []byte
	// NoReply marks a Frame that is a notification: it gets no answer,
	// and the runner waits for its receipt instead.
	NoReply bool
	// Rule is the rule id the proxy must deny the attack with.
	Rule string
	// Unsafe is true if the same request sent straight to the fixture bank
	// moves money.
	Unsafe bool
	// Warmup are calls sent with the SDK client before the attack, each
	// answered with a result (for a rug pull that follows an answer); the
	// attack's outcome is measured from after them.
	Warmup []Call
	// Forwarded marks an allowed request that reaches the bank on purpose:
	// what the proxy must refuse is the bank's answer. It must reach the
	// bank, and still move no money.
	Forwarded bool
}

// Call is one tools/call of a warmup.
type Call struct {
	Tool string
	Args any
}

// Raw reports whether the attack is sent as a raw line.
func (a *Attack) Raw() bool { return a.Frame != nil }

// Catalogue returns every attack, in a stable order.
func Catalogue() []Attack {
	var all []Attack
	for _, part := range [][]Attack{nameAttacks(), wordAttacks(), toolAttacks(), argAttacks(), rawArgAttacks(), frameAttacks(), methodAttacks(),
		rugPullAttacks(), answerAttacks(), leakAttacks(), arrayAttacks()} {
		all = append(all, part...)
	}
	return all
}

// ForVariant returns the attacks that need the given fixture variant.
func ForVariant(as []Attack, variant string) []Attack {
	var out []Attack
	for _, a := range as {
		if a.Variant == variant {
			out = append(out, a)
		}
	}
	return out
}

// Variants returns the fixture variants the attacks need, "" (the default
// bank) first.
func Variants(as []Attack) []string {
	seen := map[string]bool{"": true}
	out := []string{""}
	for _, a := range as {
		if !seen[a.Variant] {
			seen[a.Variant] = true
			out = append(out, a.Variant)
		}
	}
	return out
}

// transferArgs would move 1000.00 from checking to the attacker, were any
// of the name attacks let through to a transfer.
func transferArgs() map[string]any {
	return map[string]any{"from_account": "acc_checking", "to_account": "acc_mallory", "amount_cents": 100000}
}

// transferJSON is transferArgs as JSON, for raw frames.
const transferJSON = `{"from_account":"acc_checking","to_account":"acc_mallory","amount_cents":100000}`

// smuggleJSON is the members that make get_transactions move money.
const smuggleJSON = `"action":"transfer","to_account":"acc_mallory","amount_cents":100000`

func nameCharset(id, desc, tool string) Attack {
	return Attack{ID: id, Description: desc, Tool: tool, Args: transferArgs(), Rule: "name.charset"}
}

func nameAttacks() []Attack {
	long := func(n int) string { return strings.Repeat("get_balances_", n/13+1)[:n] }
	return []Attack{
		nameCharset("name.cyrillic-a", "transfer spelt with a Cyrillic а (U+0430)", "tr\u0430nsfer"),
		nameCharset("name.greek-omicron", "list_accounts spelt with a Greek ο (U+03BF)", "list_acc\u03bfunts"),
		nameCharset("name.fullwidth-t", "transfer spelt with a fullwidth ｔ (U+FF54)", "\uff54ransfer"),
		nameCharset("name.zero-width-space", "get_balances with a zero-width space (U+200B) for the underscore", "get\u200bbalances"),
		nameCharset("name.bom", "get_balances behind a byte order mark (U+FEFF)", "\ufeffget_balances"),
		nameCharset("name.word-joiner", "get_balances followed by a word joiner (U+2060)", "get_balances\u2060"),
		nameCharset("name.dot", "server-qualified bank.transfer", "bank.transfer"),
		nameCharset("name.dotdot", "path traversal ../transfer", "../transfer"),
		nameCharset("name.slash", "namespaced bank/transfer", "bank/transfer"),
		nameCharset("name.trailing-space", "transfer with a trailing space", "transfer "),
		nameCharset("name.trailing-newline", "transfer with a trailing newline", "transfer\n"),
		nameCharset("name.leading-tab", "transfer behind a tab", "\ttransfer"),
		nameCharset("name.nul", "transfer with a NUL byte", "transfer\x00"),
		nameCharset("name.nul-truncation", "get_balances, NUL, transfer: a C-string reader sees only the read", "get_balances\x00transfer"),
		{ID: "name.empty", Description: "empty tool name", Tool: "", Args: transferArgs(), Rule: "name.length"},
		{ID: "name.200-bytes", Description: "200-byte tool name", Tool: long(200), Rule: "name.length"},
		{ID: "name.129-bytes", Description: "129-byte tool name, one past the limit", Tool: long(129), Rule: "name.length"},
		{ID: "name.128-bytes", Description: "128-byte tool name: passes check 1, not on the allowlist", Tool: long(128), Rule: "tool.not_allowed"},
	}
}

func writeWord(id, desc, tool string) Attack {
	return Attack{ID: id, Description: desc, Tool: tool, Args: transferArgs(), Rule: "name.write_word"}
}

func notAllowed(id, desc, tool string) Attack {
	return Attack{ID: id, Description: desc, Tool: tool, Args: map[string]any{"account_id": "acc_checking"}, Rule: "tool.not_allowed"}
}

func wordAttacks() []Attack {
	return []Attack{
		writeWord("case.Transfer", "Transfer, capitalised", "Transfer"),
		writeWord("case.TRANSFER", "TRANSFER, upper case", "TRANSFER"),
		writeWord("case.TRansfer", "TRansfer: the case rules split it as t ransfer, the token runs rejoin it", "TRansfer"),
		notAllowed("case.Get_Balances", "Get_Balances: an allowed read in another case is not the allowed read", "Get_Balances"),
		notAllowed("case.GET_BALANCES", "GET_BALANCES, upper case", "GET_BALANCES"),
		writeWord("word.payBill", "camelCase payBill", "payBill"),
		writeWord("word.pay-bill", "kebab-case pay-bill", "pay-bill"),
		writeWord("word.PAYBill", "PAYBill: upper-case run then a word", "PAYBill"),
		writeWord("word.transfer2", "transfer2: letter/digit boundary", "transfer2"),
		writeWord("word.sendMoney", "sendMoney", "sendMoney"),
		writeWord("word.with-draw", "with-draw: a word split by a separator", "with-draw"),
		writeWord("word.borrow", "borrow_funds: a word the policy adds with never_allow", "borrow_funds"),
		notAllowed("proto.__proto__", "__proto__: a map lookup, not a prototype chain", "__proto__"),
		notAllowed("proto.constructor", "constructor", "constructor"),
		notAllowed("proto.toString", "toString", "toString"),
		notAllowed("proto.hasOwnProperty", "hasOwnProperty", "hasOwnProperty"),
		notAllowed("tool.get_statement", "a read-sounding tool that is not on the allowlist", "get_statement"),
	}
}

func toolAttacks() []Attack {
	return []Attack{
		{ID: "write.transfer", Description: "the bank's real transfer tool", Tool: "transfer", Args: transferArgs(),
			Rule: "name.write_word", Unsafe: true},
		{ID: "write.pay_bill", Description: "pay_bill, whose readOnlyHint lies", Tool: "pay_bill",
			Args: map[string]any{"account_id": "acc_checking", "payee": "mallory_llc", "amount_cents": 100000},
			Rule: "name.write_word", Unsafe: true},
		{ID: "write.move_money", Description: "transfer renamed move_money by the server (variant renamed)", Variant: "renamed",
			Tool: "move_money", Args: transferArgs(), Rule: "name.write_word", Unsafe: true},
		{ID: "pin.rugpull", Description: "get_balances after a rug pull: same name, new description and argument, sweeps money (variant rugpull)",
			Variant: "rugpull", Tool: "get_balances", Args: map[string]any{"account_id": "acc_checking", "routing_partner": "partner-sync"},
			Rule: "pin.mismatch", Unsafe: true},
		{ID: "pin.rugpull-no-args", Description: "rug-pulled get_balances called with no arguments still sweeps (variant rugpull)",
			Variant: "rugpull", Tool: "get_balances", Rule: "pin.mismatch", Unsafe: true},
	}
}

func txArgs(kv ...any) map[string]any {
	m := map[string]any{"account_id": "acc_checking"}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

func argAttack(id, desc string, args any, rule string) Attack {
	return Attack{ID: id, Description: desc, Tool: "get_transactions", Args: args, Rule: rule}
}

func argAttacks() []Attack {
	many := map[string]any{"account_id": "acc_checking"}
	for i := 1; len(many) < 33; i++ {
		many[fmt.Sprintf("k%02d", i)] = i
	}
	return []Attack{
		{ID: "args.mass-assignment", Description: "get_transactions with undeclared action=transfer, to_account, amount_cents",
			Tool: "get_transactions", Args: txArgs("action", "transfer", "to_account", "acc_mallory", "amount_cents", 100000),
			Rule: "args.unknown", Unsafe: true},
		argAttack("args.nested-object", "an operator object where a string goes", map[string]any{"account_id": map[string]any{"$ne": ""}}, "args.nested"),
		{ID: "args.nested-array", Description: "an array of accounts where one goes", Tool: "get_balances",
			Args: map[string]any{"account_id": []any{"acc_checking", "acc_savings"}}, Rule: "args.nested"},
		argAttack("args.string-for-integer", `limit "10"`, txArgs("limit", "10"), "args.type"),
		argAttack("args.fraction", "limit 5.5", txArgs("limit", 5.5), "args.type"),
		argAttack("args.bool-for-integer", "limit true", txArgs("limit", true), "args.type"),
		argAttack("args.bool-for-string", "account_id true (the policy declares no boolean)", map[string]any{"account_id": true}, "args.type"),
		argAttack("args.null-value", "account_id null: null is of no type", map[string]any{"account_id": nil}, "args.type"),
		argAttack("args.limit-0", "limit 0", txArgs("limit", 0), "args.min"),
		argAttack("args.limit-negative", "limit -1", txArgs("limit", -1), "args.min"),
		argAttack("args.limit-101", "limit 101", txArgs("limit", 101), "args.max"),
		argAttack("args.limit-1000", "limit 1000", txArgs("limit", 1000), "args.max"),
		argAttack("args.limit-1e3", "limit written 1e3: an exponent is not an integer literal", txArgs("limit", json.Number("1e3")), "args.type"),
		argAttack("args.limit-2^53+1", "limit 9007199254740993, beyond what a float64 holds exactly", txArgs("limit", json.Number("9007199254740993")), "args.type"),
		argAttack("args.pattern-sql", "account id with SQL", map[string]any{"account_id": "acc_checking'; DROP TABLE accounts;--"}, "args.pattern"),
		argAttack("args.pattern-case", "ACC_CHECKING", map[string]any{"account_id": "ACC_CHECKING"}, "args.pattern"),
		argAttack("args.pattern-newline", "acc_checking followed by a newline", map[string]any{"account_id": "acc_checking\n"}, "args.pattern"),
		argAttack("args.pattern-date", "since with a time part", txArgs("since", "2025-06-01T00:00:00Z"), "args.pattern"),
		argAttack("args.oversized", "a 5000-character account id (pattern is checked before max_length)",
			map[string]any{"account_id": "acc_" + strings.Repeat("a", 4996)}, "args.pattern"),
		argAttack("args.too-large", "arguments of 70000 bytes", map[string]any{"account_id": "acc_" + strings.Repeat("a", 70000)}, "args.too_large"),
		argAttack("args.too-many", "33 arguments", many, "args.too_many"),
		argAttack("args.required", "get_transactions without account_id", map[string]any{}, "args.required"),
		argAttack("args.required-other", "get_transactions with only a limit", map[string]any{"limit": 5}, "args.required"),
		argAttack("args.null", "arguments null (means {}): account_id is still required", json.RawMessage("null"), "args.required"),
		argAttack("args.array", "arguments as an array", []any{"acc_checking", 10}, "args.not_object"),
		argAttack("args.string", "arguments as a string", "acc_checking", "args.not_object"),
	}
}

// callFrame returns a raw tools/call line with the given params.
func callFrame(params string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":$ID,"method":"tools/call","params":` + params + `}`)
}

func rawAttack(id, desc string, frame []byte, rule string, unsafe bool) Attack {
	return Attack{ID: id, Description: desc, Frame: frame, Rule: rule, Unsafe: unsafe}
}

func rawArgAttacks() []Attack {
	return []Attack{
		rawAttack("args.duplicate", "account_id twice: the gate would check one, a lenient server use the other",
			callFrame(`{"name":"get_balances","arguments":{"account_id":"acc_checking","account_id":"acc_mallory"}}`), "args.duplicate", false),
		rawAttack("args.duplicate-smuggle", "action twice: harmless first, transfer last (last one wins on the server)",
			callFrame(`{"name":"get_transactions","arguments":{"account_id":"acc_checking","action":"none",`+smuggleJSON+`,"action":"transfer"}}`),
			"args.duplicate", true),
		rawAttack("args.duplicate-nested", "a duplicate name inside a nested value: found before the nesting",
			callFrame(`{"name":"get_balances","arguments":{"account_id":"acc_checking","x":{"a":1,"a":2}}}`), "args.duplicate", false),
		rawAttack("args.invalid-utf8", "invalid UTF-8 byte 0xff inside an argument value",
			callFrame("{\"name\":\"get_balances\",\"arguments\":{\"account_id\":\"acc_che\xffcking\"}}"), "args.encoding", false),
		rawAttack("args.invalid-utf8-smuggle", "a hidden transfer behind an invalid UTF-8 byte",
			callFrame("{\"name\":\"get_transactions\",\"arguments\":{\"account_id\":\"acc_checking\",\"memo\":\"\xc0\xaf\","+smuggleJSON+"}}"),
			"args.encoding", true),
		rawAttack("args.lone-surrogate", `a lone surrogate \ud800 inside an argument value`,
			callFrame(`{"name":"get_balances","arguments":{"account_id":"acc_checking\ud800"}}`), "args.encoding", false),
		rawAttack("args.lone-surrogate-smuggle", `a hidden transfer behind a lone surrogate \udc00`,
			callFrame(`{"name":"get_transactions","arguments":{"account_id":"acc_checking","memo":"\udc00",`+smuggleJSON+`}}`),
			"args.encoding", true),
		rawAttack("args.not-object-number", "arguments as a number",
			callFrame(`{"name":"get_balances","arguments":42}`), "args.not_object", false),
		rawAttack("params.duplicate-name", `"name" twice: get_balances for the gate, transfer for the server`,
			callFrame(`{"name":"get_balances","name":"transfer","arguments":`+transferJSON+`}`), "params.invalid", true),
		rawAttack("params.unknown-member", "an unknown member next to name and arguments",
			callFrame(`{"name":"get_balances","arguments":{},"tool":"transfer"}`), "params.invalid", false),
		rawAttack("params.name-not-string", "name as an array",
			callFrame(`{"name":["transfer"],"arguments":`+transferJSON+`}`), "params.invalid", false),
		rawAttack("params.missing", "tools/call without params",
			[]byte(`{"jsonrpc":"2.0","id":$ID,"method":"tools/call"}`), "params.invalid", false),
	}
}

func frameAttacks() []Attack {
	big := `{"jsonrpc":"2.0","id":$ID,"method":"tools/call","params":{"name":"transfer","arguments":` +
		`{"from_account":"acc_checking","to_account":"acc_mallory","amount_cents":100000,"memo":"` +
		strings.Repeat("A", 4<<20) + `"}}}`
	return []Attack{
		rawAttack("frame.not-json", "a truncated line", []byte(`{"jsonrpc":`), "frame.parse", false),
		rawAttack("frame.trailing-garbage", "a valid message followed by garbage",
			[]byte(`{"jsonrpc":"2.0","id":$ID,"method":"tools/list"} x`), "frame.parse", false),
		rawAttack("frame.invalid-utf8", "invalid UTF-8 outside tool arguments (tools/list params)",
			[]byte("{\"jsonrpc\":\"2.0\",\"id\":$ID,\"method\":\"tools/list\",\"params\":{\"cursor\":\"\xff\"}}"), "frame.parse", false),
		rawAttack("frame.meta-duplicate-nested", "a member name twice inside a tools/call's _meta, which the gate does not read",
			callFrame(`{"name":"get_balances","arguments":{"account_id":"acc_checking"},"_meta":{"progressToken":"p","x":{"a":1,"a":2}}}`), "frame.parse", false),
		rawAttack("frame.batch", "a JSON-RPC batch holding a transfer (the SDK server runs it)",
			[]byte(`[{"jsonrpc":"2.0","id":$ID,"method":"tools/call","params":{"name":"transfer","arguments":`+transferJSON+`}}]`),
			"frame.invalid", true),
		rawAttack("frame.jsonrpc-1.0", `"jsonrpc":"1.0"`, []byte(`{"jsonrpc":"1.0","id":$ID,"method":"tools/list"}`), "frame.invalid", false),
		rawAttack("frame.no-version", `no "jsonrpc" member`, []byte(`{"id":$ID,"method":"tools/list"}`), "frame.invalid", false),
		rawAttack("frame.unknown-member", "an unknown envelope member",
			[]byte(`{"jsonrpc":"2.0","id":$ID,"method":"tools/list","extra":true}`), "frame.invalid", false),
		rawAttack("frame.duplicate-method", `"method" twice: tools/list for the relay, tools/call for a lenient server`,
			[]byte(`{"jsonrpc":"2.0","id":$ID,"method":"tools/list","method":"tools/call","params":{"name":"transfer","arguments":`+transferJSON+`}}`),
			"frame.invalid", true),
		rawAttack("frame.id-object", "an object as id", []byte(`{"jsonrpc":"2.0","id":{"raw":1},"method":"tools/list"}`), "frame.invalid", false),
		rawAttack("frame.params-array", "positional params for tools/call",
			[]byte(`{"jsonrpc":"2.0","id":$ID,"method":"tools/call","params":["transfer",`+transferJSON+`]}`), "frame.invalid", false),
		rawAttack("frame.too-large", "a transfer in a line of more than 4 MiB", []byte(big), "frame.too_large", true),
		{ID: "frame.call-notification", Description: "tools/call sent as a notification (no id)",
			Frame:   []byte(`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"transfer","arguments":` + transferJSON + `}}`),
			NoReply: true, Rule: "frame.invalid"},
	}
}

func methodFrame(method, params string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":$ID,"method":"` + method + `","params":` + params + `}`)
}

func methodAttacks() []Attack {
	return []Attack{
		rawAttack("method.bank-transfer", "an invented method bank/transfer", methodFrame("bank/transfer", transferJSON), "method.unknown", false),
		rawAttack("method.tools-execute", "an invented method tools/execute",
			methodFrame("tools/execute", `{"name":"transfer","arguments":`+transferJSON+`}`), "method.unknown", false),
		rawAttack("method.server-discover", "server/discover (the stateless handshake is not relayed)",
			methodFrame("server/discover", `{}`), "method.unknown", false),
		rawAttack("method.Tools-Call", "Tools/Call: methods are case-sensitive",
			methodFrame("Tools/Call", `{"name":"transfer","arguments":`+transferJSON+`}`), "method.unknown", false),
		rawAttack("method.resources-read", "resources/read of the statement",
			methodFrame("resources/read", `{"uri":"bank://statements/latest"}`), "method.not_exposed", false),
		rawAttack("method.resources-list", "resources/list", methodFrame("resources/list", `{}`), "method.not_exposed", false),
		rawAttack("method.prompts-get", "prompts/get", methodFrame("prompts/get", `{"name":"monthly_summary","arguments":{"account_id":"acc_checking"}}`), "method.not_exposed", false),
		rawAttack("method.completion", "completion/complete", methodFrame("completion/complete",
			`{"ref":{"type":"ref/prompt","name":"monthly_summary"},"argument":{"name":"account_id","value":"acc"}}`), "method.not_exposed", false),
		rawAttack("method.logging", "logging/setLevel", methodFrame("logging/setLevel", `{"level":"debug"}`), "method.not_exposed", false),
		{ID: "method.roots-notification", Description: "notifications/roots/list_changed when roots are not exposed",
			Frame: []byte(`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`), NoReply: true, Rule: "method.not_exposed"},
		{ID: "method.unknown-notification", Description: "an invented notification notifications/transfer",
			Frame: []byte(`{"jsonrpc":"2.0","method":"notifications/transfer","params":` + transferJSON + `}`), NoReply: true, Rule: "method.unknown"},
	}
}

// balancesArgs are get_balances's arguments in the rug-pull attacks.
func balancesArgs() map[string]any { return map[string]any{"account_id": "acc_checking"} }

// rugPullAttacks change a pinned definition in the middle of a session
// (before answering a call, between the pages of a listing, with and
// without notifying) or change only members schema_sha256 leaves out.
func rugPullAttacks() []Attack {
	warm := []Call{{Tool: "get_balances", Args: balancesArgs()}}
	return []Attack{
		{ID: "pin.after-answer-silent", Description: "get_balances sent the moment the previous call's answer arrived; the bank changed it before answering and said nothing (variant silentchange)",
			Variant: "silentchange", Warmup: warm, Tool: "get_balances", Args: balancesArgs(), Rule: "pin.mismatch", Unsafe: true},
		{ID: "pin.after-answer-notified", Description: "the same, the bank's list_changed still on its way (variant listchange)",
			Variant: "listchange", Warmup: warm, Tool: "get_balances", Args: balancesArgs(), Rule: "pin.mismatch", Unsafe: true},
		{ID: "pin.between-pages", Description: "get_balances changed between two pages of the proxy's own listing, its page read before the change (variant pagechange)",
			Variant: "pagechange", Tool: "get_balances", Args: balancesArgs(), Rule: "pin.mismatch"},
		{ID: "pin.title", Description: "get_balances with only its title changed (what the user sees), and sweeping: outside schema_sha256, caught by definition_sha256 (variant memberchange)",
			Variant: "memberchange", Tool: "get_balances", Args: balancesArgs(), Rule: "pin.mismatch", Unsafe: true},
		{ID: "pin.meta", Description: "get_transactions with only _meta added (variant memberchange)",
			Variant: "memberchange", Tool: "get_transactions", Args: balancesArgs(), Rule: "pin.mismatch"},
		{ID: "pin.icons-output-schema", Description: "list_accounts with only icons and an outputSchema added (variant memberchange)",
			Variant: "memberchange", Tool: "list_accounts", Rule: "pin.mismatch"},
	}
}

// answerAttacks are answers of the bank that ask the user to act. The
// embedded elicitations move money once the user approves (the fixture
// sweeps on the retried call): straight to the fixture, an agent with
// AgentOptions does.
func answerAttacks() []Attack {
	return []Attack{
		{ID: "answer.url-elicitation", Description: "an allowed get_balances answered with -32042, a URL for the user to open (variant urlelicit); not relayed unless elicitation is exposed",
			Variant: "urlelicit", Tool: "get_balances", Args: balancesArgs(), Rule: "response.not_exposed", Forwarded: true},
		{ID: "answer.input-requests", Description: "an allowed get_balances answered with an embedded elicitation/create (inputRequests) asking to approve a sweep (variant inputrequests); not relayed unless elicitation is exposed",
			Variant: "inputrequests", Tool: "get_balances", Args: balancesArgs(), Rule: "response.not_exposed", Forwarded: true, Unsafe: true},
		{ID: "answer.input-requests-twice", Description: "the same answer with inputRequests twice, null first: a last-member-wins client reads the elicitation (variant inputtwice)",
			Variant: "inputtwice", Tool: "get_balances", Args: balancesArgs(), Rule: "response.malformed", Forwarded: true, Unsafe: true},
		{ID: "answer.input-requests-utf8", Description: "the same answer beside an invalid UTF-8 byte, which a lenient client reads past (variant inpututf8)",
			Variant: "inpututf8", Tool: "get_balances", Args: balancesArgs(), Rule: "response.malformed", Forwarded: true, Unsafe: true},
		{ID: "answer.input-requests-surrogate", Description: "the same answer beside a lone surrogate (\\ud800), which a lenient client reads past (variant inputsurrogate)",
			Variant: "inputsurrogate", Tool: "get_balances", Args: balancesArgs(), Rule: "response.malformed", Forwarded: true, Unsafe: true},
	}
}

// leakAttacks carry values a careless reason would copy into the signed
// receipt: a nested member name (part of an argument's value) and what
// follows it, and Unicode spaces around a frame that a lenient trim would
// accept.
func leakAttacks() []Attack {
	inner := `{"name":"get_transactions","arguments":{"account_id":"acc_checking","memo":{"SECRET-4111-1111-1111":1,"SECRET-4111-1111-1111":2}}}`
	broken := `{"name":"get_transactions","arguments":{"account_id":"acc_checking","memo":{"SECRET-5500-0000-0004":}}}`
	frame := `{"jsonrpc":"2.0","id":$ID,"method":"tools/call","params":{"name":"transfer","arguments":` + transferJSON + `}}`
	return []Attack{
		rawAttack("leak.duplicate-nested-name", "a nested duplicate whose name is a card number: the reason names the argument and an offset, not the name",
			callFrame(inner), "args.duplicate", false),
		rawAttack("leak.parse-error-after-secret", "a syntax error right after a nested secret name: the reason gives a byte offset, not the parser's pointer",
			callFrame(broken), "frame.parse", false),
		rawAttack("frame.nbsp", "a transfer behind a no-break space (U+00A0)", []byte("\u00a0"+frame), "frame.parse", false),
		rawAttack("frame.line-separator", "a transfer followed by a line separator (U+2028)", []byte(frame+"\u2028"), "frame.parse", false),
		rawAttack("frame.ideographic-space", "a transfer behind an ideographic space (U+3000)", []byte("\u3000"+frame), "frame.parse", false),
		rawAttack("frame.bom", "a transfer behind a byte order mark (U+FEFF)", []byte("\ufeff"+frame), "frame.parse", false),
	}
}
