package words

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestTokens(t *testing.T) {
	tests := []struct {
		name string
		want []string
	}{
		{"", []string{}},
		{"___", []string{}},
		{"get_balances", []string{"get", "balances"}},
		{"pay_bill", []string{"pay", "bill"}},
		{"pay-bill", []string{"pay", "bill"}},
		{"payBill", []string{"pay", "bill"}},
		{"PayBill", []string{"pay", "bill"}},
		{"PAYBill", []string{"pay", "bill"}},
		{"PAY_BILL", []string{"pay", "bill"}},
		{"transfer2", []string{"transfer", "2"}},
		{"2transfer", []string{"2", "transfer"}},
		{"v2Transfer10x", []string{"v", "2", "transfer", "10", "x"}},
		{"XMLHttpSend", []string{"xml", "http", "send"}},
		{"sendMONEY", []string{"send", "money"}},
		{"TRANSFER", []string{"transfer"}},
		{"Transfer_", []string{"transfer"}},
		{"paY", []string{"pa", "y"}},
		{"TRansfer", []string{"t", "ransfer"}},
		{"getIDs", []string{"get", "i", "ds"}},
		{"__get__balances--", []string{"get", "balances"}},
		{"bank.transfer", []string{"bank", "transfer"}},
		{"../transfer", []string{"transfer"}},
		{"get balances\n", []string{"get", "balances"}},
		{"tr\u0430nsfer", []string{"tr", "nsfer"}},         // Cyrillic а
		{"get\u200bbalances", []string{"get", "balances"}}, // zero-width space
		{"\xff\xfepay\x00bill", []string{"pay", "bill"}},   // invalid UTF-8, NUL
		{"ÜberPay", []string{"ber", "pay"}},
	}
	for _, tt := range tests {
		got := Tokens(tt.name)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Tokens(%q) mismatch (-want +got):\n%s", tt.name, diff)
		}
	}
}

func TestFind(t *testing.T) {
	tests := []struct {
		name  string
		extra []string
		want  string // "" when no word is found
	}{
		// Reads pass.
		{"get_balances", nil, ""},
		{"list_accounts", nil, ""},
		{"get_transactions", nil, ""},
		{"Get_Transactions", nil, ""},
		{"get_account_history", nil, ""},
		{"get_settings", nil, ""},    // set is a whole-token match only
		{"get_address", nil, ""},     // add
		{"list_assets", nil, ""},     // set
		{"get_investments", nil, ""}, // invest
		{"get_exchange_rates", nil, ""},
		{"get_credit_score", nil, ""},
		{"list_open_orders_count", nil, "orders"},
		{"movemoney", nil, ""}, // a word inside one token is not split: see package doc
		// The spellings of the gate's design.
		{"transfer", nil, "transfer"},
		{"transfers", nil, "transfers"},
		{"pay_bill", nil, "pay"},
		{"pay-bill", nil, "pay"},
		{"payBill", nil, "pay"},
		{"PAYBill", nil, "pay"},
		{"transfer2", nil, "transfer"},
		{"2transfer", nil, "transfer"},
		{"XMLHttpSend", nil, "send"},
		{"sendMONEY", nil, "send"},
		{"create_watch", nil, "create"},
		{"delete_watch", nil, "delete"},
		{"set_limit", nil, "set"},
		{"move_money", nil, "move"},
		{"withdraw", nil, "withdraw"},
		{"wire_funds", nil, "wire"},
		{"refund_charge", nil, "refund"},
		{"initiatePayment", nil, "initiate"},
		{"get_payments", nil, "payments"},
		// Whole-name and run matches.
		{"TRANSFER", nil, "transfer"},
		{"Transfer_", nil, "transfer"},
		{"paY", nil, "pay"},
		{"TRansfer", nil, "transfer"},
		{"trANSfer", nil, "transfer"},
		{"xTrANSfer", nil, "transfer"},
		{"top_up", nil, "topup"},
		{"Top_Up_Card", nil, "topup"},
		{"with-draw", nil, "withdraw"},
		{"trans\u200bfer", nil, "transfer"},
		{"bank.transfer", nil, "transfer"},
		{"../transfer", nil, "transfer"},
		{"transfer ", nil, "transfer"},
		{"\xffpay", nil, "pay"},
		// Policy words add to the built-in ones.
		{"borrow_funds", nil, ""},
		{"borrow_funds", []string{"borrow"}, "borrow"},
		{"BorrowFunds", []string{"borrow"}, "borrow"},
		{"p2p_send", []string{"p2p"}, "p2p"}, // runs span digit tokens
		{"send_p2p", []string{"p2p"}, "send"},
		{"get_p2p_limits", []string{"P2P"}, "p2p"},
		{"top_up", []string{"top_up"}, "topup"},
		{"get_balances", []string{"", "_", "-"}, ""},    // empty words never match
		{"transfer", []string{"unrelated"}, "transfer"}, // never remove
		{"xyzzy", []string{"abcdefghijklmnopqrstuvwxyz"}, ""},
		{"abcdefghijklmnopqrstuvwxyz", []string{"abcdefghijklmnopqrstuvwxyz"}, "abcdefghijklmnopqrstuvwxyz"},
	}
	for _, tt := range tests {
		got, ok := Find(tt.name, tt.extra)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("Find(%q, %q) = %q, %v; want %q", tt.name, tt.extra, got, ok, tt.want)
		}
	}
}

// TestFindEveryBuiltin proves that each built-in word is found as a token in
// the spellings a tool name may use.
func TestFindEveryBuiltin(t *testing.T) {
	for _, w := range Builtin() {
		upper := strings.ToUpper(w)
		title := upper[:1] + w[1:]
		for _, name := range []string{w, upper, "x_" + w, w + "_x", "x" + title, title + "X", "x" + upper, "X_" + upper + "_Y", w + "2", "2" + w} {
			if got, ok := Find(name, nil); !ok || got != w {
				t.Errorf("Find(%q) = %q, %v; want %q", name, got, ok, w)
			}
		}
	}
}

func TestBuiltinList(t *testing.T) {
	b := Builtin()
	if len(b) < 60 {
		t.Errorf("Builtin has %d words, want at least 60", len(b))
	}
	if !slices.IsSorted(b) {
		t.Error("Builtin is not sorted")
	}
	if c := slices.Compact(slices.Clone(b)); len(c) != len(b) {
		t.Error("Builtin has duplicate words")
	}
	longest := 0
	for _, w := range b {
		longest = max(longest, len(w))
		if flat, ends := split(w, nil, nil); string(flat) != w || len(ends) != 1 {
			t.Errorf("built-in word %q is not one lower-case token", w)
		}
	}
	if longest != maxBuiltin {
		t.Errorf("maxBuiltin = %d, longest built-in word has %d bytes", maxBuiltin, longest)
	}
	for _, w := range []string{"transfer", "transfers", "pay", "payment", "send", "create", "delete", "set", "move", "withdraw", "wire", "refund"} {
		if !slices.Contains(b, w) {
			t.Errorf("Builtin lacks %q, named in DESIGN §3", w)
		}
	}
	b[0] = "mutated"
	if Builtin()[0] == "mutated" {
		t.Error("Builtin returns the package's own slice")
	}
}

// TestReadWordsLeftOut pins the words the package doc says are left out
// because reads use them; adding one of them is a decision for the doc too.
func TestReadWordsLeftOut(t *testing.T) {
	for _, w := range []string{"get", "list", "balance", "balances", "transaction", "transactions", "account", "accounts", "history", "status", "credit", "open", "exchange", "fund", "funds", "request", "schedule", "issue", "label", "borrow", "watch"} {
		if slices.Contains(Builtin(), w) {
			t.Errorf("Builtin has %q, which the package doc says is left out", w)
		}
	}
}

func FuzzTokens(f *testing.F) {
	for _, s := range []string{"payBill", "PAYBill", "transfer2", "XMLHttpSend", "tr\u0430nsfer", "\xff\x00", "a-b_c.d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		toks := Tokens(name)
		var want strings.Builder
		for i := 0; i < len(name); i++ {
			if c := name[i]; c < utf8.RuneSelf && isAlnum(c) {
				want.WriteByte(lower(c))
			}
		}
		if got := strings.Join(toks, ""); got != want.String() {
			t.Fatalf("Tokens(%q) joined = %q, want %q", name, got, want.String())
		}
		for _, tok := range toks {
			if tok == "" {
				t.Fatalf("Tokens(%q) has an empty token", name)
			}
		}
		w, ok := Find(name, []string{"borrow"})
		if ok != (w != "") || (ok && !strings.Contains(want.String(), w)) {
			t.Fatalf("Find(%q) = %q, %v: not a run of the name's letters", name, w, ok)
		}
	})
}

func BenchmarkFind(b *testing.B) {
	extra := []string{"borrow"}
	for b.Loop() {
		if _, ok := Find("get_transactions_since", extra); ok {
			b.Fatal("read found as write")
		}
	}
}

func BenchmarkTokens(b *testing.B) {
	for b.Loop() {
		Tokens("XMLHttpSendMoney_v2")
	}
}
