package gate

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/bankdoor/bankdoor/proxy/words"
)

// maxToolName is the longest tool name check 1 accepts, in bytes.
const maxToolName = 128

// checkName is check 1: the name is 1..128 bytes of [A-Za-z0-9_-].
func (g *Gate) checkName(c *request) (rule, reason string) {
	if n := len(c.Tool); n == 0 || n > maxToolName {
		return "name.length", fmt.Sprintf("tool name %s is %d bytes; a tool name is 1 to %d bytes of ASCII letters, digits, '_' and '-'", quote(c.Tool), n, maxToolName)
	}
	for i := 0; i < len(c.Tool); i++ {
		if !nameByte(c.Tool[i]) {
			return "name.charset", fmt.Sprintf("tool name %s has %s at byte %d; a tool name may only use ASCII letters, digits, '_' and '-'", quote(c.Tool), describeRune(c.Tool[i:]), i)
		}
	}
	return "", ""
}

func nameByte(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '_' || b == '-'
}

// describeRune names the first rune of s as U+XXXX, or its first byte if s
// does not start with valid UTF-8.
func describeRune(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError && n <= 1 {
		return fmt.Sprintf("the byte 0x%02x (not UTF-8)", s[0])
	}
	return fmt.Sprintf("U+%04X", r)
}

// checkServer is check 2: the server is in the policy.
func (g *Gate) checkServer(c *request) (rule, reason string) {
	if c.server = g.servers[c.Server]; c.server != nil {
		return "", ""
	}
	return "server.unknown", fmt.Sprintf("server %s is not in policy %s (servers: %s)", quote(c.Server), quote(g.p.ID), list(sortedKeys(g.servers)))
}

// checkWords is check 3: no run of the name's tokens is a write word.
func (g *Gate) checkWords(c *request) (rule, reason string) {
	w, ok := words.Find(c.Tool, g.p.NeverAllow)
	if !ok {
		return "", ""
	}
	return "name.write_word", fmt.Sprintf("tool name %s (tokens %s) spells the payment/write word %q; a tool whose name has such a word is never allowed, whatever the allowlist says", quote(c.Tool), strings.Join(words.Tokens(c.Tool), " "), w)
}

// checkAllowlist is check 4: the name is exactly a key of the server's tools.
func (g *Gate) checkAllowlist(c *request) (rule, reason string) {
	if c.tool = c.server.tools[c.Tool]; c.tool != nil {
		return "", ""
	}
	return "tool.not_allowed", fmt.Sprintf("tool %s is not in the allowlist of server %s (exact, case-sensitive names; allowed: %s)", quote(c.Tool), quote(c.Server), list(c.server.names))
}
