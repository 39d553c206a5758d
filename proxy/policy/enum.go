package policy

import (
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"go.yaml.in/yaml/v3"

	"github.com/bankdoor/bankdoor/internal/jcs"
)

// enum decodes the enum list of a, whose type and other constraints are
// already decoded, storing each value as its RFC 8785 canonical JSON text.
// A value the other constraints reject is an error: it could never be
// accepted, so the list would not say what it seems to.
func (d *decoder) enum(a *Arg, n *yaml.Node, what string) []string {
	items, ok := d.list(n, fmt.Sprintf(`"enum" of %s`, what))
	if !ok {
		return nil
	}
	if len(items) == 0 {
		d.errorf(n, "enum of %s is empty, so no value could be accepted; list the values or remove enum", what)
		return nil
	}
	out := make([]string, 0, len(items))
	seen := make(map[string]bool)
	for _, item := range items {
		text, ok := d.enumValue(a, item, what)
		switch {
		case !ok:
		case seen[text]:
			d.errorf(item, "enum value %s of %s is listed twice; remove one", truncate(text), what)
		default:
			seen[text] = true
			out = append(out, text)
		}
	}
	return out
}

func (d *decoder) enumValue(a *Arg, n *yaml.Node, what string) (string, bool) {
	label := fmt.Sprintf("an enum value of %s (type %s)", what, a.Type)
	switch a.Type {
	case "string":
		return d.enumString(a, n, label)
	case "integer":
		v, ok := d.integer(n, label)
		if !ok || !d.inRange(a, n, float64(v), what) {
			return "", false
		}
		return strconv.FormatInt(v, 10), true
	case "number":
		v, text, ok := d.number(n, label)
		if !ok || !d.inRange(a, n, v, what) {
			return "", false
		}
		return text, true
	}
	b, ok := d.boolean(n, label)
	return strconv.FormatBool(b), ok
}

func (d *decoder) enumString(a *Arg, n *yaml.Node, label string) (string, bool) {
	s, ok := d.str(n, label)
	if !ok {
		return "", false
	}
	if why := stringFails(a, s); why != "" {
		d.errorf(n, "%s is %q, which %s, so it could never be accepted; fix the value or the constraint", label, truncate(s), why)
		return "", false
	}
	q, err := jsontext.AppendQuote(nil, s)
	if err == nil {
		q, err = jcs.Canonicalize(q)
	}
	if err != nil {
		d.errorf(n, "%s: %v; use printable UTF-8 text", label, err)
		return "", false
	}
	return string(q), true
}

// stringFails says why the string constraints of a reject s, or "".
func stringFails(a *Arg, s string) string {
	n := utf8.RuneCountInString(s)
	switch {
	case a.Re != nil && !a.Re.MatchString(s):
		return "does not match the pattern"
	case a.MinLength != nil && n < *a.MinLength:
		return fmt.Sprintf("is shorter than min_length %d", *a.MinLength)
	case a.MaxLength != nil && n > *a.MaxLength:
		return fmt.Sprintf("is longer than max_length %d", *a.MaxLength)
	}
	return ""
}

// inRange checks an enum value of a against a's min and max.
func (d *decoder) inRange(a *Arg, n *yaml.Node, v float64, what string) bool {
	if a.Min != nil && v < *a.Min || a.Max != nil && v > *a.Max {
		d.errorf(n, "enum value %s of %s is outside min and max, so it could never be accepted; fix the value or the bounds", n.Value, what)
		return false
	}
	return true
}
