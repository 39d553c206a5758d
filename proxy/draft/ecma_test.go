package draft

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// TestTranslateNeverWider: each JSON Schema pattern's policy pattern, fully
// matched as the gate does, refuses the strings in which ECMA-262 (with or
// without the u flag) finds no match, and still accepts plain ones; a
// pattern with no exact RE2 form is left out. RE2 read the old drafts'
// copies differently: "." took \r and U+2028, \S and [^\s] took U+00A0,
// a class took a character outside the BMP (two code units without u),
// and \p{L} (without u the three characters "p{L}") took any letter.
func TestTranslateNeverWider(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern        string
		accept, refuse []string
	}{
		{`^.$`, []string{"a", "\t", "é"}, []string{"\r", "\n", "\u2028", "\u2029", "😀"}},
		{`^a.b$`, []string{"a-b"}, []string{"a\rb", "a\u2028b", "a\u2029b"}},
		{`^\S+$`, []string{"acc_1", "é"}, []string{"\u00a0", "a\u3000b", "a\ufeff", "\u2028", "\v", "a b"}},
		{`^[^\s]$`, []string{"a"}, []string{"\u00a0", "\v", "\u1680", "\u2000", "\u202f", " "}},
		{`^\s$`, []string{" ", "\t", "\n", "\r", "\f"}, []string{"a", "\u00a0"}},
		{`^\d+$`, []string{"0123456789"}, []string{"\u0663", "\uff11", "1\u00b2"}},
		{`^\w+$`, []string{"acc_Z9"}, []string{"é", "\u212a", "a-b"}},
		{`^[^a]$`, []string{"b", "é"}, []string{"😀", "a"}},
		{`^[a-z0-9]{2}$`, []string{"a9"}, []string{"é9", "A9"}},
		{`^\u00e9\x41$`, []string{"éA"}, []string{"eA"}},
		{`^\.\/\$$`, []string{"./$"}, []string{"a/$"}},
		{`^(acc|cus)_[^\n\r]{1,3}$`, []string{"acc_abc", "cus_é"}, []string{"acc_a\rb", "acc_😀", "xacc_1"}},
		{`acc_`, []string{"acc_", "x\nacc_\n"}, []string{"acc", ""}},
		{`^a|b$`, []string{"ab", "xb", "ax"}, []string{"xa"}},
		{`^$`, []string{""}, []string{"a"}},
		{`^a*?b+?$`, []string{"ab", "b"}, []string{"a"}},
	}
	for _, tt := range tests {
		f, err := pattern([]byte(jsonQuote(tt.pattern)))
		if err != nil {
			t.Errorf("%q: %v", tt.pattern, err)
			continue
		}
		derived := f
		full := regexp.MustCompile(`^(?:` + derived + `)$`)
		for _, s := range tt.accept {
			if !full.MatchString(s) {
				t.Errorf("%q (policy %q) refuses %q", tt.pattern, derived, s)
			}
		}
		for _, s := range tt.refuse {
			if full.MatchString(s) {
				t.Errorf("%q (policy %q) accepts %q", tt.pattern, derived, s)
			}
		}
	}
}

// TestTranslateLeftOut: what has no exact RE2 form, or reads differently
// in Annex B, with u and in RE2, leaves the argument out.
func TestTranslateLeftOut(t *testing.T) {
	t.Parallel()
	for _, p := range []string{
		`(?=x)`, `(?!x)`, `(?<=x)y`, `(?<n>x)`, `(a)\1`, `\bx`, `\Bx`, `\p{L}`, `\P{L}`, `\cA`, `\0`, `\k<n>`,
		`\u{1F600}`, `\uD83D\uDE00`, `😀`, `[😀]`, `\x4`, `\q`, `\-`, `x{2000}`, `x{,3}`, `x{3`, `x{3,1}`, `]`, `}`, `{`,
		`x**`, `x+*`, `*x`, `^*`, `$+`, `[]`, `[^]`, `[z-a]`, `[\d-z]`, `[a-\d]`, `[a-b-c]`, `(x`, `x)`, `\`, `[a`,
		`(?i)x`, `(?s).`, `[[:alpha:]]`, `\Q.\E`, `\z`, `\A`, `x{1000}{1000}`, `(x{1000}){1000}`, "[" + strings.Repeat("ab", 2048) + "]",
	} {
		if f, err := pattern([]byte(jsonQuote(p))); err == nil {
			t.Errorf("%q: translated to %s; want it left out", p, f)
		}
	}
}

// TestTranslateKeepsPlainText: patterns RE2 reads as ECMA-262 does keep
// their text, so that a reviewer reads the schema's pattern.
func TestTranslateKeepsPlainText(t *testing.T) {
	t.Parallel()
	for p, want := range map[string]string{
		`^acc_[a-z0-9_]{1,32}$`: `acc_[a-z0-9_]{1,32}`,
		`^\d{4}-\d{2}-\d{2}$`:   `\d{4}-\d{2}-\d{2}`,
		`^cus_`:                 `(?s:.*)(?:^cus_)(?s:.*)`,
		`^[A-Z]{3}$`:            `[A-Z]{3}`,
		`^(?:EUR|USD)$`:         `(?:EUR|USD)`,
		`^.$`:                   `[^\n\r\x{2028}\x{2029}\x{d800}-\x{dfff}\x{10000}-\x{10ffff}]`,
		`^[^\s]$`:               `[^\t-\r \x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}\x{d800}-\x{dfff}\x{feff}\x{10000}-\x{10ffff}]`,
		`^a\.b$`:                `a\.b`,
	} {
		f, err := pattern([]byte(jsonQuote(p)))
		if err != nil {
			t.Errorf("%q: %v", p, err)
			continue
		}
		if got := f; got != want {
			t.Errorf("%q: policy pattern %q, want %q", p, got, want)
		}
	}
}

// jsonQuote writes s as a JSON string.
func jsonQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
