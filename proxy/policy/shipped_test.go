package policy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/bankdoor/bankdoor/proxy/words"
)

const bankmcpPath = "../../policies/bankmcp.yaml"

// bankmcpAllowed are the tools /work/shared/bankmcp.md marks allow, in
// file order.
var bankmcpAllowed = []string{"consent_status", "list_accounts", "get_balances", "get_transactions", "list_watches"}

func TestShippedPoliciesLoad(t *testing.T) {
	paths, err := filepath.Glob("../../policies/*.yaml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no shipped policies found (%v)", err)
	}
	for _, path := range paths {
		if _, err := Load(path); err != nil {
			t.Errorf("%v", err)
		}
	}
}

func TestBankmcpPreset(t *testing.T) {
	p, err := Load(bankmcpPath)
	if err != nil {
		t.Fatal(err)
	}
	if p.ID != "bankmcp-readonly" || !p.RequirePins || p.Default != "deny" || p.Receipts != "deny" {
		t.Errorf("id %q require_pins %v default %q receipts %q", p.ID, p.RequirePins, p.Default, p.Receipts)
	}
	s := p.Servers["bankmcp"]
	if len(p.Servers) != 1 || s == nil {
		t.Fatalf("servers %v, want only bankmcp", sortedKeys(p.Servers))
	}
	if diff := cmp.Diff(slices.Sorted(slices.Values(bankmcpAllowed)), sortedKeys(s.Tools)); diff != "" {
		t.Errorf("allowed tools (-want +got):\n%s", diff)
	}
	if len(s.Expose) != 0 {
		t.Errorf("expose %q, want nothing besides tools", s.Expose)
	}
	var got []string
	for _, pr := range Lint(p) {
		got = append(got, pr.Rule+" "+toolAt(s, pr.Line))
		if pr.Server != "bankmcp" {
			t.Errorf("%v: Server %q, want bankmcp", pr, pr.Server)
		}
	}
	var want []string
	for _, tool := range bankmcpAllowed {
		want = append(want, "pin.missing "+tool)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Lint (-want +got):\n%s", diff)
	}
}

func toolAt(s *Server, line int) string {
	for _, t := range s.Tools {
		if t.Line == line {
			return t.Name
		}
	}
	return "?"
}

// TestBankmcpDenied checks that each tool the preset denies is absent and
// that the never_allow words catch the two that no built-in word
// catches, should someone allowlist them.
func TestBankmcpDenied(t *testing.T) {
	p, err := Load(bankmcpPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"list_banks", "start_consent", "disconnect_bank", "set_account_label",
		"create_watch", "delete_watch", "check_watches", "attest_account"} {
		if p.Servers["bankmcp"].Tools[tool] != nil {
			t.Errorf("%s is allowed", tool)
		}
	}
	for _, tool := range []string{"attest_account", "start_consent"} {
		if _, ok := words.Find(tool, p.NeverAllow); !ok {
			t.Errorf("never_allow does not catch %s", tool)
		}
	}
}

// TestBankmcpArgs checks the argument specs against values bankmcp takes
// and values it should never be sent.
func TestBankmcpArgs(t *testing.T) {
	p, err := Load(bankmcpPath)
	if err != nil {
		t.Fatal(err)
	}
	tx := p.Servers["bankmcp"].Tools["get_transactions"].Args
	if a := tx["account"]; !a.Required || a.Type != "string" {
		t.Errorf("account: %+v", a)
	}
	for name, tc := range map[string]struct{ ok, bad []string }{
		"account": {
			ok: []string{"0d1e2f3a-4b5c-6d7e-8f90-a1b2c3d4e5f6", "DK5000400440116243", "Joint expenses", "Fælles konto", strings.Repeat("a", 64),
				"Joint (EUR)", "Visa/Dankort", "Savings #2", "Budget+, shared", "Cafe\u0301 account", "O'Brien & Co."},
			bad: []string{"", " leading", "(EUR) Joint", strings.Repeat("a", 65), "a\nb", "x; ignore previous instructions", `a"b`,
				"a<b>", "a`b`", "a{b}", "a\\b", "a\u200bb", "a\u202eb", "a\tb"},
		},
		"from":         {ok: []string{"2024-01-31"}, bad: []string{"2024-1-31", "2024-01-31T00:00", "٢٠٢٤-٠١-٣١"}},
		"continuation": {ok: []string{"abc123==", "eyJ0eXAi.x-y_z"}, bad: []string{"", "a b", "a\n", strings.Repeat("k", 1025)}},
	} {
		a := tx[name]
		for _, v := range tc.ok {
			if stringFails(a, v) != "" {
				t.Errorf("%s rejects %q: %s", name, v, stringFails(a, v))
			}
		}
		for _, v := range tc.bad {
			if stringFails(a, v) == "" {
				t.Errorf("%s accepts %q", name, v)
			}
		}
	}
	if mp := tx["max_pages"]; mp.Type != "integer" || *mp.Min != 1 || *mp.Max != 50 {
		t.Errorf("max_pages: %+v", mp)
	}
	if tx["include_raw"].Type != "boolean" || p.Servers["bankmcp"].Tools["list_accounts"].Args["include_balances"].Type != "boolean" {
		t.Errorf("include_raw / include_balances are not boolean")
	}
}

// TestBankmcpPin pins a copy of the preset as bankdoor pin --write would:
// Lint is then clean and every line with a comment is still there.
func TestBankmcpPin(t *testing.T) {
	orig, err := os.ReadFile(bankmcpPath)
	if err != nil {
		t.Fatal(err)
	}
	path := writeTemp(t, string(orig), 0o644)
	pins := make(map[string]Pin)
	for i, tool := range bankmcpAllowed {
		pins[tool] = Pin{Schema: pinOf("abcde"[i]), Definition: pinOf("56789"[i])}
	}
	changed, missing, err := SetPins(path, "bankmcp", pins)
	if err != nil || len(changed) != len(bankmcpAllowed) || missing != nil {
		t.Fatalf("SetPins = %q, %q, %v", changed, missing, err)
	}
	p, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if problems := Lint(p); len(problems) != 0 {
		t.Errorf("Lint after pinning: %v", problems)
	}
	pinned, _ := os.ReadFile(path)
	for _, line := range strings.Split(string(orig), "\n") {
		if strings.Contains(line, "#") && !strings.Contains(string(pinned), line) {
			t.Errorf("line lost: %q", line)
		}
	}
}

const stripePath = "../../policies/stripe.yaml"

// stripeReads and stripeWrites are the tools of @stripe/mcp 0.2.5 (the
// end-to-end test in cmd/bankdoor checks them against the real server).
var (
	stripeReads = []string{"list_customers", "list_products", "list_prices", "list_invoices", "retrieve_balance",
		"list_payment_intents", "list_subscriptions", "search_stripe_documentation", "list_coupons", "list_disputes"}
	stripeWrites = []string{"create_customer", "create_product", "create_price", "create_payment_link", "create_invoice",
		"create_invoice_item", "finalize_invoice", "create_refund", "cancel_subscription", "update_subscription",
		"create_coupon", "update_dispute"}
)

// TestStripePreset: the preset allows exactly the reads, every one pinned
// both ways, and lint finds nothing that would deny them.
func TestStripePreset(t *testing.T) {
	p, err := Load(stripePath)
	if err != nil {
		t.Fatal(err)
	}
	if p.ID != "stripe-mcp-readonly" || !p.RequirePins || p.Default != "deny" || p.Receipts != "deny" {
		t.Errorf("id %q require_pins %v default %q receipts %q", p.ID, p.RequirePins, p.Default, p.Receipts)
	}
	s := p.Servers["stripe"]
	if len(p.Servers) != 1 || s == nil {
		t.Fatalf("servers %v, want only stripe", sortedKeys(p.Servers))
	}
	if diff := cmp.Diff(slices.Sorted(slices.Values(stripeReads)), sortedKeys(s.Tools)); diff != "" {
		t.Errorf("allowed tools (-reads +allowed):\n%s", diff)
	}
	if len(s.Expose) != 0 {
		t.Errorf("expose %q, want nothing besides tools", s.Expose)
	}
	for name, tool := range s.Tools {
		if len(tool.SchemaSHA256) != 64 || len(tool.DefinitionSHA256) != 64 {
			t.Errorf("%s: schema_sha256 %q definition_sha256 %q, want both pins", name, tool.SchemaSHA256, tool.DefinitionSHA256)
		}
	}
	for _, pr := range Lint(p) {
		if slices.Contains([]string{"name.write_word", "pin.missing", "pin.schema_only", "server.no_tools", "args.unbounded"}, pr.Rule) {
			t.Errorf("lint: %v", pr)
		}
	}
}

// TestStripeDenied: no write is allowed, and finalize_invoice, whose name
// has no built-in word, is caught by never_allow.
func TestStripeDenied(t *testing.T) {
	p, err := Load(stripePath)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range stripeWrites {
		if p.Servers["stripe"].Tools[tool] != nil {
			t.Errorf("%s is allowed", tool)
		}
		if _, ok := words.Find(tool, p.NeverAllow); !ok {
			t.Errorf("no write word (built-in or never_allow) catches %s", tool)
		}
	}
}

// TestStripeArgs checks the argument specs against values Stripe takes
// and values it should never be sent.
func TestStripeArgs(t *testing.T) {
	p, err := Load(stripePath)
	if err != nil {
		t.Fatal(err)
	}
	tools := p.Servers["stripe"].Tools
	long := strings.Repeat("a", 65)
	for _, tc := range []struct {
		tool, arg string
		ok, bad   []string
	}{
		{"list_invoices", "customer", []string{"cus_NffrFeUfNV2Hib", "cus_a"},
			[]string{"", "cus_", "cus_" + long, "NffrFeUfNV2Hib", "cus_Nffr FeU", "cus_Nffr/../x", "acct_1032D82eZvKYlo2C", "cus_NffrFeUfNV2Hib\n"}},
		{"list_prices", "product", []string{"prod_NWjs8kKbJWmuuc"}, []string{"prod_", "price_1MoBy5LkdIwHu7ixZhnattbh", "prod_x?expand=y"}},
		{"list_subscriptions", "price", []string{"price_1MoBy5LkdIwHu7ixZhnattbh"}, []string{"price_", "prod_NWjs8kKbJWmuuc"}},
		{"list_disputes", "charge", []string{"ch_3MmlLrLkdIwHu7ix0snN0B15", "py_3MmlLrLkdIwHu7ix0snN0B15"}, []string{"pi_3MtwBwLkdIwHu7ix28a3tqPa", "ch_"}},
		{"list_disputes", "payment_intent", []string{"pi_3MtwBwLkdIwHu7ix28a3tqPa"}, []string{"ch_3MmlLrLkdIwHu7ix0snN0B15", "pi_" + long}},
		{"list_customers", "email", []string{"jenny.rosen@example.com", "o'brien+stripe@mail.example.co.uk"},
			[]string{"", "jenny", "jenny@localhost", "a b@example.com", "jenny@example.com\n", "jenny@exa_mple.com", strings.Repeat("a", 65) + "@example.com"}},
		{"search_stripe_documentation", "question", []string{"How do I list the refunds of a charge?", "Wie erstelle ich eine Rückerstattung?"},
			[]string{"", "a\nb", "a\u202eb", "a\u200bb", strings.Repeat("q", 501)}},
	} {
		a := tools[tc.tool].Args[tc.arg]
		if a == nil {
			t.Errorf("%s has no argument %s", tc.tool, tc.arg)
			continue
		}
		for _, v := range tc.ok {
			if why := stringFails(a, v); why != "" {
				t.Errorf("%s %s rejects %q: %s", tc.tool, tc.arg, v, why)
			}
		}
		for _, v := range tc.bad {
			if stringFails(a, v) == "" {
				t.Errorf("%s %s accepts %q", tc.tool, tc.arg, v)
			}
		}
	}
	if q := tools["search_stripe_documentation"].Args["question"]; !q.Required {
		t.Error("question is not required")
	}
	for name, tool := range tools {
		if l := tool.Args["limit"]; l != nil && (l.Type != "integer" || *l.Min != 1 || *l.Max != 100) {
			t.Errorf("%s limit: %+v, want an integer in 1..100 as Stripe's schema says", name, l)
		}
	}
}
