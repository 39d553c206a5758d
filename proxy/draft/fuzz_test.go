package draft

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/bankdoor/bankdoor/proxy/pin"
	"github.com/bankdoor/bankdoor/proxy/policy"
)

// FuzzDraft is a differential test of drafts against a JSON Schema
// 2020-12 validator (google/jsonschema-go, which the MCP SDK uses): for an
// input schema and an argument object made from the fuzz bytes, the draft
// loads and lints clean, and if its gate allows the call, the validator
// accepts the arguments the gate forwards. Schemas the validator cannot
// compile (patterns RE2 refuses, for one) are not compared.
func FuzzDraft(f *testing.F) {
	for _, seed := range []string{"", "\x01\x00\x01\x02\x03", "\x04\x02\x01\x00\x05\x06\x01\x01\x01\x02", "\x03\x00\x00\x03\x01\x02\x05\x04\x03\x02\x01"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g := &gen{b: data, types: map[string]string{}}
		schema := g.schema()
		raw := `{"name":"get_x","inputSchema":` + schema + `}`
		name, sum, err := pin.Hash([]byte(raw))
		def, errDef := pin.HashDefinition([]byte(raw))
		if err != nil || errDef != nil {
			t.Skip() // a duplicate keyword: pin.Fetch would not list the tool
		}
		tool := pin.Tool{Name: name, Raw: []byte(raw), SHA256: sum, Definition: def}
		args := g.args()
		out, err := Write([]pin.Tool{tool}, Options{Server: "bank", ID: "bank-readonly"})
		if err != nil {
			t.Fatalf("schema %s: %v\n%s", schema, err, out)
		}
		p, err := policy.Parse("draft.yaml", out)
		if err != nil {
			t.Fatalf("schema %s: the draft does not load: %v", schema, err)
		}
		d := call(p, []pin.Tool{tool}, "get_x", args)
		if !d.Allow {
			return
		}
		var s jsonschema.Schema
		if json.Unmarshal([]byte(schema), &s) != nil {
			return
		}
		rs, err := s.Resolve(nil)
		if err != nil {
			return
		}
		var inst any
		if err := json.Unmarshal(d.Args, &inst); err != nil {
			t.Fatalf("the gate forwards %s, which is not JSON: %v", d.Args, err)
		}
		if err := rs.Validate(inst); err != nil {
			t.Errorf("schema %s\nthe draft allows %s, which the schema forbids: %v\n%s", schema, d.Args, err, out)
		}
	})
}

// gen makes schemas and values from fuzz bytes; past their end, every
// choice is the first. types holds each property's type, so that most
// values are of it.
type gen struct {
	b     []byte
	types map[string]string
}

func (g *gen) n(k int) int {
	if len(g.b) == 0 {
		return 0
	}
	c := int(g.b[0]) % k
	g.b = g.b[1:]
	return c
}

func (g *gen) pick(xs ...string) string { return xs[g.n(len(xs))] }

// some joins up to max picks from xs.
func (g *gen) some(max int, xs ...string) string {
	var b strings.Builder
	for range g.n(max + 1) {
		b.WriteString(g.pick(xs...))
	}
	return b.String()
}

// props are the properties' names; p2 is not a name a policy accepts.
var props = []string{"p0", "p1", "p 2"}

// schema returns an input schema.
func (g *gen) schema() string {
	var members []string
	var ps []string
	for _, name := range props[:g.n(len(props)+1)] {
		typ, schema := g.property(true)
		g.types[name] = typ
		ps = append(ps, fmt.Sprintf("%q:%s", name, schema))
	}
	members = append(members, `"type":"object"`, `"properties":{`+strings.Join(ps, ",")+`}`)
	var required []string
	for range g.n(3) {
		required = append(required, quote(g.pick(append(props, "q")...)))
	}
	if required != nil {
		members = append(members, `"required":[`+strings.Join(required, ",")+`]`)
	}
	if g.n(3) == 0 {
		members = append(members, g.pick(`"maxLength":3`, `"minProperties":1`, `"maxProperties":0`, `"not":{"required":["p0"]}`,
			`"allOf":[{"properties":{"p0":{"maxLength":1}}}]`, `"anyOf":[{"required":["p1"]}]`, `"oneOf":[{"required":["p0"]},{"required":["p1"]}]`,
			`"if":{"required":["p0"]},"then":{"required":["p1"]}`, `"dependentRequired":{"p0":["p1"]}`, `"additionalProperties":false`,
			`"propertyNames":{"maxLength":1}`, `"patternProperties":{"0":{"type":"boolean"}}`, `"$schema":"https://json-schema.org/draft/2020-12/schema"`,
			`"unevaluatedProperties":false`, `"description":"d"`, `"type":"string"`))
	}
	return "{" + strings.Join(members, ",") + "}"
}

// property returns a property's type and schema; top is false for an
// array's items.
func (g *gen) property(top bool) (string, string) {
	typ := g.pick("string", "integer", "number", "boolean", "array", "object", "null", "list", "none")
	if !top && typ == "array" {
		typ = "string"
	}
	var kw []string
	switch typ {
	case "none":
	case "list":
		kw = append(kw, `"type":["string","null"]`)
	default:
		kw = append(kw, fmt.Sprintf("%q:%q", "type", typ))
	}
	for range g.n(4) {
		switch typ {
		case "string":
			kw = append(kw, g.pick(
				fmt.Sprintf(`"pattern":%s`, quote(g.pattern())),
				fmt.Sprintf(`"minLength":%d`, g.n(4)), fmt.Sprintf(`"maxLength":%d`, g.n(6)),
				fmt.Sprintf(`"enum":[%s,%s]`, quote(g.str()), quote(g.str())),
				`"format":"date"`, `"format":"email"`, fmt.Sprintf(`"const":%s`, quote(g.str()))))
		case "integer", "number":
			kw = append(kw, fmt.Sprintf(`%q:%s`, g.pick("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"), g.num()))
			if g.n(4) == 0 {
				kw = append(kw, fmt.Sprintf(`"enum":[%s,%s]`, g.num(), g.num()))
			}
		case "boolean":
			kw = append(kw, g.pick(`"enum":[true]`, `"const":false`))
		case "array":
			itemType, items := g.property(false)
			g.types["items"] = itemType
			kw = append(kw, g.pick(`"items":`+items, fmt.Sprintf(`"minItems":%d`, g.n(3)), fmt.Sprintf(`"maxItems":%d`, g.n(3)), `"uniqueItems":true`))
		}
	}
	return typ, "{" + strings.Join(kw, ",") + "}"
}

// pattern returns an ECMA-262 pattern, often not one translate takes.
func (g *gen) pattern() string {
	return g.some(6, "a", "b", ".", `\d`, `\D`, `\s`, `\S`, `\w`, `\W`, "[a-c]", "[^a]", `[^\s]`, `[\s\S]`, "^", "$", "(", ")", "|",
		"*", "+", "?", "{2}", "{1,2}", `\.`, "é", `\u2028`, `\r`, `\n`, "(?:", `\b`, `[\d-]`, "-", "_", `\x41`, "😀", `\p{L}`, "[^\n]")
}

// str returns a string of characters where the readings of patterns differ.
func (g *gen) str() string {
	return g.some(5, "a", "b", "c", "_", "-", "0", "9", "é", " ", "\t", "\n", "\r", "\v", "\u00a0", "\u2028", "\u2029", "😀", "٣",
		"\u3000", "\ufeff", "A", ".", "2026-01-02")
}

func (g *gen) num() string {
	return g.pick("0", "1", "-1", "2", "3", "0.5", "2.5", "1e2", "1.0", "9007199254740992", "9007199254740993", "1e300", "-1e300", "-0")
}

// args returns an argument object.
func (g *gen) args() string {
	var ms []string
	for _, name := range append(props, "q") {
		typ, declared := g.types[name]
		if g.n(3) == 0 || !declared && g.n(4) != 0 || name == "p 2" && g.n(4) != 0 {
			continue // mostly arguments a policy may declare
		}
		if g.n(5) == 0 {
			typ = ""
		}
		ms = append(ms, fmt.Sprintf("%s:%s", quote(name), g.value(typ)))
	}
	return "{" + strings.Join(ms, ",") + "}"
}

// value returns a value, mostly of type typ.
func (g *gen) value(typ string) string {
	switch typ {
	case "string":
		return quote(g.str())
	case "integer":
		return g.pick("0", "1", "-1", "2", "3", "100", "9007199254740992", "-9007199254740991")
	case "number":
		return g.num()
	case "boolean":
		return g.pick("true", "false")
	case "array":
		var items []string
		for range g.n(4) {
			items = append(items, g.value(g.types["items"]))
		}
		return "[" + strings.Join(items, ",") + "]"
	}
	return g.pick("null", "{}", `"a"`, "1", "2.5", "true", `["a"]`)
}

// quote writes s as a JSON string.
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
