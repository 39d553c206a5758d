package gate

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxQuoted is how many bytes of a name a reason quotes.
const maxQuoted = 64

// quote returns s for a reason: cut to 64 bytes at a UTF-8 boundary, then
// quoted with every non-ASCII rune escaped, so a reason is plain ASCII text
// whatever the name contains.
func quote(s string) string {
	if len(s) <= maxQuoted {
		return strconv.QuoteToASCII(s)
	}
	return strconv.QuoteToASCII(cut(s, maxQuoted)) + "…"
}

// cut returns the longest prefix of s of at most n bytes that does not end
// inside a UTF-8 sequence.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && i > n-utf8.UTFMax && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i]
}

// maxListed is how many names a reason lists.
const maxListed = 8

// list joins names for a reason, at most 8 of them, each quoted.
func list(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	var b strings.Builder
	for i, n := range names {
		if i == maxListed {
			b.WriteString(", …")
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(quote(n))
	}
	return b.String()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
