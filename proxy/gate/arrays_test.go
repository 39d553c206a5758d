package gate

import (
	"fmt"
	"strings"
	"testing"
)

// byIDs is the tool of testPolicy whose arguments are arrays.
const byIDs = "get_transactions_by_ids"

func TestArrayArgs(t *testing.T) {
	ids := func(n int) string {
		items := make([]string, n)
		for i := range items {
			items[i] = fmt.Sprintf(`"tx_%d"`, i)
		}
		return `{"ids":[` + strings.Join(items, ",") + `]}`
	}
	tests := []struct {
		args string
		want want
	}{
		// Allowed.
		{`{"ids":["tx_1"]}`, want{}},
		{`{"ids":[]}`, want{}}, // no min_items
		{ids(3), want{}},
		{`{"ids":["tx_1","tx_1"]}`, want{}}, // duplicate items are allowed
		{`{"ids":[ "tx_1" , "tx_\u0032" ],"amounts":[0.5,1e3],"years":[2024,2025,2024],"flags":[true,false],"codes":["EUR","日本円"]}`, want{}},
		{`{"ids":["tx_1"],"amounts":[1.5E2]}`, want{}},
		// args.nested: an object for an array, arrays and objects as items.
		{`{"ids":{"0":"tx_1"}}`, want{6, "args.nested", []string{`value of "ids" is an object; want array`}}},
		{`{"ids":[["tx_1"]]}`, want{6, "args.nested", []string{`item 0 of "ids" is an array; the items of an array must be strings, numbers or booleans`}}},
		{`{"ids":["tx_1",{"id":"tx_2"}]}`, want{6, "args.nested", []string{`item 1 of "ids" is an object`}}},
		{`{"ids":["tx_1",[]]}`, want{6, "args.nested", []string{`item 1 of "ids"`}}},
		{`{"ids":["tx_1"],"codes":[{}]}`, want{6, "args.nested", []string{`item 0 of "codes"`}}},
		// An array where a scalar goes is nested, as before arrays.
		{`{"account_id":["acc_1"]}`, want{6, "args.nested", nil}},
		// args.unknown: an array for an argument not declared.
		{`{"ids":["tx_1"],"more":"x"}`, want{6, "args.unknown", []string{`"more"`}}},
		{`{"ids":["tx_1"],"more":[1]}`, want{6, "args.nested", []string{`value of "more" is an array; argument values must be`}}},
		// args.type: the value, and each item.
		{`{"ids":"tx_1"}`, want{6, "args.type", []string{`value of "ids" is a string; want array`}}},
		{`{"ids":null}`, want{6, "args.type", []string{`value of "ids" is null; want array`}}},
		{`{"ids":3}`, want{6, "args.type", []string{`is a number; want array`}}},
		{`{"ids":["tx_1",null]}`, want{6, "args.type", []string{`item 1 of "ids" is null; want string`}}},
		{`{"ids":["tx_1",7]}`, want{6, "args.type", []string{`item 1 of "ids" is a number; want string`}}},
		{`{"ids":["tx_1"],"years":[2024,2025.0]}`, want{6, "args.type", []string{`item 1 of "years" is a number literal with a fraction or exponent; want integer`}}},
		{`{"ids":["tx_1"],"years":[9007199254740993]}`, want{6, "args.type", []string{"item 0 of \"years\"", "2^53"}}},
		{`{"ids":["tx_1"],"amounts":[1e400]}`, want{6, "args.type", []string{"item 0 of \"amounts\"", "float64 range"}}},
		{`{"ids":["tx_1"],"flags":[true,"false"]}`, want{6, "args.type", []string{`item 1 of "flags" is a string; want boolean`}}},
		{`{"ids":["tx_1"],"flags":[1]}`, want{6, "args.type", nil}},
		// args.min_items / args.max_items
		{`{"ids":["tx_1"],"amounts":[]}`, want{6, "args.min_items", []string{`value of "amounts" has 0 items; min_items is 1`}}},
		{ids(4), want{6, "args.max_items", []string{`value of "ids" has 4 items; max_items is 3`}}},
		{ids(10000), want{6, "args.too_large", []string{"65536"}}},
		{`{"ids":[` + strings.Repeat(`"",`, 3000) + `""]}`, want{6, "args.max_items", []string{"3001 items"}}},
		{`{"ids":[` + strings.Repeat(`1,`, 3000) + `""]}`, want{6, "args.type", []string{"item 0 of"}}}, // type before count
		// args.pattern, lengths, range, enum: each item, naming its index.
		{`{"ids":["tx_1","tx_12345"]}`, want{6, "args.pattern", []string{`item 1 of "ids" does not match pattern "tx_[0-9]{1,4}"`}}},
		{`{"ids":["tx_1","tx_1\n"]}`, want{6, "args.pattern", []string{`item 1 of "ids"`}}},
		{`{"ids":["TX_1"]}`, want{6, "args.pattern", []string{`item 0 of "ids"`}}},
		{`{"ids":["tx_1"],"codes":["EUR","X"]}`, want{6, "args.min_length", []string{`item 1 of "codes" is 1 code points; min_length is 2`}}},
		{`{"ids":["tx_1"],"amounts":[0.4]}`, want{6, "args.min", []string{`item 0 of "amounts" is below min 0.5`}}},
		{`{"ids":["tx_1"],"amounts":[1,1000.5]}`, want{6, "args.max", []string{`item 1 of "amounts" is above max 1000`}}},
		{`{"ids":["tx_1"],"years":[2024,2026]}`, want{6, "args.enum", []string{`item 1 of "years" is not one of the 2 values of its enum`}}},
		{`{"ids":["tx_1"],"years":[2024,1999]}`, want{6, "args.min", nil}}, // min before enum
		{`{"ids":["tx_1"],"codes":["usd"]}`, want{6, "args.enum", []string{`item 0 of "codes"`}}},
		// args.required
		{`{"codes":["EUR"]}`, want{6, "args.required", []string{`required argument "ids"`}}},
		// The first four rules see arrays as any value.
		{`{"ids":["tx_1","tx_\ud800"]}`, want{6, "args.encoding", nil}},
		{"{\"ids\":[\"tx_\xff\"]}", want{6, "args.encoding", nil}},
		{`{"ids":["tx_1",{"a":1,"a":2}]}`, want{6, "args.duplicate", []string{`argument "ids" has a member name twice inside its value`}}},
		{`{"ids":["tx_1",]}`, want{6, "args.not_object", nil}},
		{`{"ids":["tx_1"}`, want{6, "args.not_object", nil}},
		{`{"ids":["tx_1"]]}`, want{6, "args.not_object", nil}},
		{`{"ids":[01]}`, want{6, "args.not_object", nil}},
	}
	g := testGate(t)
	for _, tt := range tests {
		label := tt.args
		if len(label) > 100 {
			label = label[:100]
		}
		checkDecision(t, label, g.Decide(call(byIDs, tt.args)), tt.want)
	}
}

// TestArrayRuleOrder: within check 6 an array is one argument; each rule
// runs over every argument, and over an array's items in order, before the
// next rule.
func TestArrayRuleOrder(t *testing.T) {
	tests := []struct {
		args string
		want string
	}{
		{`{"ids":["tx_1",7,["x"]]}`, `args.nested`},                     // a nested item beats an earlier type error
		{`{"amounts":[],"ids":["TX"],"zz":1}`, `args.unknown`},          // unknown beats count and pattern
		{`{"amounts":[0,"x"],"ids":["tx_1"]}`, `item 1 of "amounts"`},   // type before min
		{`{"amounts":[5,5,5],"ids":["TX"]}`, `args.max_items`},          // count before pattern
		{`{"codes":["E"],"ids":["TX"]}`, `args.pattern`},                // pattern before min_length
		{`{"ids":["tx_1","TX","tx_99999"]}`, `item 1 of "ids"`},         // the first failing item is named
		{`{"amounts":[2000],"ids":["tx_1"],"years":[1999]}`, `"years"`}, // min over every argument before max
		{`{"amounts":[1],"years":[2024]}`, `args.required`},             // required is last
		{`{"ids":["tx_1"],"codes":["GBP"],"flags":[true,true,true]}`, `args.max_items`},
	}
	g := testGate(t)
	for _, tt := range tests {
		d := g.Decide(call(byIDs, tt.args))
		if !strings.Contains(d.Rule+" "+d.Reason, tt.want) {
			t.Errorf("Decide(%s) = %s (%s); want %s", tt.args, d.Rule, d.Reason, tt.want)
		}
	}
}

// TestArrayForwarded: what is forwarded is what was checked, in RFC 8785
// form: items in their order, duplicates kept, numbers and strings
// canonical.
func TestArrayForwarded(t *testing.T) {
	for _, tt := range []struct{ in, out string }{
		{`{"ids":[ "tx_2" , "tx_\u0031", "tx_2" ]}`, `{"ids":["tx_2","tx_1","tx_2"]}`},
		{`{"ids":[],"amounts":[1.50E+2, 0.5]}`, `{"amounts":[150,0.5],"ids":[]}`},
		{`{"codes":["\u65e5\u672c\u5186"],"ids":["tx_9"],"flags":[false]}`, `{"codes":["日本円"],"flags":[false],"ids":["tx_9"]}`},
	} {
		d := testGate(t).Decide(call(byIDs, tt.in))
		if !d.Allow || string(d.Args) != tt.out {
			t.Errorf("Decide(%s) = %v %s %s, forwards %s; want %s", tt.in, d.Allow, d.Rule, d.Reason, d.Args, tt.out)
		}
	}
}

// TestArrayReasonsHideValues: a reason about an item names its index,
// never its value.
func TestArrayReasonsHideValues(t *testing.T) {
	const secret = "SECRETVALUE"
	g := testGate(t)
	for _, args := range []string{
		`{"ids":["tx_1","` + secret + `"]}`,
		`{"ids":["tx_1"],"codes":["` + secret + `"]}`,
		`{"ids":["tx_1"],"years":[987654]}`,
		`{"ids":["tx_1"],"amounts":[987654]}`,
		`{"ids":[{"` + secret + `":1}]}`,
		`{"ids":[["` + secret + `"]]}`,
		`{"ids":[1,"` + secret + `"]}`,
		`{"ids":["tx_1","tx_2","tx_3","` + secret + `"]}`,
	} {
		d := g.Decide(call(byIDs, args))
		if d.Allow {
			t.Fatalf("%s allowed", args)
		}
		if strings.Contains(d.Reason, secret) || strings.Contains(d.Reason, "987654") {
			t.Errorf("%s: reason %q shows the value", args, d.Reason)
		}
	}
}

// TestArraySpecFailsClosed: an array spec built without policy.Parse, with
// no items or no max_items, lets no item through.
func TestArraySpecFailsClosed(t *testing.T) {
	p := mustParse(t, testPolicy)
	a := p.Servers["bank"].Tools[byIDs].Args["ids"]
	a.Items = nil
	d := New(p).Decide(call(byIDs, `{"ids":["tx_1"]}`))
	if d.Rule != "args.type" || !strings.Contains(d.Reason, "cannot be checked") {
		t.Errorf("no items: got %s (%s), want args.type", d.Rule, d.Reason)
	}
	if d := New(p).Decide(call(byIDs, `{"ids":[]}`)); !d.Allow {
		t.Errorf("no items, empty array: got %s (%s); an empty array holds nothing to check", d.Rule, d.Reason)
	}
	p = mustParse(t, testPolicy)
	p.Servers["bank"].Tools[byIDs].Args["ids"].MaxItems = 0
	if d := New(p).Decide(call(byIDs, `{"ids":["tx_1"]}`)); d.Rule != "args.max_items" {
		t.Errorf("max_items 0: got %s (%s), want args.max_items", d.Rule, d.Reason)
	}
}
