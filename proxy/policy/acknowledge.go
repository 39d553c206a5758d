package policy

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/bankdoor/bankdoor/proxy/words"
)

// ackEntry is one word of a tool's acknowledge list and where it stands.
type ackEntry struct {
	tool *Tool
	word string
	node *yaml.Node
}

// acknowledge decodes a tool's acknowledge list: words of ASCII letters and
// digits, stored lower-case, each once. Whether each is a write word of
// the name that can be acknowledged is checked by checkAcknowledgements,
// once never_allow is known.
func (d *decoder) acknowledge(n *yaml.Node, t *Tool) []string {
	items, ok := d.list(n, fmt.Sprintf(`"acknowledge" of tool %q`, t.Name))
	if !ok {
		return nil
	}
	if len(items) == 0 {
		d.errorf(n, "acknowledge of tool %q lists no words; list the write words its name may contain, or remove the key", t.Name)
		return nil
	}
	var out []string
	for _, item := range items {
		s, ok := d.str(item, "an acknowledge word")
		if !ok {
			continue
		}
		w := strings.ToLower(s)
		switch {
		case !isWord(w):
			d.errorf(item, "acknowledge word %q is not 1 to %d ASCII letters and digits; write the write word alone, as the gate spells it (for example transfers, topup)", truncate(s), maxWordLen)
		case slices.Contains(out, w):
			d.errorf(item, "acknowledge word %q is listed twice for tool %q; remove one", truncate(s), t.Name)
		default:
			out = append(out, w)
			d.acks = append(d.acks, ackEntry{tool: t, word: w, node: item})
		}
	}
	return out
}

// checkAcknowledgements checks each acknowledged word against its tool's
// name: it must be a write word (built-in or never_allow), the name must
// contain it (a word it does not contain is a stale acknowledgement), and
// every place the name spells it must be acknowledgeable (not the name's
// leading word, not a word of words.Never).
func (d *decoder) checkAcknowledgements(p *Policy) {
	for _, a := range d.acks {
		if msg := ackProblem(a.tool.Name, a.word, p.NeverAllow); msg != "" {
			d.errorf(a.node, "%s", msg)
		}
	}
}

// ackProblem says what is wrong with acknowledging word for the tool
// name, or returns "".
func ackProblem(name, word string, neverAllow []string) string {
	if !words.IsBuiltin(word) && !slices.Contains(neverAllow, word) {
		return fmt.Sprintf("acknowledge word %q of tool %q is not a write word (built-in or never_allow), so there is nothing to acknowledge; remove it", word, name)
	}
	found := false
	for _, m := range words.FindAll(name, neverAllow) {
		if m.Word != word {
			continue
		}
		found = true
		if why := m.Why(); why != "" {
			return fmt.Sprintf("tool %q cannot acknowledge the write word %q: it %s, so no policy can allow this name; remove the tool from the policy", name, word, why)
		}
	}
	if !found {
		return fmt.Sprintf("tool %q does not contain the write word %q (its tokens are %s), so the acknowledgement is stale; remove the word", name, word, strings.Join(words.Tokens(name), " "))
	}
	return ""
}
