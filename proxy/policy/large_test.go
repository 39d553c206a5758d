package policy

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// repeatTo repeats format (with the index) until the text is about n bytes.
func repeatTo(n int, format string) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, format, i)
	}
	return b.String()
}

// TestLargeInputs checks that files near MaxSize load in linear time.
// Finding node positions once took time quadratic in a line's length
// (minutes for one long flow list); the bound is loose enough for -race
// and slow machines and far below what a quadratic step would take.
func TestLargeInputs(t *testing.T) {
	const n = MaxSize - 64<<10
	for name, in := range map[string]string{
		"long flow line":       valid + "x: [" + strings.Repeat("a,", n/2) + "a]\n",
		"long non-ASCII line":  valid + "x: [" + strings.Repeat("é,", n/3) + "a]\n",
		"long enum":            argDoc("type: string\nenum: [" + repeatTo(n, `"v%d", `) + "x]"),
		"long never_allow":     valid + "never_allow: [" + repeatTo(n, "w%d, ") + "x]\n",
		"many args":            toolDoc("args:\n" + repeatTo(n*4/5, "  a%d: {type: string, pattern: \"[a-z]{1,3}\", enum: [abc]}\n")),
		"many tools":           header + repeatTo(n, "      t%d: {args: {a: {type: integer, min: 1, max: 2}}}\n"),
		"deep flow nesting":    valid + "x: " + strings.Repeat("[", 9000) + strings.Repeat("]", 9000) + "\n",
		"deep mapping nesting": valid + "x: " + strings.Repeat("{a: ", 9000) + strings.Repeat("}", 9000) + "\n",
	} {
		if len(in) > MaxSize {
			t.Fatalf("%s: test input is %d bytes, over MaxSize", name, len(in))
		}
		start := time.Now()
		if p, err := Parse("t.yaml", []byte(in)); err == nil {
			canonical(p)
			Lint(p)
		}
		if d := time.Since(start); d > 30*time.Second {
			t.Errorf("%s: %v for %d bytes", name, d, len(in))
		}
	}
}
