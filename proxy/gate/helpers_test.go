package gate

import (
	"strings"
	"testing"

	"github.com/bankdoor/bankdoor/proxy/policy"
)

var (
	pinA = strings.Repeat("a", 64)
	pinB = strings.Repeat("b", 64)
	pinC = strings.Repeat("c", 64)
	pinD = strings.Repeat("d", 64)
	pinE = strings.Repeat("e", 64)
)

// testPolicy is the policy most tests decide against.
const testPolicy = `version: 1
id: gate-test
default: deny
require_pins: true
never_allow: [borrow]
receipts: deny
servers:
  bank:
    tools:
      get_transactions:
        schema_sha256: ` + "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" + `
        args:
          account_id: { type: string, required: true, pattern: "acc_[a-z0-9_]{1,32}", max_length: 40 }
          limit: { type: integer, min: 1, max: 100 }
          since: { type: string, pattern: "\\d{4}-\\d{2}-\\d{2}", max_length: 10 }
      get_balances:
        schema_sha256: ` + "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb" + `
      list_accounts: {}
      get_transactions_by_ids:
        schema_sha256: ` + "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee" + `
        args:
          ids: { type: array, required: true, max_items: 3, items: { type: string, pattern: "tx_[0-9]{1,4}", max_length: 7 } }
          amounts: { type: array, min_items: 1, max_items: 2, items: { type: number, min: 0.5, max: 1000 } }
          years: { type: array, max_items: 4, items: { type: integer, min: 2000, max: 2100, enum: [2024, 2025] } }
          flags: { type: array, max_items: 2, items: { type: boolean } }
          codes: { type: array, max_items: 2, items: { type: string, min_length: 2, enum: [EUR, USD, "日本円"] } }
      get_quote:
        schema_sha256: ` + "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc" + `
        args:
          amount: { type: number, min: 0.5, max: 1000 }
          count: { type: integer, min: 1, max: 10, enum: [1, 5, 10] }
          currency: { type: string, enum: [USD, EUR, "日本円"] }
          flag: { type: boolean }
          memo: { type: string, min_length: 2, max_length: 5 }
          ref: { type: string, required: true, pattern: "r[0-9]+" }
      transfer:
        schema_sha256: ` + "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd" + `
      get_borrow_limits:
        schema_sha256: ` + "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd" + `
  other:
    tools: {}
`

// unpinnedPolicy allows one tool without a pin, with require_pins false.
const unpinnedPolicy = `version: 1
id: gate-unpinned
default: deny
require_pins: false
servers:
  bank:
    tools:
      get_balances: {}
      get_transactions:
        schema_sha256: ` + "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" + `
`

func mustParse(t testing.TB, src string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse("test.yaml", []byte(src))
	if err != nil {
		t.Fatalf("policy.Parse: %v", err)
	}
	return p
}

func testGate(t testing.TB) *Gate {
	t.Helper()
	return New(mustParse(t, testPolicy))
}

// live is the server's listing that matches every pin of testPolicy.
func live() map[string]string {
	return map[string]string{
		"get_transactions":        pinA,
		"get_balances":            pinB,
		"list_accounts":           pinD,
		"get_transactions_by_ids": pinE,
		"get_quote":               pinC,
		"transfer":                pinD,
		"get_borrow_limits":       pinD,
	}
}

// call returns a call to server bank with the live listing.
func call(tool, args string) Call {
	c := Call{Server: "bank", Tool: tool, Live: live()}
	if args != "" {
		c.Args = []byte(args)
	}
	return c
}

// want is the part of a Decision a table row checks.
type want struct {
	check int
	rule  string
	// in are substrings the reason must contain.
	in []string
}

func checkDecision(t *testing.T, label string, d Decision, w want) {
	t.Helper()
	if d.Check != w.check || d.Rule != w.rule || d.Allow != (w.rule == "") {
		t.Errorf("%s: got check %d rule %q allow %v (%s); want check %d rule %q", label, d.Check, d.Rule, d.Allow, d.Reason, w.check, w.rule)
		return
	}
	for _, s := range w.in {
		if !strings.Contains(d.Reason, s) {
			t.Errorf("%s: reason %q lacks %q", label, d.Reason, s)
		}
	}
	if d.Allow && d.Reason != "" {
		t.Errorf("%s: allowed with reason %q", label, d.Reason)
	}
	if !d.Allow && d.Args != nil {
		t.Errorf("%s: denied with Args %q", label, d.Args)
	}
	if d.Reason != "" && strings.ToLower(d.Reason[:1]) != d.Reason[:1] {
		t.Errorf("%s: reason %q does not start lower-case", label, d.Reason)
	}
}
