package gate

import (
	"strings"
	"testing"
)

func TestCheckName(t *testing.T) {
	tests := []struct {
		tool string
		want want
	}{
		{"get_balances", want{}},
		{"", want{1, "name.length", []string{`""`, "0 bytes"}}},
		{strings.Repeat("a", 129), want{1, "name.length", []string{"129 bytes", "…"}}},
		{strings.Repeat("é", 65), want{1, "name.length", []string{"130 bytes"}}},
		{strings.Repeat("a", 128), want{4, "tool.not_allowed", nil}}, // 128 bytes pass check 1
		{"tr\u0430nsfer", want{1, "name.charset", []string{"U+0430 at byte 2", `"tr\u0430nsfer"`}}},
		{"get\u200bbalances", want{1, "name.charset", []string{"U+200B at byte 3"}}},
		{"bank.transfer", want{1, "name.charset", []string{"U+002E at byte 4"}}},
		{"../transfer", want{1, "name.charset", []string{"U+002E at byte 0"}}},
		{"bank/transfer", want{1, "name.charset", []string{"U+002F at byte 4"}}},
		{"get_balances ", want{1, "name.charset", []string{"U+0020 at byte 12"}}},
		{" get_balances", want{1, "name.charset", []string{"U+0020 at byte 0"}}},
		{"get_balances\n", want{1, "name.charset", []string{"U+000A at byte 12", `\n`}}},
		{"get_balances\r", want{1, "name.charset", []string{"U+000D"}}},
		{"get_balances\t", want{1, "name.charset", []string{"U+0009"}}},
		{"get\x00balances", want{1, "name.charset", []string{"U+0000 at byte 3"}}},
		{"get\xffbalances", want{1, "name.charset", []string{"the byte 0xff (not UTF-8) at byte 3"}}},
		{"get_balances\u00a0", want{1, "name.charset", []string{"U+00A0"}}},
		{"get_balance\u0455", want{1, "name.charset", []string{"U+0455"}}}, // Cyrillic ѕ
		{"ｇｅｔ_balances", want{1, "name.charset", []string{"U+FF47 at byte 0"}}},
		{"get_balances\u202e", want{1, "name.charset", []string{"U+202E"}}}, // right-to-left override
		{"get_balances\ufeff", want{1, "name.charset", []string{"U+FEFF"}}},
		{"get:balances", want{1, "name.charset", []string{"U+003A"}}},
		{"get_balances;", want{1, "name.charset", []string{"U+003B"}}},
		{"get%5fbalances", want{1, "name.charset", []string{"U+0025"}}},
		{"get_\U0001F4B8", want{1, "name.charset", []string{"U+1F4B8 at byte 4"}}},
	}
	g := testGate(t)
	for _, tt := range tests {
		checkDecision(t, "tool "+quote(tt.tool), g.Decide(call(tt.tool, "")), tt.want)
	}
}

func TestCheckServer(t *testing.T) {
	g := testGate(t)
	for _, tt := range []struct {
		server string
		want   want
	}{
		{"bank", want{}},
		{"other", want{4, "tool.not_allowed", []string{`allowed: none`}}},
		{"", want{2, "server.unknown", []string{`server ""`, `"bank", "other"`, "gate-test"}}},
		{"Bank", want{2, "server.unknown", []string{`server "Bank"`}}},
		{"bank ", want{2, "server.unknown", nil}},
		{"evil", want{2, "server.unknown", nil}},
	} {
		c := call("get_balances", "")
		c.Server = tt.server
		checkDecision(t, "server "+quote(tt.server), g.Decide(c), tt.want)
	}
	if d := New(nil).Decide(call("get_balances", "")); d.Rule != "server.unknown" {
		t.Errorf("New(nil) decided %+v, want server.unknown", d)
	}
}

func TestCheckWords(t *testing.T) {
	tests := []struct {
		tool string
		want want
	}{
		{"get_balances", want{}},
		{"transfer", want{3, "name.write_word", []string{`"transfer"`, "tokens transfer"}}}, // allowlisted, still denied
		{"get_borrow_limits", want{3, "name.write_word", []string{`word "borrow"`}}},        // never_allow
		{"pay_bill", want{3, "name.write_word", []string{`word "pay"`, "tokens pay bill"}}},
		{"pay-bill", want{3, "name.write_word", []string{`word "pay"`}}},
		{"payBill", want{3, "name.write_word", []string{`word "pay"`}}},
		{"PAYBill", want{3, "name.write_word", []string{`word "pay"`, "tokens pay bill"}}},
		{"transfer2", want{3, "name.write_word", []string{"tokens transfer 2"}}},
		{"2transfer", want{3, "name.write_word", []string{`word "transfer"`}}},
		{"TRANSFER", want{3, "name.write_word", nil}},
		{"Transfer_", want{3, "name.write_word", nil}},
		{"paY", want{3, "name.write_word", []string{`word "pay"`, "tokens pa y"}}},
		{"XMLHttpSend", want{3, "name.write_word", []string{`word "send"`}}},
		{"sendMONEY", want{3, "name.write_word", []string{`word "send"`}}},
		{"move_money", want{3, "name.write_word", nil}},
		{"create_watch", want{3, "name.write_word", []string{`word "create"`}}},
		{"delete_watch", want{3, "name.write_word", []string{`word "delete"`}}},
		{"set_account_label", want{3, "name.write_word", []string{`word "set"`}}},
		{"top_up", want{3, "name.write_word", []string{`word "topup"`}}},
		{"BorrowMoney", want{3, "name.write_word", []string{`word "borrow"`}}},
		{"get_settings", want{4, "tool.not_allowed", nil}},
		{"movemoney", want{4, "tool.not_allowed", nil}}, // one token: left to the allowlist
	}
	g := testGate(t)
	for _, tt := range tests {
		checkDecision(t, "tool "+quote(tt.tool), g.Decide(call(tt.tool, "")), tt.want)
	}
}

func TestCheckAllowlist(t *testing.T) {
	tests := []struct {
		tool string
		want want
	}{
		{"get_transactions", want{6, "args.required", nil}}, // passes check 4
		{"Get_Transactions", want{4, "tool.not_allowed", []string{`tool "Get_Transactions"`, `server "bank"`, "case-sensitive", `"get_balances"`}}},
		{"GET_TRANSACTIONS", want{4, "tool.not_allowed", nil}},
		{"get_transaction", want{4, "tool.not_allowed", nil}},
		{"get_transactions_", want{4, "tool.not_allowed", nil}},
		{"get-transactions", want{4, "tool.not_allowed", nil}},
		{"getTransactions", want{4, "tool.not_allowed", nil}},
		{"get_", want{4, "tool.not_allowed", nil}},
		{"get_balancesx", want{4, "tool.not_allowed", nil}},
		{"__proto__", want{4, "tool.not_allowed", nil}},
		{"constructor", want{4, "tool.not_allowed", nil}},
		{"toString", want{4, "tool.not_allowed", nil}},
		{"hasOwnProperty", want{4, "tool.not_allowed", nil}},
		{"valueOf", want{4, "tool.not_allowed", nil}},
		{"__defineGetter__", want{4, "tool.not_allowed", nil}},
		{"_", want{4, "tool.not_allowed", nil}},
		{"-", want{4, "tool.not_allowed", nil}},
		{"get_balances", want{}},
	}
	g := testGate(t)
	for _, tt := range tests {
		checkDecision(t, "tool "+quote(tt.tool), g.Decide(call(tt.tool, "")), tt.want)
	}
}
