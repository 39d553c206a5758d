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

// TestMoreWords pins the words added from the tool lists of real payment
// servers (see the sources beside the list): each denies the write that
// uses it.
func TestMoreWords(t *testing.T) {
	for _, tt := range []struct{ name, word string }{
		{"finalize_invoice", "finalize"},            // Stripe
		{"setup_invoice_auto_reminders", "setup"},   // PayPal
		{"capture_payments", "capture"},             // Hyperswitch
		{"complete_authorize_payments", "complete"}, // Hyperswitch, Square CompletePayment
		{"fulfill_payouts", "fulfill"},              // Hyperswitch
		{"toggle_blocklist", "toggle"},              // Hyperswitch
		{"retry_events", "retry"},                   // Hyperswitch
		{"PublishInvoice", "publish"},               // Square
		{"PauseSubscription", "pause"},              // Square
		{"ResumeSubscription", "resume"},            // Square
		{"CloneOrder", "clone"},                     // Square
		{"AdjustLoyaltyPoints", "adjust"},           // Square
		{"AccumulateLoyaltyPoints", "accumulate"},   // Square
		{"DismissTerminalCheckout", "dismiss"},      // Square
		{"reassign_terminal", "reassign"},           // Adyen
		{"increment_authorization", "increment"},    // Stripe API
		{"finaliseInvoice", "finalise"},             // British spelling
		{"invoice_finalizes", "finalizes"},          // noun-first naming
		{"payout_fulfils", "payout"},                // the first run wins
		{"subscription_pauses", "pauses"},           // plural
		{"captures_list", "captures"},               // plural
		{"get_completes", "completes"},              // third person
	} {
		if got, ok := Find(tt.name, nil); !ok || got != tt.word {
			t.Errorf("Find(%q) = %q, %v; want %q", tt.name, got, ok, tt.word)
		}
	}
	// Reads of the same servers still pass.
	for _, name := range []string{"retrieve_balance", "list_customers", "list_invoices", "search_documentation",
		"list_disputes", "get_invoice", "show_product_details", "get_merchant_insights", "ListLocations",
		"CalculateLoyaltyPoints", "get_auth", "get_liabilities", "list_terminals", "get_account_holder"} {
		if w, ok := Find(name, nil); ok {
			t.Errorf("Find(%q) = %q, want no write word", name, w)
		}
	}
}

func TestFindAll(t *testing.T) {
	tests := []struct {
		name  string
		extra []string
		want  []Match
	}{
		{"get_balances", nil, nil},
		{"", nil, nil},
		{"list_transfers", nil, []Match{{"transfers", false}}},
		{"transfers_list", nil, []Match{{"transfers", true}}},
		{"listTransfers", nil, []Match{{"transfers", false}}},
		{"list-TRANSFERS", nil, []Match{{"transfers", false}}},
		{"transfer", nil, []Match{{"transfer", true}}},
		{"2transfer", nil, []Match{{"transfer", true}}}, // digit tokens do not lead
		{"v2_transfer", nil, []Match{{"transfer", false}}},
		{"list_transfers_pay", nil, []Match{{"transfers", false}, {"pay", false}}},
		{"get_payment_status", nil, []Match{{"payment", false}}},
		{"list_payment_intents", nil, []Match{{"payment", false}}},
		{"get-resource-links", nil, []Match{{"links", false}}},
		{"top_up_history", nil, []Match{{"topup", true}}},
		{"get_top_up", nil, []Match{{"topup", false}}},
		{"re_set", nil, []Match{{"reset", true}, {"set", false}}},
		{"pay_ment", nil, []Match{{"pay", true}, {"payment", true}}},
		{"transfer_transfer", nil, []Match{{"transfer", true}, {"transfer", false}}},
		{"get_borrow_rates", []string{"borrow"}, []Match{{"borrow", false}}},
		{"BorrowRates", []string{"Borrow"}, []Match{{"borrow", true}}},
		{"2_3", nil, nil},
	}
	for _, tt := range tests {
		got := FindAll(tt.name, tt.extra)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("FindAll(%q, %q) mismatch (-want +got):\n%s", tt.name, tt.extra, diff)
		}
	}
}

// TestAcknowledgeable: the reads the issue names can be acknowledged; a
// leading word and a word of Never cannot.
func TestAcknowledgeable(t *testing.T) {
	for _, name := range []string{"list_transfers", "get_transfer", "list_payments", "get_payment_status",
		"list_refunds", "list_charges", "list_payouts", "list_orders", "list_payment_intents",
		"get-resource-links", "list_setup_intents", "getTransferStatus", "get_top_up"} {
		ms := FindAll(name, nil)
		if len(ms) == 0 {
			t.Errorf("%s: no write word found; the test no longer tests acknowledgement", name)
		}
		for _, m := range ms {
			if !m.Acknowledgeable() || m.Why() != "" {
				t.Errorf("%s: %+v cannot be acknowledged (%s)", name, m, m.Why())
			}
		}
	}
	for _, tt := range []struct{ name, word, why string }{
		{"transfer_funds", "transfer", "leads"},
		{"transfers_list", "transfers", "leads"},
		{"pay_bill", "pay", "leads"},
		{"send_money", "send", "leads"},
		{"create_refund", "create", "leads"},
		{"delete_watch", "delete", "leads"},
		{"set_limit", "set", "leads"},
		{"finalize_invoice", "finalize", "leads"},
		{"2transfer", "transfer", "leads"},
		{"bill_pay", "pay", "wherever"},
		{"money_send", "send", "wherever"},
		{"invoice_finalize", "finalize", "wherever"},
		{"refund_create", "create", "wherever"},
		{"account_withdraw", "withdraw", "wherever"},
		{"funds_wire", "wire", "wherever"},
		{"list_transfers_pay", "pay", "wherever"},
	} {
		found := false
		for _, m := range FindAll(tt.name, nil) {
			if m.Word != tt.word {
				continue
			}
			found = true
			if m.Acknowledgeable() || !strings.Contains(m.Why(), tt.why) {
				t.Errorf("%s: %+v: Acknowledgeable %v, Why %q; want not, because it %s", tt.name, m, m.Acknowledgeable(), m.Why(), tt.why)
			}
		}
		if !found {
			t.Errorf("%s: %q not found", tt.name, tt.word)
		}
	}
}

func TestNeverList(t *testing.T) {
	n := Never()
	if !slices.IsSorted(n) || len(slices.Compact(slices.Clone(n))) != len(n) {
		t.Error("Never is not sorted and unique")
	}
	for _, w := range n {
		if !IsBuiltin(w) {
			t.Errorf("never word %q is not built in", w)
		}
	}
	// The brief's verbs, and both forms of each.
	for _, w := range []string{"pay", "send", "create", "delete", "set", "withdraw", "wire"} {
		for _, f := range []string{w, w + "s"} {
			if !slices.Contains(n, f) {
				t.Errorf("Never lacks %q", f)
			}
		}
	}
	// The nouns of the reads stay acknowledgeable.
	for _, w := range []string{"transfer", "transfers", "payment", "payments", "refunds", "charges", "payouts", "orders", "links", "setup", "update", "updates"} {
		if slices.Contains(n, w) {
			t.Errorf("Never has %q, a noun reads use", w)
		}
	}
	n[0] = "mutated"
	if Never()[0] == "mutated" {
		t.Error("Never returns the package's own slice")
	}
	if IsBuiltin("list") || IsBuiltin("") || !IsBuiltin("accept") || !IsBuiltin("writes") {
		t.Error("IsBuiltin is wrong at the edges")
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
		all := FindAll(name, []string{"borrow"})
		if ok != (len(all) > 0) || (ok && all[0].Word != w) {
			t.Fatalf("FindAll(%q) = %+v, Find = %q, %v: FindAll's first must be Find's", name, all, w, ok)
		}
		for i, m := range all {
			if m.Leading && i > 0 && !all[i-1].Leading {
				t.Fatalf("FindAll(%q) = %+v: a leading match after one that does not lead", name, all)
			}
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
