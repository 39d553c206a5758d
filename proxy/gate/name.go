package gate

import (
	"fmt"
	"slices"
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

// checkWords is check 3: every run of the name's tokens that spells a write
// word is acknowledged by the tool's entry in the policy (exact name), can
// be acknowledged (package words), and the entry is pinned. Check 5 voids
// the acknowledgement of a tool whose live definition does not match.
func (g *Gate) checkWords(c *request) (rule, reason string) {
	if _, ok := words.Find(c.Tool, g.p.NeverAllow); !ok {
		return "", "" // the common case, without allocating
	}
	t := c.server.tools[c.Tool]
	for _, m := range words.FindAll(c.Tool, g.p.NeverAllow) {
		var why string
		switch {
		case m.Why() != "":
			why = "it " + m.Why() + ": never allowed, whatever the policy says"
		case t == nil || !slices.Contains(t.tool.Acknowledge, m.Word):
			why = "a name with such a word is allowed only as a pinned tool whose policy entry acknowledges the word"
		case t.tool.SchemaSHA256 == "":
			why = "the policy acknowledges it for this tool, but an acknowledgement holds only for a pinned definition and the tool has no schema_sha256"
		default:
			continue
		}
		return "name.write_word", fmt.Sprintf("tool name %s (tokens %s) spells the payment/write word %q; %s", quote(c.Tool), strings.Join(words.Tokens(c.Tool), " "), m.Word, why)
	}
	return "", ""
}

// checkAllowlist is check 4: the name is exactly a key of the server's tools.
func (g *Gate) checkAllowlist(c *request) (rule, reason string) {
	if c.tool = c.server.tools[c.Tool]; c.tool != nil {
		return "", ""
	}
	return "tool.not_allowed", fmt.Sprintf("tool %s is not in the allowlist of server %s (exact, case-sensitive names; allowed: %s)", quote(c.Tool), quote(c.Server), list(c.server.names))
}
