package gate

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bankdoor/bankdoor/internal/jcs"
	"github.com/bankdoor/bankdoor/proxy/words"
)

func FuzzDecide(f *testing.F) {
	for _, s := range []struct{ tool, args string }{
		{"get_transactions", `{"account_id":"acc_main","limit":5,"since":"2024-01-31"}`},
		{"get_transactions", `{"account_id":"acc_1","action":"transfer","to_account":"acc_mallory"}`},
		{"get_quote", `{"ref":"r1","amount":1.5e2,"count":5,"currency":"日本円","flag":true,"memo":"ab"}`},
		{"get_balances", ``},
		{"get_balances", `null`},
		{"transfer", `{"amount_cents":100}`},
		{"tr\u0430nsfer", `{}`},
		{"PAYBill", `{}`},
		{"get_transactions", `{"account_id":"acc_\ud800"}`},
		{"get_transactions", `{"account_id":"acc_1","account_id":"acc_2"}`},
		{byIDs, `{"ids":["tx_1","tx_2"],"amounts":[0.5,1.5e2],"years":[2024],"flags":[true],"codes":["日本円"]}`},
		{byIDs, `{"ids":["tx_1",["tx_2"],{"a":1}],"years":[2024,2025.0,null]}`},
		{byIDs, `{"ids":["tx_1","tx_2","tx_3","tx_4"]}`},
	} {
		f.Add(s.tool, []byte(s.args))
	}
	g := testGate(f)
	f.Fuzz(func(t *testing.T, tool string, raw []byte) {
		c := call(tool, "")
		if len(raw) > 0 {
			c.Args = raw
		}
		d := g.Decide(c)
		checkInvariants(t, g, c, d)
		pre := g.Precheck(c)
		if pre.Allow != (d.Allow || d.Check > 4) || (!pre.Allow && (pre.Rule != d.Rule || pre.Reason != d.Reason || pre.ArgsSHA256 != d.ArgsSHA256 || !slices.Equal(pre.ArgNames, d.ArgNames))) {
			t.Fatalf("Precheck = %+v, Decide = %+v: they must agree on checks 1 to 4", pre, d)
		}
		if !d.Allow {
			return
		}
		if !jcs.IsCanonical(d.Args) || d.Args[0] != '{' {
			t.Fatalf("allowed %q with non-canonical or non-object Args %q", raw, d.Args)
		}
		checkForwarded(t, g, c, d.Args)
		c.Args = d.Args
		again := g.Decide(c)
		if !again.Allow || !bytes.Equal(again.Args, d.Args) || again.ArgsSHA256 != d.ArgsSHA256 {
			t.Fatalf("forwarded %q does not pass again unchanged: %+v", d.Args, again)
		}
	})
}

// checkForwarded checks, with encoding/json, that forwarded arguments hold
// only declared arguments, each a scalar or, where the policy declares an
// array, an array of scalars within its bounds.
func checkForwarded(t *testing.T, g *Gate, c Call, fwd []byte) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(fwd, &m); err != nil {
		t.Fatalf("forwarded %q does not decode: %v", fwd, err)
	}
	specs := g.servers[c.Server].tools[c.Tool].args
	for name, v := range m {
		spec := specs[name]
		if spec == nil {
			t.Fatalf("forwarded undeclared %q in %q", name, fwd)
		}
		items, isArray := v.([]any)
		if isArray != (spec.Type == "array") {
			t.Fatalf("forwarded %q as %T, declared %s, in %q", name, v, spec.Type, fwd)
		}
		if !isArray {
			items = []any{v}
		} else if len(items) < spec.MinItems || len(items) > spec.MaxItems {
			t.Fatalf("forwarded %d items of %q, bounds %d..%d, in %q", len(items), name, spec.MinItems, spec.MaxItems, fwd)
		}
		for _, item := range items {
			switch item.(type) {
			case string, float64, bool:
			default:
				t.Fatalf("forwarded %q with a %T value in %q", name, item, fwd)
			}
		}
	}
}

// checkInvariants holds for every decision.
func checkInvariants(t *testing.T, g *Gate, c Call, d Decision) {
	t.Helper()
	if d.Allow != (d.Rule == "") || d.Allow != (d.Check == 0) || d.Allow != (d.Reason == "") || d.Check < 0 || d.Check > 6 {
		t.Fatalf("inconsistent decision %+v", d)
	}
	if !d.Allow && d.Args != nil {
		t.Fatalf("denied with Args %q", d.Args)
	}
	if d.Allow {
		if _, ok := g.servers[c.Server].tools[c.Tool]; !ok {
			t.Fatalf("allowed tool %q, which is not in the allowlist", c.Tool)
		}
		ack := g.servers[c.Server].tools[c.Tool].tool.Acknowledge
		for _, m := range words.FindAll(c.Tool, g.p.NeverAllow) {
			if !m.Acknowledgeable() || !slices.Contains(ack, m.Word) {
				t.Fatalf("allowed tool %q, which has the write word %q, not acknowledged", c.Tool, m.Word)
			}
		}
	}
	if !utf8.ValidString(d.Reason) || strings.ContainsAny(d.Reason, "\n\r\x00") {
		t.Fatalf("reason %q is not one line of UTF-8", d.Reason)
	}
	if len(d.ArgNames) > maxArgs || !slices.IsSorted(d.ArgNames) {
		t.Fatalf("ArgNames %q not sorted or over the cap", d.ArgNames)
	}
	for _, n := range d.ArgNames {
		if len(n) > maxArgName || !utf8.ValidString(n) {
			t.Fatalf("ArgNames has %q", n)
		}
	}
	if len(d.ArgsSHA256) != 64 {
		t.Fatalf("ArgsSHA256 %q", d.ArgsSHA256)
	}
}

func FuzzArgs(f *testing.F) {
	for _, s := range []string{
		`{}`, `null`, ``, `[]`, `{"a":1}`, `{"a":1,"a":2}`, `{"a":"\ud800"}`, `{"a":"\ud83d\udcb8"}`,
		`{"a":{"b":[1,{"c":2}]}}`, `{"a":1}{}`, `{"a":1e400}`, "{\"a\":\"\xff\"}", `{"\\ud800":1}`,
		`{"a":-0,"b":1.5E-3,"c":true,"d":null}`,
		`{"a":[1,"x",true,null,[2],{"b":3}],"c":[]}`, `{"a":[1,]}`, `{"a":[[[]]]}`, `{"a":["\u0041",-1e-2]}`,
	} {
		f.Add([]byte(s))
	}
	g := New(nil)
	f.Fuzz(func(t *testing.T, raw []byte) {
		a := g.parseArgs(raw)
		if a.rule == "" != a.object && a.rule != "args.too_large" {
			t.Fatalf("rule %q but object %v", a.rule, a.object)
		}
		if a.object && a.canonical == nil && a.rule == "" {
			// Only out-of-range numbers are valid JSON that jcs refuses.
			if !bytes.ContainsAny(raw, "eE") {
				t.Fatalf("object %q has no canonical form", raw)
			}
		}
		if !slices.IsSortedFunc(a.members, func(x, y member) int { return compareStrings(x.name, y.name) }) {
			t.Fatalf("members of %q not sorted", raw)
		}
		for i := 1; i < len(a.members); i++ {
			if a.members[i-1].name == a.members[i].name {
				t.Fatalf("duplicate %q accepted in %q", a.members[i].name, raw)
			}
		}
		if a.rule != "" {
			return
		}
		// Differential: encoding/json (lenient) must read what we accepted
		// as an object with the same number of members, and the same
		// number of items in each array.
		var m map[string]json.RawMessage
		if err := json.Unmarshal(a.raw, &m); err != nil || len(m) != len(a.members) {
			t.Fatalf("accepted %q but encoding/json reads %d members, err %v", raw, len(m), err)
		}
		for _, mb := range a.members {
			checkItems(t, raw, mb, m[mb.name])
		}
	})
}

// checkItems checks the items parseArgs read for the member mb against
// encoding/json's reading of its value v.
func checkItems(t *testing.T, raw []byte, mb member, v json.RawMessage) {
	t.Helper()
	var items []json.RawMessage // stays nil for null
	if err := json.Unmarshal(v, &items); (err == nil && items != nil) != (mb.kind == '[') || len(items) != len(mb.items) {
		t.Fatalf("member %q of %q: kind %q with %d items, encoding/json reads %d items (err %v)", mb.name, raw, mb.kind, len(mb.items), len(items), err)
	}
	for i, it := range mb.items {
		if it.index != i || it.name != mb.name || it.items != nil || it.kind != jsontext.Value(items[i]).Kind() {
			t.Fatalf("item %d of %q in %q read as %+v, encoding/json reads %s", i, mb.name, raw, it, items[i])
		}
	}
}
