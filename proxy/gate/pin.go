package gate

import (
	"fmt"
	"strconv"
	"strings"
)

// checkPin is check 5: the tool is listed by the server and its live
// definition hashes to the pinned schema_sha256 and, if the policy pins
// it, to the pinned definition_sha256.
//
// For a tool that acknowledges write words (check 3), a failing pin also
// voids the acknowledgement, and the reason says so.
func (g *Gate) checkPin(c *request) (rule, reason string) {
	if c.SkipPinCheck {
		return "", ""
	}
	rule, reason = g.pinFailure(c)
	if ack := c.tool.tool.Acknowledge; rule != "" && len(ack) > 0 {
		reason += fmt.Sprintf("; the policy's acknowledgement of %s in its name holds only for the pinned definition, so it is void", quoteWords(ack))
	}
	return rule, reason
}

// pinFailure runs check 5 for the allowlisted tool c.tool.
func (g *Gate) pinFailure(c *request) (rule, reason string) {
	pinned := c.tool.tool.SchemaSHA256
	if pinned == "" && g.p.RequirePins {
		return "pin.missing", fmt.Sprintf("tool %s has no schema_sha256 in the policy and require_pins is true; review the tool and pin it", quote(c.Tool))
	}
	live, ok := c.Live[c.Tool]
	if !ok {
		return "pin.unlisted", fmt.Sprintf("tool %s is not in server %s's current tools/list; only a tool the server lists can be called", quote(c.Tool), quote(c.Server))
	}
	if pinned != "" && live != pinned {
		return "pin.mismatch", fmt.Sprintf("tool %s's live definition has schema_sha256 %s…, the policy pins %s…; review the changed definition, then pin the tool again", quote(c.Tool), short(live), short(pinned))
	}
	if def := c.tool.tool.DefinitionSHA256; def != "" && c.LiveDefinition[c.Tool] != def {
		return "pin.mismatch", fmt.Sprintf("tool %s's live definition has definition_sha256 %s…, the policy pins %s…: a member of it changed (title, icons, outputSchema, execution, _meta or another); review the changed definition, then pin the tool again", quote(c.Tool), short(c.LiveDefinition[c.Tool]), short(def))
	}
	return "", ""
}

// short returns the first 12 characters of a hex digest.
func short(sum string) string {
	if len(sum) > 12 {
		return sum[:12]
	}
	return sum
}

// quoteWords quotes each word and joins them with ", ".
func quoteWords(ws []string) string {
	q := make([]string, len(ws))
	for i, w := range ws {
		q[i] = strconv.Quote(w)
	}
	return strings.Join(q, ", ")
}
