package draft

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bankdoor/bankdoor/proxy/gate"
	"github.com/bankdoor/bankdoor/proxy/pin"
	"github.com/bankdoor/bankdoor/proxy/policy"
)

// drafted writes the draft of the tool definitions raws, which must load
// as a policy and lint clean, and returns it with the gate it makes.
func drafted(t *testing.T, raws ...string) (string, *policy.Policy, []pin.Tool) {
	t.Helper()
	var tools []pin.Tool
	for _, raw := range raws {
		tools = append(tools, listed(t, raw))
	}
	out, err := Write(tools, Options{Server: "bank", ID: "bank-readonly", Command: []string{"bank-server"}})
	if err != nil {
		t.Fatalf("Write: %v\n%s", err, out)
	}
	p, err := policy.Parse("draft.yaml", out)
	if err != nil {
		t.Fatalf("the draft does not load: %v\n%s", err, out)
	}
	for _, pr := range policy.Lint(p) {
		if !pr.Info && pr.Rule != "server.no_tools" {
			t.Errorf("lint: %s\n%s", pr, out)
		}
	}
	return string(out), p, tools
}

// call decides a call of tool with args under p, as the proxy does with
// the live listing tools.
func call(p *policy.Policy, tools []pin.Tool, tool, args string) gate.Decision {
	live, liveDef := map[string]string{}, map[string]string{}
	for _, t := range tools {
		live[t.Name], liveDef[t.Name] = t.SHA256, t.Definition
	}
	return gate.New(p).Decide(gate.Call{Server: "bank", Tool: tool, Args: []byte(args), Live: live, LiveDefinition: liveDef})
}

// TestTopLevelNotProposed: a tool whose input schema constrains its
// arguments at the top level in a way a policy cannot say is not proposed,
// and the call the schema forbids is denied. The control (the same
// property without the top-level keyword) is allowed, so the fixture call
// really does pass a draft that leaves the keyword out.
func TestTopLevelNotProposed(t *testing.T) {
	t.Parallel()
	const props = `"properties":{"account_id":{"type":"string","maxLength":40}}`
	const attack = `{"account_id":"../../../etc/passwd"}`
	control := `{"name":"get_statement","inputSchema":{"type":"object",` + props + `}}`
	_, p, tools := drafted(t, control)
	if d := call(p, tools, "get_statement", attack); !d.Allow {
		t.Fatalf("control: the draft without a top-level keyword denies %s: %s %s", attack, d.Rule, d.Reason)
	}
	for _, kw := range []string{
		`"maxLength":3`,
		`"allOf":[{"properties":{"account_id":{"maxLength":3}}}]`,
		`"anyOf":[{"properties":{"account_id":{"pattern":"^acc_"}}}]`,
		`"oneOf":[{"properties":{"account_id":{"pattern":"^acc_"}}}]`,
		`"not":{"required":["account_id"]}`,
		`"if":{"required":["account_id"]},"then":{"properties":{"account_id":{"maxLength":3}}}`,
		`"dependentRequired":{"account_id":["since"]}`,
		`"maxProperties":0`,
		`"minProperties":2`,
		`"patternProperties":{"^acc":{"maxLength":3}}`,
		`"propertyNames":{"maxLength":3}`,
		`"unevaluatedProperties":false`,
		`"$ref":"#/$defs/x","$defs":{"x":{"maxProperties":0}}`,
		`"const":{}`,
	} {
		raw := `{"name":"get_statement","inputSchema":{"type":"object",` + props + `,` + kw + `}}`
		out, p, tools := drafted(t, raw)
		if p.Servers["bank"].Tools["get_statement"] != nil {
			t.Errorf("%s: get_statement is proposed:\n%s", kw, out)
		}
		if !strings.Contains(out, "      # get_statement: not proposed:\n      # - its inputSchema has ") {
			t.Errorf("%s: the draft does not say why get_statement is not proposed:\n%s", kw, out)
		}
		if d := call(p, tools, "get_statement", attack); d.Allow {
			t.Errorf("%s: the draft allows %s", kw, attack)
		}
	}
}

// TestRequiredLeftOut: a tool whose schema requires an argument the draft
// leaves out, or one its properties do not define, is not proposed: the
// call without it would pass the gate and break the schema. A draft
// whose arguments are all left out holds args: {}, not a null args:.
func TestRequiredLeftOut(t *testing.T) {
	t.Parallel()
	for _, schema := range []string{
		`{"type":"object","properties":{"filter":{"type":"object"}},"required":["filter"]}`,
		`{"type":"object","properties":{"q":{"type":"string"}},"required":["account_id"]}`,
		`{"type":"object","properties":{"q":{"type":"string","pattern":"(?=x)"}},"required":["q"]}`,
		`{"type":"object","properties":{"q w":{"type":"string"}},"required":["q w"]}`,
		`{"type":"string"}`,
		`{"properties":{}}`,
	} {
		raw := `{"name":"get_report","inputSchema":` + schema + `}`
		out, p, tools := drafted(t, raw)
		if p.Servers["bank"].Tools["get_report"] != nil {
			t.Errorf("%s: get_report is proposed:\n%s", schema, out)
		}
		if d := call(p, tools, "get_report", `{}`); d.Allow {
			t.Errorf("%s: the draft allows {}, which the schema forbids", schema)
		}
	}
	out, p, _ := drafted(t, `{"name":"get_report","inputSchema":{"type":"object","properties":{"filter":{"type":"object"}}}}`)
	if tl := p.Servers["bank"].Tools["get_report"]; tl == nil || len(tl.Args) != 0 || !strings.Contains(out, "        args: {}\n          # filter: left out: ") {
		t.Errorf("a tool whose only argument is left out is not drafted with args: {}:\n%s", out)
	}
}

// TestNamesNotProposed: a tool is proposed only when its name's first
// token is a verb that reads; the names from issue 27 whose calls reached
// their servers with the old draft are not, and say why.
func TestNamesNotProposed(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"wiretransfer", "sendmoney", "instantpayout", "make_api_request", "revert-timesheet",
		"unsplit_transaction", "attach_file_to_transaction", "check_watches", "query", "getbalance", "2get_balance", "balance_get"} {
		out, p, _ := drafted(t, fmt.Sprintf(`{"name":%q,"inputSchema":{"type":"object"}}`, name))
		if p.Servers["bank"].Tools[name] != nil {
			t.Errorf("%s is proposed:\n%s", name, out)
		}
		if !strings.Contains(out, "      # "+name+": not proposed:\n      # - its name starts with ") {
			t.Errorf("the draft does not say why %s is not proposed:\n%s", name, out)
		}
		// Uncommented, the entry loads: the reviewer's decision is one edit.
		un := strings.Replace(out, "      # "+yamlKey(name)+":\n", "      "+yamlKey(name)+":\n", 1)
		un = strings.ReplaceAll(un, "      #   ", "        ")
		un = strings.Replace(un, "    tools: {} #", "    tools: #", 1)
		if _, err := policy.Parse("uncommented.yaml", []byte(un)); err != nil {
			t.Errorf("%s uncommented does not load: %v\n%s", name, err, un)
		}
	}
	for _, name := range []string{"get_balance", "listAccounts", "search-customers", "retrieve_invoice", "describe_account", "count_items", "fetch_rates", "read_statement", "find_payee", "lookup_iban", "show_limits", "view_card"} {
		out, p, _ := drafted(t, fmt.Sprintf(`{"name":%q,"inputSchema":{"type":"object"}}`, name))
		if p.Servers["bank"].Tools[name] == nil {
			t.Errorf("%s is not proposed:\n%s", name, out)
		}
	}
}

// TestAnnotationsBelievedWhenTheySayWrite: annotations that say a tool
// writes keep it out of the draft; readOnlyHint true never lets in a name
// that does not read as a read.
func TestAnnotationsBelievedWhenTheySayWrite(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, annotations string
		proposed          bool
	}{
		{"get_balance", `{"destructiveHint":true}`, false},
		{"get_balance", `{"readOnlyHint":false}`, false},
		{"get_balance", `{"readOnlyHint":true,"destructiveHint":true}`, false},
		{"get_balance", `{"idempotentHint":true}`, false},
		{"get_balance", `{"destructiveHint":false}`, false},
		{"get_balance", `{"readOnlyHint":"yes"}`, false},
		{"get_balance", `[]`, false},
		{"sendmoney", `{"readOnlyHint":true}`, false},
		{"make_api_request", `{"readOnlyHint":true,"destructiveHint":false}`, false},
		{"get_balance", `{"readOnlyHint":true}`, true},
		{"get_balance", `{"readOnlyHint":true,"idempotentHint":true,"openWorldHint":false}`, true},
		{"get_balance", `{"title":"Balance"}`, true},
	}
	for _, tt := range tests {
		raw := fmt.Sprintf(`{"name":%q,"inputSchema":{"type":"object"},"annotations":%s}`, tt.name, tt.annotations)
		out, p, tools := drafted(t, raw)
		if got := p.Servers["bank"].Tools[tt.name] != nil; got != tt.proposed {
			t.Errorf("%s with annotations %s: proposed %v, want %v:\n%s", tt.name, tt.annotations, got, tt.proposed, out)
		}
		if d := call(p, tools, tt.name, `{}`); d.Allow != tt.proposed {
			t.Errorf("%s with annotations %s: the gate allows a call: %v", tt.name, tt.annotations, d.Allow)
		}
	}
}

// TestDraftLoads: drafts of schemas that once made a draft that did not
// load or lint, or that said another value than the schema, now load, lint
// clean and say the schema's values.
func TestDraftLoads(t *testing.T) {
	t.Parallel()
	tests := []struct{ schema, want string }{
		{`{"q":{"type":"string"}}`, `q: { type: string, max_length: 256 }  # the schema sets no maxLength`},
		{`{"q":{"type":"string","minLength":300}}`, `q: { type: string, min_length: 300, max_length: 300 }`},
		{`{"q":{"type":"string","enum":["a","a","b"]}}`, `q: { type: string, enum: ["a", "b"] }`},
		{`{"q":{"type":"string","enum":["abc","ab"],"maxLength":2}}`, `q: { type: string, enum: ["ab"] }`},
		{`{"q":{"type":"string","enum":["a\u0085b","c\u2028"]}}`, `q: { type: string, enum: ["a\u0085b", "c\u2028"] }`},
		{`{"m":{"type":"integer","minimum":1,"exclusiveMinimum":3,"maximum":1e300}}`, `m: { type: integer, min: 4 }`},
		{`{"m":{"type":"integer","enum":[1.0,1e1,2.5]}}`, `m: { type: integer, enum: [1, 10] }`},
		{`{"m":{"type":"number","maximum":1e21}}`, `m: { type: number, max: 1e+21 }`},
		{`{"m":{"type":"number","enum":[-0,0,1e21,1000000000000000000000]}}`, `m: { type: number, enum: [0, 1e+21] }`},
	}
	for _, tt := range tests {
		raw := `{"name":"get_x","inputSchema":{"type":"object","properties":` + tt.schema + `}}`
		out, _, _ := drafted(t, raw)
		if !strings.Contains(out, "          "+tt.want) {
			t.Errorf("%s: the draft lacks %q:\n%s", tt.schema, tt.want, out)
		}
	}
	// A server with only writes: tools: {} (YAML reads a tools: with only
	// comments under it as null).
	out, p, _ := drafted(t, `{"name":"transfer_funds","inputSchema":{"type":"object"}}`)
	if len(p.Servers["bank"].Tools) != 0 || !strings.Contains(out, "    tools: {} # no tool is proposed") {
		t.Errorf("a draft with no tool proposed:\n%s", out)
	}
}

// TestCommentsStayComments: a tool name the gate denies may hold any
// character; the draft writes it on one comment line (yaml.v3 also breaks
// lines at U+0085, U+2028 and U+2029), so a server cannot write policy
// lines into the draft.
func TestCommentsStayComments(t *testing.T) {
	t.Parallel()
	inject := "      sendmoney:\n        schema_sha256: " + strings.Repeat("0", 64) + "\n        args: {}"
	for _, sep := range []string{"\u2028", "\u2029", "\u0085", "\r", "\n"} {
		name := "bad" + strings.ReplaceAll("\n"+inject, "\n", sep)
		raw := fmt.Sprintf(`{"name":%q,"inputSchema":{"type":"object"}}`, name)
		out, p, _ := drafted(t, raw)
		if len(p.Servers["bank"].Tools) != 0 {
			t.Errorf("%U: the tool name wrote an entry into the draft:\n%s", []rune(sep)[0], out)
		}
		if strings.ContainsAny(out, "\u2028\u2029\u0085\r") {
			t.Errorf("%U: the draft holds a line break other than \\n:\n%q", []rune(sep)[0], out)
		}
	}
}

// TestNoCredentialInHeader: the header names the server's command line
// with what looks like a credential written <redacted>, and says so.
func TestNoCredentialInHeader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		command []string
		url     string
		secrets []string
		want    string
	}{
		{[]string{"npx", "-y", "@stripe/mcp", "--tools=all", "--api-key=sk_live_51Habc"}, "", []string{"sk_live_51Habc"},
			"`npx -y @stripe/mcp --tools=all --api-key=<redacted>`"},
		{[]string{"bank-mcp", "--token", "hunter2", "--port", "8080"}, "", []string{"hunter2"}, "`bank-mcp --token <redacted> --port 8080`"},
		{[]string{"env", "BANK_TOKEN=t0ps3cret", "HOME=/tmp", "bank-mcp"}, "", []string{"t0ps3cret", "/tmp"},
			"`env BANK_TOKEN=<redacted> HOME=<redacted> bank-mcp`"},
		{[]string{"bank-mcp", "--client-secret", "x", "--password=y", "-k", "rk_live_abc"}, "", []string{" x ", "=y", "rk_live_abc"},
			"`bank-mcp --client-secret <redacted> --password=<redacted> -k <redacted>`"},
		{[]string{"bank-mcp", "A1b2C3d4E5f6G7h8I9j0K"}, "", []string{"A1b2C3d4E5f6G7h8I9j0K"}, "`bank-mcp <redacted>`"},
		{[]string{"bank-mcp", "--upstream=https://bob:pw@bank.example/v1?key=abc#frag"}, "", []string{"bob", "pw", "abc", "frag"},
			"`bank-mcp --upstream=https://<redacted>@bank.example/v1?<redacted>#<redacted>`"},
		{nil, "https://bank.example/mcp?access_token=abc", []string{"abc"}, "https://bank.example/mcp?<redacted>"},
	}
	for _, tt := range tests {
		out, err := Write(nil, Options{Server: "bank", ID: "bank-readonly", Command: tt.command, URL: tt.url})
		if err != nil {
			t.Fatal(err)
		}
		header, _, _ := strings.Cut(string(out), "version: 1")
		for _, s := range tt.secrets {
			if strings.Contains(header, s) {
				t.Errorf("%q: the header holds %q:\n%s", tt.command, s, header)
			}
		}
		if !strings.Contains(header, "the MCP server "+tt.want+", written") || !strings.Contains(header, "look like credentials are written <redacted>") {
			t.Errorf("%q: the header does not name the source as %s and say what it left out:\n%s", tt.command, tt.want, header)
		}
	}
	out, _ := Write(nil, Options{Server: "bank", ID: "bank-readonly", Command: []string{"bank-server", "--http", "127.0.0.1:8080"}})
	if !strings.Contains(string(out), "`bank-server --http 127.0.0.1:8080`") || strings.Contains(string(out), "<redacted>") {
		t.Errorf("a command line without credentials is not copied as it is:\n%s", out)
	}
}
