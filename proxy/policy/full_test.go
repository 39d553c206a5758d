package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// cmpRegexp compares compiled patterns by their source text.
var cmpRegexp = cmp.Comparer(func(a, b *regexp.Regexp) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.String() == b.String()
})

func ptr[T any](v T) *T { return &v }

func TestParseFull(t *testing.T) {
	data, err := os.ReadFile("testdata/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse("testdata/full.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	want := &Policy{
		Version:     1,
		ID:          "full.example-1",
		Default:     "deny",
		RequirePins: false,
		NeverAllow:  []string{"borrow", "lend2"},
		Receipts:    "all",
		Path:        "testdata/full.yaml",
		SHA256:      hex.EncodeToString(sum[:]),
		Servers: map[string]*Server{
			"bank": {
				Name: "bank", Expose: []string{"resources", "prompts"}, TraceContext: "drop", Line: 9, Column: 3,
				Tools: map[string]*Tool{
					"get_transactions": {
						Name:             "get_transactions",
						SchemaSHA256:     "181ce1e9c6ba00ee4d4d2b4cbd10b1b76cb4c3e67cb8ab0457f5bd5cfb8fe17d",
						DefinitionSHA256: "0123456789012345678901234567890123456789012345678901234567890123",
						Line:             12, Column: 7,
						Args: fullArgs(),
					},
					"list_accounts": {Name: "list_accounts", Args: map[string]*Arg{}, Line: 27, Column: 7},
				},
			},
			"other-server_2": {Name: "other-server_2", TraceContext: "forward", Tools: map[string]*Tool{}, Line: 28, Column: 3},
		},
	}
	if diff := cmp.Diff(want, got, cmpRegexp); diff != "" {
		t.Errorf("Parse(full.yaml) mismatch (-want +got):\n%s", diff)
	}
}

func fullArgs() map[string]*Arg {
	return map[string]*Arg{
		"account_id": {
			Name: "account_id", Type: "string", Required: true,
			Pattern: "acc_[a-z0-9_]{1,32}", Re: regexp.MustCompile(`^(?:acc_[a-z0-9_]{1,32})$`),
			MaxLength: ptr(40), Line: 16, Column: 11,
		},
		"limit": {Name: "limit", Type: "integer", Min: ptr(1.0), Max: ptr(100.0), Line: 17, Column: 11},
		"since": {
			Name: "since", Type: "string",
			Pattern: `\d{4}-\d{2}-\d{2}`, Re: regexp.MustCompile(`^(?:\d{4}-\d{2}-\d{2})$`),
			MinLength: ptr(10), MaxLength: ptr(10), Line: 18, Column: 11,
		},
		"currency": {Name: "currency", Type: "string", Enum: []string{`"USD"`, `"EUR"`, `"café"`, `"a\"b"`}, Line: 19, Column: 11},
		"ratio": {
			Name: "ratio", Type: "number", Min: ptr(-1.5), Max: ptr(2500.0),
			Enum: []string{"0.5", "1", "-1", "1e-7"}, Line: 20, Column: 11,
		},
		"flag": {Name: "flag", Type: "boolean", Enum: []string{"true"}, Line: 21, Column: 11},
		"big": {
			Name: "big", Type: "integer", Min: ptr(-9007199254740992.0), Max: ptr(9007199254740992.0),
			Enum: []string{"0", "7"}, Line: 25, Column: 11,
		},
		"empty_ok": {Name: "empty_ok", Type: "string", Re: regexp.MustCompile(`^(?:)$`), MaxLength: ptr(0), Line: 26, Column: 11},
	}
}

// TestPatternIsAnchored checks that a stored pattern matches whole values
// only, including for alternations and for multi-line flags inside it.
func TestPatternIsAnchored(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		match   []string
		reject  []string
	}{
		{"acc_[a-z]+", []string{"acc_x"}, []string{"xacc_x", "acc_x\n", "acc_x; transfer", ""}},
		{"a|b", []string{"a", "b"}, []string{"ab", "a\nb", "xa"}},
		{"(?m)a$", []string{"a"}, []string{"a\n", "a\nb"}},
		{"", []string{""}, []string{"x"}},
	} {
		p, err := Parse("t.yaml", []byte(argDoc("type: string\npattern: "+quote(tc.pattern))))
		if err != nil {
			t.Fatalf("pattern %q: %v", tc.pattern, err)
		}
		re := p.Servers["bank"].Tools["get_x"].Args["a"].Re
		for _, s := range tc.match {
			if !re.MatchString(s) {
				t.Errorf("pattern %q does not match %q", tc.pattern, s)
			}
		}
		for _, s := range tc.reject {
			if re.MatchString(s) {
				t.Errorf("pattern %q matches %q", tc.pattern, s)
			}
		}
	}
}

func TestReceiptsDefault(t *testing.T) {
	p, err := Parse("t.yaml", []byte(valid))
	if err != nil {
		t.Fatal(err)
	}
	if p.Receipts != "deny" || p.RequirePins || p.NeverAllow != nil {
		t.Errorf("defaults: receipts %q, require_pins %v, never_allow %q; want deny, false, none", p.Receipts, p.RequirePins, p.NeverAllow)
	}
}

// TestLineEndingsAndBOM checks that CRLF files and a leading byte order
// mark parse, with positions as in the LF file.
func TestLineEndingsAndBOM(t *testing.T) {
	lf := toolDoc("args:\n  a: {type: boolean}")
	base, err := Parse("t.yaml", []byte(lf))
	if err != nil {
		t.Fatal(err)
	}
	for name, in := range map[string]string{
		"crlf": crlf(lf),
		"bom":  bom + lf,
	} {
		p, err := Parse("t.yaml", []byte(in))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if diff := cmp.Diff(base, p, cmpRegexp, cmp.FilterPath(func(p cmp.Path) bool {
			return p.Last().String() == ".SHA256"
		}, cmp.Ignore())); diff != "" {
			t.Errorf("%s: mismatch (-lf +%s):\n%s", name, name, diff)
		}
	}
}

func crlf(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }

// TestNumericPin checks that an unquoted pin that YAML reads as a number
// is taken as the digest it spells.
func TestNumericPin(t *testing.T) {
	for _, pin := range []string{strings.Repeat("0", 64), strings.Repeat("1", 30) + "e" + strings.Repeat("2", 33)} {
		p, err := Parse("t.yaml", []byte(toolDoc("schema_sha256: "+pin)))
		if err != nil {
			t.Fatalf("pin %s: %v", pin, err)
		}
		if got := p.Servers["bank"].Tools["get_x"].SchemaSHA256; got != pin {
			t.Errorf("pin %s read as %q", pin, got)
		}
	}
}
