package gate

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// emptyArgs in a table stands for present but empty arguments ("" is absent).
const emptyArgs = "<empty>"

func TestCheckArgs(t *testing.T) {
	big := `{"account_id":"acc_1","pad":"` + strings.Repeat("x", 64<<10) + `"}`
	many := func(n int) string {
		var b strings.Builder
		b.WriteString(`{"account_id":"acc_1"`)
		for i := 1; i < n; i++ {
			fmt.Fprintf(&b, `,"k%02d":1`, i)
		}
		return b.String() + "}"
	}
	tests := []struct {
		tool, args string
		want       want
	}{
		// Allowed.
		{"get_transactions", `{"account_id":"acc_main"}`, want{}},
		{"get_transactions", `{"account_id":"acc_main","limit":100,"since":"2024-01-31"}`, want{}},
		{"get_transactions", ` {"since":"2024-01-31" , "account_id" : "acc_main", "limit":1} `, want{}},
		{"get_transactions", `{"account_id":"acc_\u006dain"}`, want{}},
		{"get_balances", "", want{}},
		{"get_balances", "null", want{}},
		{"get_balances", " null\n", want{}},
		{"get_balances", "\u00a0null", want{6, "args.not_object", nil}}, // not JSON whitespace
		{"get_balances", "\x00null", want{6, "args.not_object", nil}},
		{"get_balances", "NULL", want{6, "args.not_object", nil}},
		{"get_balances", "{}", want{}},
		{"get_quote", `{"ref":"r1","amount":0.5,"count":5,"currency":"EUR","flag":true,"memo":"ab"}`, want{}},
		{"get_quote", `{"ref":"r1","amount":1e3,"count":10,"currency":"日本円","flag":false,"memo":"ééééé"}`, want{}},
		{"get_quote", `{"ref":"r1","amount":-0.0e0,"count":1}`, want{6, "args.min", nil}},
		{"get_quote", `{"ref":"r1","amount":7}`, want{}},
		{"get_quote", `{"ref":"r1","currency":"\u0055SD"}`, want{}},
		// args.too_large
		{"get_transactions", big, want{6, "args.too_large", []string{"65536"}}},
		{"get_transactions", `{"account_id":"acc_1"}` + strings.Repeat(" ", 64<<10), want{6, "args.too_large", nil}},
		// args.encoding
		{"get_transactions", "{\"account_id\":\"acc_\xff\"}", want{6, "args.encoding", []string{"offset 19"}}},
		{"get_transactions", "{\"account_id\":\"acc_1\",\"x\xc0\":1}", want{6, "args.encoding", nil}},
		{"get_transactions", `{"account_id":"acc_\ud800"}`, want{6, "args.encoding", []string{"surrogate", "byte 19"}}},
		{"get_transactions", `{"account_id":"acc_\udc00\ud800"}`, want{6, "args.encoding", []string{"byte 19"}}},
		{"get_transactions", `{"account_id":"acc_\ud800\u0041"}`, want{6, "args.encoding", nil}},
		{"get_transactions", `{"account_id":"acc_1","a":"\ud83d\udcb8","a":1}`, want{6, "args.duplicate", nil}}, // a pair is fine
		{"get_transactions", `{"account_id":"acc_1","a":"\\ud800"}`, want{6, "args.unknown", nil}},              // an escaped backslash, not an escape
		{"get_transactions", `{"account_id":"acc_1","a":1,"a":"\udfff"}`, want{6, "args.encoding", nil}},        // encoding before duplicate
		// args.duplicate
		{"get_transactions", `{"account_id":"acc_1","account_id":"acc_2"}`, want{6, "args.duplicate", []string{`argument name "account_id" appears twice (at byte 22)`}}},
		{"get_transactions", `{"account_id":"acc_1","acc\u006Funt_id":"acc_2"}`, want{6, "args.duplicate", nil}},
		{"get_transactions", `{"account_id":"acc_1","x":{"b":1,"b":2}}`, want{6, "args.duplicate", []string{`argument "x" has a member name twice inside its value (at byte 33)`}}},
		{"get_transactions", `[{"a":1,"a":2}]`, want{6, "args.duplicate", []string{"the arguments repeat a member name (at byte 8)"}}},
		// args.not_object
		{"get_transactions", `[]`, want{6, "args.not_object", []string{"an array"}}},
		{"get_transactions", `"acc_1"`, want{6, "args.not_object", []string{"a string"}}},
		{"get_transactions", `1`, want{6, "args.not_object", []string{"a number"}}},
		{"get_transactions", `true`, want{6, "args.not_object", []string{"a boolean"}}},
		{"get_transactions", emptyArgs, want{6, "args.not_object", []string{"not one well-formed JSON value"}}},
		{"get_transactions", `   `, want{6, "args.not_object", nil}},
		{"get_transactions", `nul`, want{6, "args.not_object", nil}},
		{"get_transactions", `{"account_id":"acc_1"`, want{6, "args.not_object", nil}},
		{"get_transactions", `{"account_id":"acc_1",}`, want{6, "args.not_object", nil}},
		{"get_transactions", `{"account_id":'acc_1'}`, want{6, "args.not_object", nil}},
		{"get_transactions", `{account_id:"acc_1"}`, want{6, "args.not_object", nil}},
		{"get_transactions", `{"account_id":"acc_1"}{}`, want{6, "args.not_object", []string{"after the first JSON value"}}},
		{"get_transactions", `{"account_id":"acc_1"} x`, want{6, "args.not_object", nil}},
		{"get_transactions", `{"account_id":"acc_1"} null`, want{6, "args.not_object", nil}},
		{"get_transactions", `null null`, want{6, "args.not_object", nil}},
		{"get_transactions", `{"account_id":"acc_1","limit":01}`, want{6, "args.not_object", nil}},
		{"get_transactions", `{"account_id":"acc_1","limit":+1}`, want{6, "args.not_object", nil}},
		{"get_transactions", `{"account_id":"acc_1","limit":NaN}`, want{6, "args.not_object", nil}},
		{"get_transactions", "{\"account_id\":\"acc\t1\"}", want{6, "args.not_object", nil}}, // raw control character
		{"get_transactions", `{"account_id":"acc_1\x41"}`, want{6, "args.not_object", nil}},  // bad escape
		// args.too_many
		{"get_transactions", many(32), want{6, "args.unknown", nil}},
		{"get_transactions", many(33), want{6, "args.too_many", []string{"33 members", "32"}}},
		// args.nested
		{"get_transactions", `{"account_id":{"id":"acc_1"}}`, want{6, "args.nested", []string{`"account_id" is an object`}}},
		{"get_transactions", `{"account_id":["acc_1"]}`, want{6, "args.nested", []string{"an array"}}},
		{"get_transactions", `{"account_id":"acc_1","zz":[]}`, want{6, "args.nested", []string{`"zz"`}}},
		// args.unknown: mass assignment
		{"get_transactions", `{"account_id":"acc_1","action":"transfer","to_account":"acc_mallory","amount_cents":100000}`, want{6, "args.unknown", []string{`argument "action"`, `"get_transactions"`, `"account_id", "limit", "since"`}}},
		{"get_transactions", `{"account_id":"acc_1","Limit":5}`, want{6, "args.unknown", []string{`"Limit"`}}},
		{"get_transactions", `{"account_id":"acc_1","limit ":5}`, want{6, "args.unknown", nil}},
		{"get_transactions", `{"account_id":"acc_1","__proto__":{}}`, want{6, "args.nested", nil}},
		{"get_transactions", `{"account_id":"acc_1","__proto__":1}`, want{6, "args.unknown", []string{`"__proto__"`}}},
		{"get_transactions", `{"account_id":"acc_1","":1}`, want{6, "args.unknown", []string{`argument ""`}}},
		{"get_balances", `{"account_id":"acc_1"}`, want{6, "args.unknown", []string{"declared: none"}}},
		{"get_transactions", `{"account_id":"acc_1","l\u0456mit":5}`, want{6, "args.unknown", []string{`"l\u0456mit"`}}},
		// args.type
		{"get_transactions", `{"account_id":1}`, want{6, "args.type", []string{`"account_id" is a number; want string`}}},
		{"get_transactions", `{"account_id":null}`, want{6, "args.type", []string{"is null"}}},
		{"get_transactions", `{"account_id":true}`, want{6, "args.type", nil}},
		{"get_transactions", `{"account_id":"acc_1","limit":"5"}`, want{6, "args.type", []string{"a string; want integer"}}},
		{"get_transactions", `{"account_id":"acc_1","limit":5.0}`, want{6, "args.type", []string{"fraction or exponent"}}},
		{"get_transactions", `{"account_id":"acc_1","limit":5e0}`, want{6, "args.type", nil}},
		{"get_transactions", `{"account_id":"acc_1","limit":5E0}`, want{6, "args.type", nil}},
		{"get_transactions", `{"account_id":"acc_1","limit":9007199254740993}`, want{6, "args.type", []string{"2^53"}}},
		{"get_transactions", `{"account_id":"acc_1","limit":-9007199254740993}`, want{6, "args.type", nil}},
		{"get_transactions", `{"account_id":"acc_1","limit":100000000000000000000000}`, want{6, "args.type", nil}},
		{"get_transactions", `{"account_id":"acc_1","limit":9007199254740992}`, want{6, "args.max", nil}}, // 2^53 is an integer
		{"get_transactions", `{"account_id":"acc_1","limit":-0}`, want{6, "args.min", nil}},
		{"get_transactions", `{"account_id":"acc_1","limit":true}`, want{6, "args.type", []string{"a boolean"}}},
		{"get_quote", `{"ref":"r1","amount":1e400}`, want{6, "args.type", []string{"float64 range"}}},
		{"get_quote", `{"ref":"r1","amount":-1e309}`, want{6, "args.type", nil}},
		{"get_quote", `{"ref":"r1","amount":12345678901234567890}`, want{6, "args.type", []string{"2^53"}}},
		{"get_quote", `{"ref":"r1","amount":"7"}`, want{6, "args.type", nil}},
		{"get_quote", `{"ref":"r1","flag":"true"}`, want{6, "args.type", []string{"want boolean"}}},
		{"get_quote", `{"ref":"r1","flag":1}`, want{6, "args.type", nil}},
		{"get_quote", `{"ref":"r1","flag":null}`, want{6, "args.type", nil}},
		// args.pattern
		{"get_transactions", `{"account_id":"acc_MAIN"}`, want{6, "args.pattern", []string{`"account_id" does not match pattern "acc_[a-z0-9_]{1,32}"`}}},
		{"get_transactions", `{"account_id":"xacc_main"}`, want{6, "args.pattern", nil}},
		{"get_transactions", `{"account_id":"acc_main\n"}`, want{6, "args.pattern", nil}},
		{"get_transactions", `{"account_id":"acc_main x"}`, want{6, "args.pattern", nil}},
		{"get_transactions", `{"account_id":"acc_"}`, want{6, "args.pattern", nil}},
		{"get_transactions", `{"account_id":"acc_` + strings.Repeat("a", 33) + `"}`, want{6, "args.pattern", nil}},
		{"get_transactions", `{"account_id":"acc_\u0430"}`, want{6, "args.pattern", nil}},
		{"get_transactions", `{"account_id":"acc_1","since":"2024-1-31"}`, want{6, "args.pattern", []string{`"since"`}}},
		{"get_transactions", `{"account_id":"acc_1","since":"2024-01-31T00:00"}`, want{6, "args.pattern", nil}},
		{"get_transactions", `{"account_id":"acc_1","since":"２０２４-01-31"}`, want{6, "args.pattern", nil}}, // \d is ASCII in RE2
		{"get_quote", `{"ref":"r"}`, want{6, "args.pattern", nil}},
		// args.min_length / args.max_length (code points)
		{"get_quote", `{"ref":"r1","memo":"a"}`, want{6, "args.min_length", []string{"1 code points; min_length is 2"}}},
		{"get_quote", `{"ref":"r1","memo":""}`, want{6, "args.min_length", nil}},
		{"get_quote", `{"ref":"r1","memo":"abcdef"}`, want{6, "args.max_length", []string{"6 code points; max_length is 5"}}},
		{"get_quote", `{"ref":"r1","memo":"éééééé"}`, want{6, "args.max_length", nil}},
		{"get_quote", `{"ref":"r1","memo":"\ud83d\udcb8\ud83d\udcb8"}`, want{}},
		// args.min / args.max
		{"get_transactions", `{"account_id":"acc_1","limit":0}`, want{6, "args.min", []string{`"limit" is below min 1`}}},
		{"get_transactions", `{"account_id":"acc_1","limit":-5}`, want{6, "args.min", nil}},
		{"get_transactions", `{"account_id":"acc_1","limit":101}`, want{6, "args.max", []string{`"limit" is above max 100`}}},
		{"get_quote", `{"ref":"r1","amount":0.49999}`, want{6, "args.min", []string{"min 0.5"}}},
		{"get_quote", `{"ref":"r1","amount":1000.0001}`, want{6, "args.max", []string{"max 1000"}}},
		{"get_quote", `{"ref":"r1","amount":1000}`, want{}},
		// args.enum
		{"get_quote", `{"ref":"r1","currency":"usd"}`, want{6, "args.enum", []string{`"currency"`, "3 values"}}},
		{"get_quote", `{"ref":"r1","currency":"USD "}`, want{6, "args.enum", nil}},
		{"get_quote", `{"ref":"r1","count":2}`, want{6, "args.enum", nil}},
		{"get_quote", `{"ref":"r1","count":5}`, want{}},
		// args.required
		{"get_transactions", `{}`, want{6, "args.required", []string{`required argument "account_id"`}}},
		{"get_transactions", "", want{6, "args.required", nil}}, // absent
		{"get_transactions", `null`, want{6, "args.required", nil}},
		{"get_transactions", `{"limit":5}`, want{6, "args.required", nil}},
		{"get_quote", `{"currency":"USD"}`, want{6, "args.required", []string{`"ref"`}}},
	}
	g := testGate(t)
	for _, tt := range tests {
		c := call(tt.tool, tt.args)
		if tt.args == emptyArgs {
			c.Args = []byte{}
		}
		label := tt.tool + " " + tt.args
		if len(label) > 200 {
			label = label[:200]
		}
		checkDecision(t, label, g.Decide(c), tt.want)
	}
}

// TestArgsRuleOrder proves the order within check 6: each rule over every
// argument, names in byte order, before the next rule.
func TestArgsRuleOrder(t *testing.T) {
	tests := []struct {
		args string
		want string
	}{
		// unknown beats a type error in an earlier-sorted key
		{`{"account_id":1,"action":"transfer"}`, `args.unknown`},
		// nested beats unknown
		{`{"action":"transfer","limit":{}}`, `args.nested`},
		// type beats pattern of an earlier key
		{`{"account_id":"bad","limit":"5"}`, `args.type`},
		// the first key in byte order is named: "Z" < "a"
		{`{"zz":1,"Z":1,"a":1}`, `"Z"`},
		{`{"limit":500,"account_id":"BAD"}`, `args.pattern`},
		{`{"limit":500,"since":"20240131"}`, `args.pattern`},
		{`{"limit":500,"since":"2024-01-31"}`, `args.max`},
		{`{"limit":0,"since":"2024-01-31"}`, `args.min`},
		// required is last
		{`{"limit":500}`, `args.max`},
		{`{"limit":5}`, `args.required`},
		// too_many before nested or unknown
		{`{"a1":[],"a2":1,"a3":1,"a4":1,"a5":1,"a6":1,"a7":1,"a8":1,"a9":1,"b1":1,"b2":1,"b3":1,"b4":1,"b5":1,"b6":1,"b7":1,"b8":1,"b9":1,"c1":1,"c2":1,"c3":1,"c4":1,"c5":1,"c6":1,"c7":1,"c8":1,"c9":1,"d1":1,"d2":1,"d3":1,"d4":1,"d5":1,"d6":1}`, `args.too_many`},
		// duplicate before not_object and nested
		{`[{"a":1,"a":1}]`, `args.duplicate`},
	}
	g := testGate(t)
	for _, tt := range tests {
		d := g.Decide(call("get_transactions", tt.args))
		if !strings.Contains(d.Rule+" "+d.Reason, tt.want) {
			t.Errorf("Decide(%s) = %s (%s); want %s", tt.args, d.Rule, d.Reason, tt.want)
		}
	}
}

// TestCheckOrder proves that a call failing several checks reports the
// earliest.
func TestCheckOrder(t *testing.T) {
	bad := `{"action":"transfer"}` // fails check 6
	tests := []struct {
		label  string
		server string
		tool   string
		live   map[string]string
		want   string
	}{
		{"1 over 2..6", "evil", "bank.transfer", nil, "name.charset"},
		{"1 (length) over 2..6", "evil", "", nil, "name.length"},
		{"2 over 3..6", "evil", "transfer", nil, "server.unknown"},
		{"3 over 4..6", "bank", "pay_bill", nil, "name.write_word"},
		{"3 over 5, allowlisted", "bank", "transfer", nil, "name.write_word"},
		{"4 over 5..6", "bank", "get_secret", nil, "tool.not_allowed"},
		{"5 over 6", "bank", "get_transactions", map[string]string{"get_transactions": pinB}, "pin.mismatch"},
		{"5 over 6, unlisted", "bank", "get_transactions", map[string]string{}, "pin.unlisted"},
		{"6", "bank", "get_transactions", live(), "args.unknown"},
	}
	g := testGate(t)
	for _, tt := range tests {
		d := g.Decide(Call{Server: tt.server, Tool: tt.tool, Args: []byte(bad), Live: tt.live})
		if d.Rule != tt.want {
			t.Errorf("%s: rule %q (%s), want %q", tt.label, d.Rule, d.Reason, tt.want)
		}
		if d.Check != checkOf(tt.want) {
			t.Errorf("%s: check %d, want %d", tt.label, d.Check, checkOf(tt.want))
		}
	}
}

func checkOf(rule string) int {
	prefix, _, _ := strings.Cut(rule, ".")
	switch {
	case rule == "name.write_word":
		return 3
	case prefix == "name":
		return 1
	case prefix == "server":
		return 2
	case prefix == "tool":
		return 4
	case prefix == "pin":
		return 5
	}
	return 6
}

func TestEvidence(t *testing.T) {
	sum := func(s string) string {
		h := sha256.Sum256([]byte(s))
		return hex.EncodeToString(h[:])
	}
	long := strings.Repeat("n", 70)
	tests := []struct {
		label, tool, args string
		allow             bool
		forward           string // Decision.Args when allowed
		names             []string
		sha               string
	}{
		{"absent", "get_balances", "", true, `{}`, []string{}, sum(`{}`)},
		{"null", "get_balances", `null`, true, `{}`, []string{}, sum(`{}`)},
		{"canonical form forwarded", "get_transactions", " {\"since\":\"2024-01-31\",\n \"limit\":5, \"account_id\":\"acc_\\u006dain\"}", true,
			`{"account_id":"acc_main","limit":5,"since":"2024-01-31"}`, []string{"account_id", "limit", "since"}, sum(`{"account_id":"acc_main","limit":5,"since":"2024-01-31"}`)},
		{"number forwarded canonical", "get_quote", `{"ref":"r1","amount":1.50E+2}`, true, `{"amount":150,"ref":"r1"}`, []string{"amount", "ref"}, sum(`{"amount":150,"ref":"r1"}`)},
		{"string escapes", "get_quote", `{"ref":"r1","memo":"\u00e9\/\""}`, true, `{"memo":"é/\"","ref":"r1"}`, []string{"memo", "ref"}, sum(`{"memo":"é/\"","ref":"r1"}`)},
		{"denied: names, no values", "get_transactions", `{"account_id":"acc_1","action":"transfer"}`, false, "", []string{"account_id", "action"}, sum(`{"account_id":"acc_1","action":"transfer"}`)},
		{"denied by name: evidence anyway", "transfer", `{"to":"acc_m","amount_cents":5}`, false, "", []string{"amount_cents", "to"}, sum(`{"amount_cents":5,"to":"acc_m"}`)},
		{"duplicate: raw sha, no names", "get_transactions", `{"a":1,"a":2}`, false, "", nil, sum(`{"a":1,"a":2}`)},
		{"not object: canonical sha", "get_transactions", `[1, 2]`, false, "", nil, sum(`[1,2]`)},
		{"long name cut to 64 bytes", "get_transactions", `{"account_id":"acc_1","` + long + `":1}`, false, "", []string{"account_id", long[:64]}, sum(`{"account_id":"acc_1","` + long + `":1}`)},
		{"name cut at a rune boundary", "get_transactions", `{"` + strings.Repeat("a", 63) + `é":1}`, false, "", []string{strings.Repeat("a", 63)}, sum(`{"` + strings.Repeat("a", 63) + `é":1}`)},
	}
	g := testGate(t)
	for _, tt := range tests {
		c := call(tt.tool, tt.args)
		d := g.Decide(c)
		if d.Allow != tt.allow {
			t.Errorf("%s: allow = %v (%s %s)", tt.label, d.Allow, d.Rule, d.Reason)
			continue
		}
		if tt.allow && string(d.Args) != tt.forward {
			t.Errorf("%s: forwards %s, want %s", tt.label, d.Args, tt.forward)
		}
		if diff := cmp.Diff(tt.names, d.ArgNames); diff != "" {
			t.Errorf("%s: ArgNames (-want +got):\n%s", tt.label, diff)
		}
		if d.ArgsSHA256 != tt.sha {
			t.Errorf("%s: ArgsSHA256 = %s, want %s", tt.label, d.ArgsSHA256, tt.sha)
		}
		if strings.Contains(d.Reason, "acc_") || strings.Contains(d.Reason, "transfer\"") && d.Rule != "name.write_word" {
			t.Errorf("%s: reason %q shows an argument value", tt.label, d.Reason)
		}
	}
}

func TestArgNamesCap(t *testing.T) {
	var b strings.Builder
	b.WriteString("{")
	for i := range 40 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"k%02d":1`, 39-i)
	}
	b.WriteString("}")
	d := testGate(t).Decide(call("get_transactions", b.String()))
	if d.Rule != "args.too_many" || len(d.ArgNames) != 32 || d.ArgNames[0] != "k00" || d.ArgNames[31] != "k31" {
		t.Errorf("got %s with names %q; want args.too_many and k00..k31", d.Rule, d.ArgNames)
	}
}

// TestReasonsHideValues sends secret-looking values through every rule of
// check 6 and proves no reason repeats them.
func TestReasonsHideValues(t *testing.T) {
	const secret = "SECRETVALUE"
	for _, args := range []string{
		`{"account_id":"` + secret + `"}`,
		`{"account_id":"acc_1","since":"` + secret + `"}`,
		`{"ref":"r1","memo":"` + secret + `"}`,
		`{"ref":"r1","currency":"` + secret + `"}`,
		`{"ref":"r1","amount":987654321}`,
		`{"ref":"r1","count":987654}`,
		`{"ref":"r1","memo":{"x":"` + secret + `"}}`,
	} {
		for _, tool := range []string{"get_transactions", "get_quote"} {
			d := testGate(t).Decide(call(tool, args))
			if d.Allow {
				t.Fatalf("%s %s allowed", tool, args)
			}
			if strings.Contains(d.Reason, secret) || strings.Contains(d.Reason, "987654") {
				t.Errorf("%s %s: reason %q shows the value", tool, args, d.Reason)
			}
		}
	}
}

func TestBadPatternFailsClosed(t *testing.T) {
	p := mustParse(t, testPolicy)
	a := p.Servers["bank"].Tools["get_quote"].Args["ref"]
	a.Re, a.Pattern = nil, "a)|(b" // as if built without policy.Parse
	d := New(p).Decide(call("get_quote", `{"ref":"a"}`))
	if d.Rule != "args.pattern" || !strings.Contains(d.Reason, "does not compile") {
		t.Errorf("got %s (%s), want args.pattern for an uncompilable pattern", d.Rule, d.Reason)
	}
	a.Pattern = "r[0-9]+"
	if d := New(p).Decide(call("get_quote", `{"ref":"r12"}`)); !d.Allow {
		t.Errorf("pattern compiled by New: got %s (%s)", d.Rule, d.Reason)
	}
	if d := New(p).Decide(call("get_quote", `{"ref":"xr12"}`)); d.Rule != "args.pattern" {
		t.Errorf("pattern compiled by New must be anchored: got %s (%s)", d.Rule, d.Reason)
	}
}

// TestReasonsHoldNoNestedNames: a nested member name is part of an
// argument's value, so no reason names it, whatever rule it fails.
func TestReasonsHoldNoNestedNames(t *testing.T) {
	g := testGate(t)
	for _, raw := range []string{
		`{"account_id":{"SECRET-4111":1,"SECRET-4111":2}}`,
		`{"account_id":"acc_1","limit":[{"SECRET-4111":1},{"x":{"SECRET-4111":1,"SECRET-4111":1}}]}`,
		`[{"SECRET-4111":1,"SECRET-4111":2}]`,
		`{"account_id":{"SECRET-4111":}}`,
		`{"account_id":"acc_1","SECRET-4111":`,
	} {
		d := g.Decide(call("get_transactions", raw))
		if d.Allow || strings.Contains(d.Reason, "SECRET") || strings.Contains(d.Reason, "4111") {
			t.Errorf("Decide(%s) = %s: %s; want a denial whose reason names no nested member", raw, d.Rule, d.Reason)
		}
	}
}
