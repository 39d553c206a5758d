package gate

import (
	"slices"
	"strings"
	"testing"

	"github.com/bankdoor/bankdoor/proxy/policy"
	"github.com/bankdoor/bankdoor/proxy/words"
)

// ackPolicy acknowledges write words for some tools. require_pins is false,
// so that an acknowledgement is what makes a pin necessary.
const ackPolicy = `version: 1
id: gate-ack
default: deny
never_allow: [borrow]
servers:
  bank:
    tools:
      list_transfers:
        schema_sha256: ` + "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" + `
        definition_sha256: ` + "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc" + `
        acknowledge: [transfers]
        args:
          account_id: { type: string, required: true, pattern: "acc_[a-z0-9_]{1,32}" }
      get_payment_status:
        schema_sha256: ` + "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb" + `
        acknowledge: [payment]
      list_transfers_payouts:
        schema_sha256: ` + "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb" + `
        acknowledge: [transfers]
      get_borrow_rates:
        schema_sha256: ` + "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb" + `
        acknowledge: [borrow]
      get-resource-links:
        schema_sha256: ` + "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb" + `
        acknowledge: [links]
      list_refunds:
        acknowledge: [refunds]
      list_charges: {}
`

// ackLive is a listing that matches every pin of ackPolicy.
func ackLive() (schema, definition map[string]string) {
	schema = map[string]string{"list_transfers": pinA, "get_payment_status": pinB, "list_transfers_payouts": pinB,
		"get_borrow_rates": pinB, "get-resource-links": pinB, "list_refunds": pinD, "list_charges": pinD}
	return schema, map[string]string{"list_transfers": pinC}
}

func TestAcknowledged(t *testing.T) {
	g := New(mustParse(t, ackPolicy))
	changed, _ := ackLive()
	changed["list_transfers"] = pinD
	_, changedDef := ackLive()
	changedDef["list_transfers"] = pinD
	unlisted, _ := ackLive()
	delete(unlisted, "list_transfers")
	tests := []struct {
		label, tool, args string
		live, defs        map[string]string // nil: ackLive
		want              want
	}{
		{"acknowledged, pinned, listed", "list_transfers", `{"account_id":"acc_1"}`, nil, nil, want{}},
		{"acknowledged: the other checks still apply", "list_transfers", `{"account_id":"x"}`, nil, nil, want{6, "args.pattern", nil}},
		{"payment acknowledged", "get_payment_status", "", nil, nil, want{}},
		{"never_allow word acknowledged", "get_borrow_rates", "", nil, nil, want{}},
		{"server-everything's get-resource-links", "get-resource-links", "", nil, nil, want{}},
		{"schema changed: void", "list_transfers", `{"account_id":"acc_1"}`, changed, nil, want{5, "pin.mismatch",
			[]string{"dddddddddddd…", "aaaaaaaaaaaa…", `acknowledgement of "transfers" in its name holds only for the pinned definition, so it is void`}}},
		{"definition changed: void", "list_transfers", `{"account_id":"acc_1"}`, nil, changedDef, want{5, "pin.mismatch",
			[]string{"definition_sha256", `acknowledgement of "transfers"`}}},
		{"unlisted: void", "list_transfers", `{"account_id":"acc_1"}`, unlisted, nil, want{5, "pin.unlisted", []string{`acknowledgement of "transfers"`}}},
		{"another word, not acknowledged", "list_transfers_payouts", "", nil, nil, want{3, "name.write_word",
			[]string{`word "payouts"`, "tokens list transfers payouts", "acknowledges the word"}}},
		{"acknowledged but unpinned", "list_refunds", "", nil, nil, want{3, "name.write_word",
			[]string{`word "refunds"`, "no schema_sha256"}}},
		{"allowlisted, nothing acknowledged", "list_charges", "", nil, nil, want{3, "name.write_word", []string{`word "charges"`}}},
		// The acknowledgement is for the exact name, as the allowlist is.
		{"upper case", "list_TRANSFERS", "", nil, nil, want{3, "name.write_word", []string{`word "transfers"`}}},
		{"kebab case", "list-transfers", "", nil, nil, want{3, "name.write_word", nil}},
		{"camelCase", "listTransfers", "", nil, nil, want{3, "name.write_word", nil}},
		{"capitalised", "List_Transfers", "", nil, nil, want{3, "name.write_word", nil}},
		{"singular", "get_transfer", "", nil, nil, want{3, "name.write_word", []string{`word "transfer"`}}},
		{"leading word", "transfers_list", "", nil, nil, want{3, "name.write_word", []string{"leads the name", "never allowed"}}},
		{"not the allowlisted name: its first word is reported", "list_transfers_pay", "", nil, nil, want{3, "name.write_word",
			[]string{`word "transfers"`}}},
		{"a write that looks like the read", "send_transfers", "", nil, nil, want{3, "name.write_word", []string{`word "send"`, "leads"}}},
	}
	for _, tt := range tests {
		c := call(tt.tool, tt.args)
		live, defs := ackLive()
		if tt.live != nil {
			live = tt.live
		}
		if tt.defs != nil {
			defs = tt.defs
		}
		c.Live, c.LiveDefinition = live, defs
		d := g.Decide(c)
		checkDecision(t, tt.label, d, tt.want)
		// tools/list shows exactly the tools Decide lets past check 5.
		listed := g.Listable("bank", tt.tool, live[tt.tool], defs[tt.tool])
		if _, ok := live[tt.tool]; ok && listed.Allow != (d.Allow || d.Check == 6) {
			t.Errorf("%s: Listable = %+v, Decide = %+v", tt.label, listed, d)
		}
		// Precheck agrees with Decide on checks 1 to 4.
		if pre := g.Precheck(c); pre.Allow != (d.Allow || d.Check > 4) || (!pre.Allow && pre.Reason != d.Reason) {
			t.Errorf("%s: Precheck = %+v, Decide = %+v", tt.label, pre, d)
		}
	}
}

// TestAcknowledgedSkipPinCheck: bankdoor decide without a listing honours
// an acknowledgement of a pinned tool (and says the pin was not checked);
// an unpinned one is void whatever the listing.
func TestAcknowledgedSkipPinCheck(t *testing.T) {
	g := New(mustParse(t, ackPolicy))
	for _, tt := range []struct {
		tool string
		want want
	}{
		{"get_payment_status", want{}},
		{"list_refunds", want{3, "name.write_word", []string{"no schema_sha256"}}},
		{"list_charges", want{3, "name.write_word", nil}},
	} {
		c := call(tt.tool, "")
		c.Live, c.SkipPinCheck = nil, true
		checkDecision(t, tt.tool, g.Decide(c), tt.want)
	}
}

// TestAcknowledgeIsPerTool: acknowledging a word for one tool does not
// acknowledge it for another, nor on another server.
func TestAcknowledgeIsPerTool(t *testing.T) {
	p := mustParse(t, ackPolicy+"  other:\n    tools:\n      list_transfers:\n        schema_sha256: "+pinA+"\n")
	g := New(p)
	c := call("list_transfers", `{"account_id":"acc_1"}`)
	c.Server = "other"
	checkDecision(t, "other server", g.Decide(c), want{3, "name.write_word", nil})
	c = call("get_transfer_payment", "")
	checkDecision(t, "unlisted tool", g.Decide(c), want{3, "name.write_word", nil})
}

// TestAcknowledgeBypassingParse: the gate applies the rules itself, for a
// Policy built without Parse: a leading or never word, or a word of another
// tool, stays denied though Acknowledge names it.
func TestAcknowledgeBypassingParse(t *testing.T) {
	tools := map[string]*policy.Tool{}
	for _, name := range []string{"transfer_funds", "bill_pay", "get_payment"} {
		tools[name] = &policy.Tool{Name: name, SchemaSHA256: pinA, Acknowledge: []string{"transfer", "pay", "payments"}}
	}
	g := New(&policy.Policy{ID: "code", Servers: map[string]*policy.Server{"bank": {Name: "bank", Tools: tools}}})
	for name := range tools {
		c := Call{Server: "bank", Tool: name, Live: map[string]string{name: pinA}}
		if d := g.Decide(c); d.Rule != "name.write_word" {
			t.Errorf("%s: %+v, want name.write_word", name, d)
		}
	}
	if !slices.Equal(tools["bill_pay"].Acknowledge, []string{"transfer", "pay", "payments"}) {
		t.Error("Decide changed the policy")
	}
}

// FuzzAcknowledged decides any name under ackPolicy with every pin
// matching: a name is allowed past check 5 only if it is an exact key of
// the policy whose every write word is acknowledged and acknowledgeable,
// and never when the listing does not match its pin.
func FuzzAcknowledged(f *testing.F) {
	for _, s := range []string{"list_transfers", "list_TRANSFERS", "get-resource-links", "get_borrow_rates",
		"list_transfers_payouts", "transfers_list", "list_transfers_pay", "list_refunds", "get_payment_status"} {
		f.Add(s, false)
		f.Add(s, true)
	}
	p := mustParse(f, ackPolicy)
	g := New(p)
	f.Fuzz(func(t *testing.T, tool string, changed bool) {
		live, defs := ackLive()
		if changed {
			other := strings.Repeat("e", 64)
			live[tool], defs[tool] = other, other
		}
		c := Call{Server: "bank", Tool: tool, Live: live, LiveDefinition: defs}
		d := g.Decide(c)
		checkInvariants(t, g, c, d)
		if !d.Allow && d.Check != 6 {
			return
		}
		entry, ok := p.Servers["bank"].Tools[tool]
		if !ok || entry.SchemaSHA256 == "" || live[tool] != entry.SchemaSHA256 {
			t.Fatalf("%q past check 5 without a matching pin: %+v", tool, d)
		}
		for _, m := range words.FindAll(tool, p.NeverAllow) {
			if !m.Acknowledgeable() || !slices.Contains(entry.Acknowledge, m.Word) {
				t.Fatalf("%q past check 3 with the write word %+v", tool, m)
			}
		}
		if pre := g.Precheck(c); !pre.Allow {
			t.Fatalf("Precheck denied what Decide let past check 4: %+v", pre)
		}
	})
}
