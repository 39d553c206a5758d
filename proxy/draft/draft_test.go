package draft

import (
	"regexp"
	"strings"
	"testing"

	"github.com/bankdoor/bankdoor/proxy/gate"
	"github.com/bankdoor/bankdoor/proxy/pin"
	"github.com/bankdoor/bankdoor/proxy/policy"
)

// TestProperty: each schema becomes the spec a policy would write, and
// what a policy cannot express is left out with the reason.
func TestProperty(t *testing.T) {
	t.Parallel()
	tests := []struct {
		schema string
		want   string // the fields joined, or "skip: " and a part of the reason
	}{
		{`{"type":"string"}`, "type: string, max_length: 256"},
		{`{"type":"string","pattern":"^acc_[a-z0-9_]{1,32}$","maxLength":40,"minLength":0}`, `type: string, pattern: "acc_[a-z0-9_]{1,32}", max_length: 40`},
		{`{"type":"string","pattern":"^cus_"}`, `type: string, pattern: "(?s:.*)(?:^cus_)(?s:.*)", max_length: 256`},
		{`{"type":"string","pattern":"^a|b$"}`, `type: string, pattern: "(?s:.*)(?:^a|b$)(?s:.*)", max_length: 256`},
		{`{"type":"string","pattern":"^(?=x)y$"}`, "skip: not RE2"},
		{`{"type":"string","format":"date","description":"d"}`, `type: string, pattern: "\\d{4}-\\d{2}-\\d{2}", max_length: 10`},
		{`{"type":"string","format":"email"}`, "type: string, max_length: 256"},
		{`{"type":"string","enum":["a","b"]}`, `type: string, enum: ["a", "b"]`},
		{`{"type":"string","enum":["a",1]}`, "skip: not a string"},
		{`{"type":"integer","minimum":1,"maximum":100}`, "type: integer, min: 1, max: 100"},
		{`{"type":"integer","exclusiveMinimum":0,"exclusiveMaximum":10.5}`, "type: integer, min: 1, max: 10"},
		{`{"type":"integer","minimum":0.5}`, "type: integer, min: 1"},
		{`{"type":"number","minimum":0.01}`, "type: number, min: 0.01"},
		{`{"type":"number","exclusiveMinimum":0}`, `skip: "exclusiveMinimum" cannot be expressed`},
		{`{"type":"integer","multipleOf":5}`, `skip: "multipleOf"`},
		{`{"type":"boolean","default":false}`, "type: boolean"},
		{`{"type":["string","null"]}`, "skip: a list of types"},
		{`{"anyOf":[{"type":"string"},{"type":"integer"}]}`, "skip: no type"},
		{`{"type":"string","const":"x"}`, `skip: "const"`},
		{`{"type":"object","properties":{}}`, "skip: nested objects"},
		{`{"type":"array","items":{"type":"string","maxLength":30},"maxItems":20,"minItems":1}`, "type: array, items: { type: string, max_length: 30 }, min_items: 1, max_items: 20"},
		{`{"type":"array","items":{"type":"integer"}}`, "type: array, items: { type: integer }, max_items: 100"},
		{`{"type":"array","items":{"type":"string"},"maxItems":5000}`, "type: array, items: { type: string, max_length: 256 }, max_items: 1000"},
		{`{"type":"array","items":{"type":"object"}}`, "skip: an array of"},
		{`{"type":"array","items":{"type":"array","items":{"type":"string"}}}`, "skip: an array of"},
		{`{"type":"array","items":{"type":"string"},"uniqueItems":true}`, `skip: "uniqueItems"`},
		{`{"type":"array"}`, "skip: items schema"},
		{`"string"`, "skip: not an object"},
	}
	for _, tt := range tests {
		a := property("x", []byte(tt.schema))
		got := strings.Join(a.fields, ", ")
		if skip, ok := strings.CutPrefix(tt.want, "skip: "); ok {
			if a.skip == "" || !strings.Contains(a.skip, skip) || a.fields != nil {
				t.Errorf("%s: fields %q, skip %q; want it left out, saying %q", tt.schema, got, a.skip, skip)
			}
			continue
		}
		if a.skip != "" || got != tt.want {
			t.Errorf("%s:\n got %q (skip %q)\nwant %q", tt.schema, got, a.skip, tt.want)
		}
	}
}

// TestPatternSameStrings: a derived pattern, matched against the whole
// string as the gate does, accepts exactly the strings the schema's
// pattern finds a match in.
func TestPatternSameStrings(t *testing.T) {
	t.Parallel()
	inputs := []string{"", "cus_", "cus_123", "xcus_1", "acc_checking", "acc_", "ACC_x", "a", "b", "ab", "ba", "x\nacc_1", "2026-12-03", "2026-12-3", "12026-12-03"}
	for _, p := range []string{`^cus_`, `cus_\d+$`, `^acc_[a-z0-9_]{1,32}$`, `^a|b$`, `a`, `^\d{4}-\d{2}-\d{2}$`, `(^a)|(b$)`, `^$`} {
		f, err := pattern([]byte(`"` + strings.ReplaceAll(p, `\`, `\\`) + `"`))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		derived := strings.TrimSuffix(strings.TrimPrefix(f, `pattern: "`), `"`)
		derived = strings.ReplaceAll(derived, `\\`, `\`)
		search, full := regexp.MustCompile(p), regexp.MustCompile(`^(?:`+derived+`)$`)
		for _, in := range inputs {
			if search.MatchString(in) != full.MatchString(in) {
				t.Errorf("pattern %q, derived %q: %q is found %v but fully matched %v", p, derived, in, search.MatchString(in), full.MatchString(in))
			}
		}
	}
}

// TestWrite: a draft parses as a policy; the read is allowed with its pins
// and listed by the gate; the acknowledgeable read is commented out with
// its acknowledge:, and allowed once uncommented; the writes are
// comments naming their rule.
func TestWrite(t *testing.T) {
	t.Parallel()
	tool := func(raw string) pin.Tool { return listed(t, raw) }
	tools := []pin.Tool{
		tool(`{"name":"get_balance","inputSchema":{"type":"object","properties":{"account":{"type":"string","maxLength":40},"deep":{"type":"object"}},"required":["account"]}}`),
		tool(`{"name":"list_transfers","inputSchema":{"type":"object","properties":{"limit":{"type":"integer","minimum":1,"maximum":50}}}}`),
		tool(`{"name":"transfer_funds","inputSchema":{"type":"object"}}`),
		tool(`{"name":"bank.transfer","inputSchema":{"type":"object"}}`),
	}
	out, err := Write(tools, Options{Server: "bank", ID: "bank-readonly", Command: []string{"test"}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Parse("draft.yaml", out)
	if err != nil {
		t.Fatalf("the draft does not parse: %v\n%s", err, out)
	}
	bt := p.Servers["bank"].Tools
	if len(bt) != 1 || bt["get_balance"] == nil {
		t.Fatalf("the draft allows %d tools; want get_balance only:\n%s", len(bt), out)
	}
	gb := bt["get_balance"]
	if gb.SchemaSHA256 != tools[0].SHA256 || gb.DefinitionSHA256 != tools[0].Definition || len(gb.Args) != 1 || !gb.Args["account"].Required {
		t.Errorf("get_balance: %+v; want its pins and the required account only (deep is an object)", gb)
	}
	if d := gate.New(p).Listable("bank", "get_balance", tools[0].SHA256, tools[0].Definition); d.Rule != "" {
		t.Errorf("the gate does not list get_balance under the draft: %s: %s", d.Rule, d.Reason)
	}
	for _, want := range []string{
		"          # deep: left out: nested objects cannot be expressed",
		"      # list_transfers:\n      #   schema_sha256: " + tools[1].SHA256,
		"      #   acknowledge: [transfers]",
		"      # transfer_funds: denied (name.write_word): ",
		"      # bank.transfer: denied (name.charset): ",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the draft lacks %q:\n%s", want, out)
		}
	}
	// Uncommented, the acknowledged read is allowed.
	un := strings.ReplaceAll(string(out), "      #   ", "        ")
	un = strings.Replace(un, "      # list_transfers:\n", "      list_transfers:\n", 1)
	p, err = policy.Parse("uncommented.yaml", []byte(un))
	if err != nil {
		t.Fatalf("uncommented, the draft does not parse: %v\n%s", err, un)
	}
	if d := gate.New(p).Listable("bank", "list_transfers", tools[1].SHA256, tools[1].Definition); d.Rule != "" {
		t.Errorf("uncommented, list_transfers is not listed: %s: %s", d.Rule, d.Reason)
	}
}

// listed returns the tool definition raw as pin.Fetch would list it.
func listed(t testing.TB, raw string) pin.Tool {
	t.Helper()
	name, sum, err := pin.Hash([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	def, err := pin.HashDefinition([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return pin.Tool{Name: name, Raw: []byte(raw), SHA256: sum, Definition: def}
}
