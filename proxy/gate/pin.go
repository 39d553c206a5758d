package gate

import "fmt"

// checkPin is check 5: the tool is listed by the server and its live
// definition hashes to the pinned schema_sha256 and, if the policy pins
// it, to the pinned definition_sha256.
func (g *Gate) checkPin(c *request) (rule, reason string) {
	if c.SkipPinCheck {
		return "", ""
	}
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
