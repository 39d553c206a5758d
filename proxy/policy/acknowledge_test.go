package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAcknowledge(t *testing.T) {
	p, err := Load("testdata/acknowledge.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for name, tool := range p.Servers["bank"].Tools {
		got[name] = tool.Acknowledge
	}
	want := map[string][]string{
		"list_transfers":         {"transfers"}, // stored lower-case
		"get_payment_status":     {"payment"},
		"get_borrow_rates":       {"borrow"}, // a never_allow word
		"list_transfers_payouts": {"transfers"},
		"get_refund":             nil,
		"transfer_funds":         nil,
		"list_charges_pay":       nil,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Acknowledge (-want +got):\n%s", diff)
	}
	// The canonical form keeps the acknowledgements: SetPins compares
	// policies by it, and a round trip must not lose them.
	c := canonical(p)
	if !strings.Contains(string(c), `acknowledge: ["transfers"]`) {
		t.Errorf("canonical form lacks the acknowledgement:\n%s", c)
	}
	q, err := Parse("c.yaml", c)
	if err != nil {
		t.Fatalf("canonical form does not parse: %v\n%s", err, c)
	}
	if diff := cmp.Diff(p.Servers["bank"].Tools["list_transfers"].Acknowledge, q.Servers["bank"].Tools["list_transfers"].Acknowledge); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

// ackDoc is a policy whose tool name is the first line's key, at 7:7, with
// body inside it from 8:9, and never_allow [borrow].
func ackDoc(tool, body string) string {
	return "version: 1\nid: t\ndefault: deny\nnever_allow: [borrow]\nservers:\n  bank:\n    tools:\n      " + tool + ":\n" + indent(body, 8)
}

func TestAcknowledgeErrors(t *testing.T) {
	pin := "schema_sha256: " + strings.Repeat("ab", 32) + "\n"
	for _, tc := range []errorCase{
		{"not a list", ackDoc("list_transfers", pin+"acknowledge: transfers"), []string{
			`t.yaml:10:22: "acknowledge" of tool "list_transfers" must be a list, found the string "transfers"`}},
		{"empty", ackDoc("list_transfers", pin+"acknowledge: []"), []string{
			`t.yaml:10:22: acknowledge of tool "list_transfers" lists no words; list the write words its name may contain, or remove the key`}},
		{"not a string", ackDoc("list_transfers", pin+"acknowledge: [5]"), []string{
			`t.yaml:10:23: an acknowledge word must be a string, found the integer 5`}},
		{"separator", ackDoc("get_top_up", pin+"acknowledge: [top_up]"), []string{
			`t.yaml:10:23: acknowledge word "top_up" is not 1 to 64 ASCII letters and digits; write the write word alone, as the gate spells it (for example transfers, topup)`}},
		{"twice", ackDoc("list_transfers", pin+"acknowledge: [transfers, Transfers]"), []string{
			`t.yaml:10:34: acknowledge word "Transfers" is listed twice for tool "list_transfers"; remove one`}},
		{"not a write word", ackDoc("list_transfers", pin+"acknowledge: [transfers, list]"), []string{
			`t.yaml:10:34: acknowledge word "list" of tool "list_transfers" is not a write word (built-in or never_allow), so there is nothing to acknowledge; remove it`}},
		{"stale", ackDoc("list_accounts", pin+"acknowledge: [transfers]"), []string{
			`t.yaml:10:23: tool "list_accounts" does not contain the write word "transfers" (its tokens are list accounts), so the acknowledgement is stale; remove the word`}},
		{"stale singular", ackDoc("list_transfers", pin+"acknowledge: [transfer]"), []string{
			`t.yaml:10:23: tool "list_transfers" does not contain the write word "transfer"`}},
		{"leading", ackDoc("transfers_list", pin+"acknowledge: [transfers]"), []string{
			`t.yaml:10:23: tool "transfers_list" cannot acknowledge the write word "transfers": it leads the name, and a name that starts with a write word names that write, so no policy can allow this name; remove the tool from the policy`}},
		{"leading camelCase", ackDoc("TransferFunds", pin+"acknowledge: [transfer]"), []string{
			`t.yaml:10:23: tool "TransferFunds" cannot acknowledge the write word "transfer": it leads the name`}},
		{"leading never_allow", ackDoc("borrow_rates", pin+"acknowledge: [borrow]"), []string{
			`t.yaml:10:23: tool "borrow_rates" cannot acknowledge the write word "borrow": it leads the name`}},
		{"never word", ackDoc("bill_pay", pin+"acknowledge: [pay]"), []string{
			`t.yaml:10:23: tool "bill_pay" cannot acknowledge the write word "pay": it names a payment or a write wherever it stands in a name`}},
		{"never word after an acknowledgeable one", ackDoc("list_transfers_send", pin+"acknowledge: [transfers, send]"), []string{
			`t.yaml:10:34: tool "list_transfers_send" cannot acknowledge the write word "send": it names a payment or a write`}},
		{"a word also leading", ackDoc("transfer_get_transfer", pin+"acknowledge: [transfer]"), []string{
			`t.yaml:10:23: tool "transfer_get_transfer" cannot acknowledge the write word "transfer": it leads the name`}},
		{"never_allow word not in the policy", strings.Replace(ackDoc("get_borrow_rates", pin+"acknowledge: [borrow]"), "never_allow: [borrow]\n", "", 1), []string{
			`t.yaml:9:23: acknowledge word "borrow" of tool "get_borrow_rates" is not a write word`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse("t.yaml", []byte(tc.in))
			if err == nil {
				t.Fatalf("Parse succeeded; want errors %q", tc.want)
			}
			if p != nil {
				t.Errorf("Parse returned a policy with its error")
			}
			checkErrors(t, err, tc.want)
		})
	}
}

// TestAcknowledgeNeverAllowAfterServers: never_allow may follow servers in
// the file; acknowledgements of its words are checked once it is read.
func TestAcknowledgeNeverAllowAfterServers(t *testing.T) {
	src := "version: 1\nid: t\ndefault: deny\nservers:\n  bank:\n    tools:\n      get_borrow_rates:\n        acknowledge: [borrow]\nnever_allow: [borrow]\n"
	p, err := Parse("t.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Servers["bank"].Tools["get_borrow_rates"].Acknowledge; !cmp.Equal(got, []string{"borrow"}) {
		t.Errorf("Acknowledge = %q", got)
	}
}

// TestSetPinsKeepsAcknowledge: an acknowledged tool without a pin loads
// (lint reports it), so `pin --write` can pin it, keeping the key.
func TestSetPinsKeepsAcknowledge(t *testing.T) {
	path := t.TempDir() + "/p.yaml"
	src := "version: 1\nid: t\ndefault: deny\nservers:\n  bank:\n    tools:\n      list_transfers:\n        acknowledge: [transfers]  # reviewed\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	changed, _, err := SetPins(path, "bank", map[string]Pin{"list_transfers": {Schema: pinOf('a'), Definition: pinOf('b')}})
	if err != nil || !cmp.Equal(changed, []string{"list_transfers"}) {
		t.Fatalf("SetPins = %q, %v", changed, err)
	}
	p, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	tool := p.Servers["bank"].Tools["list_transfers"]
	if tool.SchemaSHA256 != pinOf('a') || tool.DefinitionSHA256 != pinOf('b') || !cmp.Equal(tool.Acknowledge, []string{"transfers"}) {
		t.Errorf("after SetPins: %+v", tool)
	}
}

func TestLintAcknowledge(t *testing.T) {
	p, err := Load("testdata/acknowledge.yaml")
	if err != nil {
		t.Fatal(err)
	}
	type line struct {
		Line int
		Rule string
		Info bool
	}
	var got []line
	var msgs []string
	for _, pr := range Lint(p) {
		got = append(got, line{pr.Line, pr.Rule, pr.Info})
		msgs = append(msgs, pr.Message)
	}
	want := []line{
		{9, "name.acknowledged", true},  // list_transfers
		{15, "name.acknowledged", true}, // get_payment_status
		{20, "pin.missing", false},      // get_borrow_rates: acknowledged, unpinned
		{22, "name.acknowledged", true}, // list_transfers_payouts
		{22, "name.write_word", false},  // … whose payouts is not acknowledged
		{26, "name.write_word", false},  // get_refund
		{27, "name.write_word", false},  // transfer_funds
		{28, "name.write_word", false},  // list_charges_pay
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Lint (-want +got):\n%s", diff)
	}
	for i, sub := range []string{
		`tool "list_transfers" of server "bank" acknowledges the write word(s) "transfers": its name may contain them while its definition matches schema_sha256 181ce1e9c6ba…`,
		`tool "get_payment_status" of server "bank" acknowledges the write word(s) "payment"`,
		`tool "get_borrow_rates" of server "bank" acknowledges "borrow" but has no schema_sha256; an acknowledgement holds only for the definition a human reviewed and pinned, so the gate denies it until the tool is pinned`,
		`tool "list_transfers_payouts" of server "bank" acknowledges the write word(s) "transfers"`,
		`tool "list_transfers_payouts" of server "bank" contains the write word "payouts", so the gate denies it; if the tool only reads, review its definition, pin it and add acknowledge: [payouts] to it, otherwise remove it from the policy`,
		`tool "get_refund" of server "bank" contains the write word "refund", so the gate denies it; if the tool only reads, review its definition, pin it and add acknowledge: [refund] to it`,
		`tool "transfer_funds" of server "bank" contains the write word "transfer", which no acknowledge: can allow (it leads the name, and a name that starts with a write word names that write), so the gate always denies it; remove it from the policy`,
		`tool "list_charges_pay" of server "bank" contains the write word "charges", so the gate denies it; if the tool only reads`,
	} {
		if !strings.Contains(msgs[i], sub) {
			t.Errorf("problem %d: %q does not contain %q", i, msgs[i], sub)
		}
	}
	// list_charges_pay with charges acknowledged: pay still cannot be.
	p.Servers["bank"].Tools["list_charges_pay"].Acknowledge = []string{"charges"}
	for _, pr := range Lint(p) {
		if pr.Line == 28 && pr.Rule == "name.write_word" && !strings.Contains(pr.Message, `contains the write word "pay", which no acknowledge: can allow (it names a payment or a write wherever it stands in a name)`) {
			t.Errorf("list_charges_pay: %s", pr.Message)
		}
	}
}

// TestShippedPoliciesPassWords: no tool a shipped policy allows is denied
// by the write words (lint would say name.write_word), with the words
// added since.
func TestShippedPoliciesPassWords(t *testing.T) {
	paths, err := filepath.Glob("../../policies/*.yaml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no shipped policies: %v", err)
	}
	for _, path := range paths {
		p, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, pr := range Lint(p) {
			if pr.Rule == "name.write_word" {
				t.Errorf("%s", pr)
			}
		}
	}
}
