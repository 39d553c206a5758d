package attacks

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/bankdoor/bankdoor/internal/mcptest"
)

// knownRules are the relay's and the gate's rule ids (packages proxy and
// proxy/gate).
var knownRules = []string{
	"frame.parse", "frame.too_large", "frame.invalid", "method.unknown", "method.not_exposed", "params.invalid",
	"name.length", "name.charset", "server.unknown", "name.write_word", "tool.not_allowed",
	"pin.missing", "pin.unlisted", "pin.mismatch", "pin.unavailable", "response.not_exposed", "response.malformed",
	"args.too_large", "args.encoding", "args.duplicate", "args.not_object", "args.too_many", "args.nested",
	"args.unknown", "args.type", "args.min_items", "args.max_items", "args.pattern", "args.min_length", "args.max_length", "args.min", "args.max",
	"args.enum", "args.required",
}

func TestCatalogue(t *testing.T) {
	all := Catalogue()
	if len(all) < 45 {
		t.Errorf("%d attacks, want at least 45", len(all))
	}
	seen := map[string]bool{}
	for _, a := range all {
		if seen[a.ID] {
			t.Errorf("attack id %s twice", a.ID)
		}
		seen[a.ID] = true
		if !slices.Contains(knownRules, a.Rule) {
			t.Errorf("%s: rule %q is not a rule id of the proxy", a.ID, a.Rule)
		}
		if a.Description == "" {
			t.Errorf("%s: no description", a.ID)
		}
		if !slices.Contains([]string{"", "rugpull", "renamed", "silentchange", "listchange", "pagechange", "memberchange", "urlelicit", "inputrequests", "inputtwice", "inpututf8", "inputsurrogate", "arrays"}, a.Variant) {
			t.Errorf("%s: variant %q", a.ID, a.Variant)
		}
		if a.Raw() && a.Tool != "" || a.Raw() && a.Args != nil {
			t.Errorf("%s: a raw frame with Tool or Args set", a.ID)
		}
		if a.NoReply && (!a.Raw() || bytes.Contains(a.Frame, []byte("$ID"))) {
			t.Errorf("%s: a notification must be a raw frame without an id", a.ID)
		}
		if bytes.IndexByte(a.Frame, '\n') >= 0 {
			t.Errorf("%s: frame has a newline byte", a.ID)
		}
	}
	if got := Variants(all); !slices.Equal(got, []string{"", "renamed", "rugpull", "silentchange", "listchange", "pagechange", "memberchange", "urlelicit", "inputrequests", "inputtwice", "inpututf8", "inputsurrogate", "arrays"}) {
		t.Errorf("Variants = %q", got)
	}
}

// TestCatalogueCoversUnsafe checks that the catalogue keeps its promise to
// send money-moving requests: each variant has some, and the ones the
// brief names are among them.
func TestCatalogueCoversUnsafe(t *testing.T) {
	unsafe := map[string]bool{}
	for _, a := range Catalogue() {
		if a.Unsafe {
			unsafe[a.ID] = true
		}
	}
	for _, id := range []string{"write.transfer", "write.pay_bill", "write.move_money", "pin.rugpull", "args.mass-assignment", "params.duplicate-name",
		"pin.after-answer-silent", "pin.after-answer-notified", "pin.title", "arrays.object-item", "arrays.duplicate-in-item"} {
		if !unsafe[id] {
			t.Errorf("%s is not marked Unsafe", id)
		}
	}
}

// TestRawFramesParse checks that the frames are what they say: those
// meant to be well-formed JSON are, so that the proxy's answer exercises
// the intended rule and not a parse error.
func TestRawFramesParse(t *testing.T) {
	malformed := map[string]bool{"frame.not-json": true, "frame.trailing-garbage": true, "leak.parse-error-after-secret": true,
		"frame.nbsp": true, "frame.line-separator": true, "frame.ideographic-space": true, "frame.bom": true}
	for _, a := range Catalogue() {
		if !a.Raw() || malformed[a.ID] {
			continue
		}
		line := bytes.Replace(a.Frame, []byte("$ID"), []byte(`"raw-1"`), 1)
		if !json.Valid(line) {
			t.Errorf("%s: frame is not JSON: %.200q", a.ID, line)
		}
	}
}

func TestProblems(t *testing.T) {
	a := Attack{ID: "x", Rule: "name.charset"}
	ok := Result{Attack: a, Rule: "name.charset", Receipt: "000001.json", ReceiptRule: "name.charset"}
	if p := ok.Problems(); len(p) != 0 {
		t.Errorf("a clean denial has problems: %q", p)
	}
	bad := Result{Attack: a, Rule: "tool.not_allowed", Receipt: "000002.json", ReceiptRule: "args.type",
		Reached: []mcptest.LogEntry{{}}, Moved: 3}
	p := strings.Join(bad.Problems(), "\n")
	for _, want := range []string{"want name.charset", "records rule", "reached the bank", "moved 3 cents"} {
		if !strings.Contains(p, want) {
			t.Errorf("problems %q do not say %q", p, want)
		}
	}
	if p := (&Result{Attack: a, Message: "answered with a result"}).Problems(); len(p) < 2 || !strings.HasPrefix(p[0], "not denied") {
		t.Errorf("an allowed attack: problems %q", p)
	}
}

func TestSetError(t *testing.T) {
	var r Result
	r.setError(-32001, "whatever", json.RawMessage(`{"rule":"args.type","reason":"x","receipt":"000007.json"}`))
	if r.Rule != "args.type" || r.Receipt != "000007.json" {
		t.Errorf("from data: rule %q receipt %q", r.Rule, r.Receipt)
	}
	r = Result{}
	r.setError(-32001, `bankdoor denied tools/call "a: b": name.charset: tool name "a: b" has U+0020 at byte 2 (receipt 000012.json)`, nil)
	if r.Rule != "name.charset" || r.Receipt != "000012.json" {
		t.Errorf("from message: rule %q receipt %q", r.Rule, r.Receipt)
	}
	r = Result{}
	r.setError(-32602, "invalid params", nil)
	if r.Rule != "" || r.Receipt != "" {
		t.Errorf("a server's own error read as a denial: %q %q", r.Rule, r.Receipt)
	}
}

// TestArgumentTokens: values at any depth and nested names are values;
// top-level names are names; a broken frame is read up to its error.
func TestArgumentTokens(t *testing.T) {
	for _, c := range []struct {
		a             Attack
		values, names []string
	}{
		{Attack{Args: map[string]any{"account_id": "acc_1", "x": map[string]any{"SECRET": []any{1234, "v"}}}},
			[]string{"acc_1", "SECRET", "1234", "v"}, []string{"account_id", "x"}},
		{Attack{Args: "acc_checking"}, []string{"acc_checking"}, nil},
		{Attack{Frame: []byte(`{"jsonrpc":"2.0","id":$ID,"method":"tools/call","params":{"name":"get_x","arguments":{"a":{"SECRET-1":1,"SECRET-1":2},"b":"vv"}}}`)},
			[]string{"SECRET-1", "1", "SECRET-1", "2", "vv"}, []string{"a", "b"}},
		{Attack{Frame: []byte(`{"jsonrpc":"2.0","id":$ID,"method":"tools/call","params":{"name":"get_x","arguments":{"a":{"SECRET-2":}}}}`)},
			[]string{"SECRET-2"}, []string{"a"}},
	} {
		values, names := ArgumentTokens(c.a)
		slices.Sort(values)
		slices.Sort(c.values)
		if !slices.Equal(values, c.values) || !slices.Equal(names, c.names) {
			t.Errorf("ArgumentTokens(%v %s) = %q, %q; want %q, %q", c.a.Args, c.a.Frame, values, names, c.values, c.names)
		}
	}
}

// TestLeaks: a run of a value in the receipt's text is found, in the
// reason as in arg_names; the digests, the tool and the top-level names
// are not searched.
func TestLeaks(t *testing.T) {
	a := Attack{Tool: "get_transactions", Args: map[string]any{"account_id": "acc_checking", "memo": map[string]any{"SECRET-4111-1111": 1}, "limit": 1234567}}
	clean := `{"arg_names":["account_id","limit","memo"],"args_sha256":"1234567aacc_checkingff","decision":"deny","reason":"argument \"memo\" is nested","rule":"args.nested","tool":"get_transactions","sig":"SECRET-4111-1111"}`
	if got := Leaks(a, []byte(clean)); len(got) != 0 {
		t.Errorf("Leaks(clean receipt) = %q, want none", got)
	}
	for _, leak := range []string{
		`{"reason":"member \"SECRET-4111-1111\" twice"}`,
		`{"reason":"at \"/memo/SECRET-4111\""}`,
		`{"arg_names":["account_id","SECRET-4111-1111"]}`,
		`{"reason":"limit 1234567 is too big"}`,
		`{"reason":"account acc_checking"}`,
	} {
		if got := Leaks(a, []byte(leak)); len(got) == 0 {
			t.Errorf("Leaks(%s) found nothing", leak)
		}
	}
}
