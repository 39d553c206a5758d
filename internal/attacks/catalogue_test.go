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
	"pin.missing", "pin.unlisted", "pin.mismatch",
	"args.too_large", "args.encoding", "args.duplicate", "args.not_object", "args.too_many", "args.nested",
	"args.unknown", "args.type", "args.pattern", "args.min_length", "args.max_length", "args.min", "args.max",
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
		if !slices.Contains([]string{"", "rugpull", "renamed"}, a.Variant) {
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
	if got := Variants(all); !slices.Equal(got, []string{"", "renamed", "rugpull"}) {
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
	for _, id := range []string{"write.transfer", "write.pay_bill", "write.move_money", "pin.rugpull", "args.mass-assignment", "params.duplicate-name"} {
		if !unsafe[id] {
			t.Errorf("%s is not marked Unsafe", id)
		}
	}
}

// TestRawFramesParse checks that the frames are what they say: those
// meant to be well-formed JSON are, so that the proxy's answer exercises
// the intended rule and not a parse error.
func TestRawFramesParse(t *testing.T) {
	malformed := map[string]bool{"frame.not-json": true, "frame.trailing-garbage": true}
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
