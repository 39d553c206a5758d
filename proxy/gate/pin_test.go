package gate

import "testing"

func TestCheckPin(t *testing.T) {
	rugpulled := live()
	rugpulled["get_balances"] = "0123456789ab" + pinB[12:]
	unlisted := live()
	delete(unlisted, "get_balances")
	tests := []struct {
		label string
		src   string
		tool  string
		live  map[string]string
		skip  bool
		want  want
	}{
		{"pinned and listed", testPolicy, "get_balances", live(), false, want{}},
		{"rug-pulled", testPolicy, "get_balances", rugpulled, false, want{5, "pin.mismatch", []string{"0123456789ab…", "bbbbbbbbbbbb…", `"get_balances"`}}},
		{"unlisted", testPolicy, "get_balances", unlisted, false, want{5, "pin.unlisted", []string{`"get_balances"`, `server "bank"`}}},
		{"no listing at all", testPolicy, "get_balances", nil, false, want{5, "pin.unlisted", nil}},
		{"listed with empty sha", testPolicy, "get_balances", map[string]string{"get_balances": ""}, false, want{5, "pin.mismatch", nil}},
		{"upper-case live sha", testPolicy, "get_balances", map[string]string{"get_balances": "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB"}, false, want{5, "pin.mismatch", nil}},
		{"unpinned, require_pins", testPolicy, "list_accounts", live(), false, want{5, "pin.missing", []string{`"list_accounts"`, "require_pins"}}},
		{"unpinned, require_pins, unlisted", testPolicy, "list_accounts", nil, false, want{5, "pin.missing", nil}},
		{"skip: rug-pulled", testPolicy, "get_balances", rugpulled, true, want{}},
		{"skip: unlisted", testPolicy, "get_balances", nil, true, want{}},
		{"skip: unpinned", testPolicy, "list_accounts", nil, true, want{}},
		{"unpinned, no require_pins, listed", unpinnedPolicy, "get_balances", map[string]string{"get_balances": pinD}, false, want{}},
		{"unpinned, no require_pins, unlisted", unpinnedPolicy, "get_balances", map[string]string{"get_transactions": pinA}, false, want{5, "pin.unlisted", nil}},
		{"pinned, no require_pins, mismatch", unpinnedPolicy, "get_transactions", map[string]string{"get_transactions": pinB}, false, want{5, "pin.mismatch", nil}},
	}
	for _, tt := range tests {
		g := New(mustParse(t, tt.src))
		args := ""
		if tt.tool == "get_transactions" {
			args = `{"account_id":"acc_1"}`
		}
		c := call(tt.tool, args)
		c.Live, c.SkipPinCheck = tt.live, tt.skip
		checkDecision(t, tt.label, g.Decide(c), tt.want)
	}
}

func TestListable(t *testing.T) {
	g := testGate(t)
	tests := []struct {
		server, tool, sha string
		want              want
	}{
		{"bank", "get_balances", pinB, want{}},
		{"bank", "get_transactions", pinA, want{}}, // arguments are not looked at
		{"bank", "get_balances", pinA, want{5, "pin.mismatch", nil}},
		{"bank", "list_accounts", pinA, want{5, "pin.missing", nil}},
		{"bank", "transfer", pinD, want{3, "name.write_word", nil}},
		{"bank", "pay_bill", pinD, want{3, "name.write_word", nil}},
		{"bank", "move_money", pinD, want{3, "name.write_word", nil}},
		{"bank", "get_secret", pinD, want{4, "tool.not_allowed", nil}},
		{"bank", "get.balances", pinB, want{1, "name.charset", nil}},
		{"evil", "get_balances", pinB, want{2, "server.unknown", nil}},
	}
	for _, tt := range tests {
		d := g.Listable(tt.server, tt.tool, tt.sha, pinD)
		checkDecision(t, tt.server+"/"+tt.tool, d, tt.want)
		if d.Args != nil || d.ArgNames != nil {
			t.Errorf("Listable(%q) has argument evidence %+v", tt.tool, d)
		}
	}
}

// definitionPolicy pins get_balances by schema_sha256 and definition_sha256.
const definitionPolicy = `version: 1
id: gate-definition
default: deny
require_pins: true
servers:
  bank:
    tools:
      get_balances:
        schema_sha256: ` + "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb" + `
        definition_sha256: ` + "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc" + `
`

// TestCheckPinDefinition: a tool pinned with definition_sha256 is denied
// when a member outside schema_sha256 changed, though schema_sha256 holds;
// a tool pinned the old way is not checked against it.
func TestCheckPinDefinition(t *testing.T) {
	g := New(mustParse(t, definitionPolicy))
	for _, tt := range []struct {
		label string
		defs  map[string]string
		want  want
	}{
		{"both hold", map[string]string{"get_balances": pinC}, want{}},
		{"title changed", map[string]string{"get_balances": pinA}, want{5, "pin.mismatch", []string{"definition_sha256", "aaaaaaaaaaaa…", "cccccccccccc…"}}},
		{"no definition listed", nil, want{5, "pin.mismatch", []string{"definition_sha256"}}},
	} {
		c := call("get_balances", "")
		c.LiveDefinition = tt.defs
		checkDecision(t, tt.label, g.Decide(c), tt.want)
		checkDecision(t, tt.label+" (Listable)", g.Listable("bank", "get_balances", pinB, tt.defs["get_balances"]), tt.want)
	}
	old := New(mustParse(t, testPolicy))
	if d := old.Decide(call("get_balances", "")); !d.Allow {
		t.Errorf("a tool pinned by schema_sha256 alone, with no definition listed: %+v", d)
	}
}
