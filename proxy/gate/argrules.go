package gate

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bankdoor/bankdoor/internal/jcs"
)

// maxSafe is 2^53: integers up to this magnitude are exact in a float64.
const maxSafe = 1 << 53

// memberRule is one rule of check 6 applied to one argument; spec is nil
// for an argument the policy does not declare. Each rule runs over all
// arguments before the next, so the rules after ruleUnknown only ever see
// declared arguments.
type memberRule func(t *toolSpec, m *member, spec *argSpec) (rule, reason string)

// memberRules returns the per-argument rules in the documented order.
// Those made with eachItem apply to every item of an array argument in
// turn, against the spec of its items.
func memberRules() [11]memberRule {
	return [11]memberRule{eachItem(ruleNested), ruleUnknown, eachItem(ruleType), ruleMinItems, ruleMaxItems,
		eachItem(rulePattern), eachItem(ruleMinLength), eachItem(ruleMaxLength), eachItem(ruleMin), eachItem(ruleMax), eachItem(ruleEnum)}
}

// eachItem returns r as it applies to an argument: to the argument itself,
// or, if it is declared an array and its value is one, to each of its
// items in order against the items' spec, stopping at the first failure.
func eachItem(r memberRule) memberRule {
	return func(t *toolSpec, m *member, spec *argSpec) (rule, reason string) {
		if spec == nil || spec.Type != "array" || m.kind != '[' {
			return r(t, m, spec)
		}
		for i := range m.items {
			if rule, reason = r(t, &m.items[i], spec.items); rule != "" {
				return rule, reason
			}
		}
		return "", ""
	}
}

// label names m in a reason: the value of an argument, or an item of it.
func label(m *member) string {
	if m.index < 0 {
		return "value of " + quote(m.name)
	}
	return fmt.Sprintf("item %d of %s", m.index, quote(m.name))
}

// checkArgs is check 6.
func (g *Gate) checkArgs(c *request) (rule, reason string) {
	a, t := c.args, c.tool
	if a.rule != "" {
		return a.rule, a.reason
	}
	if len(a.members) > maxArgs {
		return "args.too_many", fmt.Sprintf("arguments have %d members; the limit is %d", len(a.members), maxArgs)
	}
	var specs [maxArgs]*argSpec
	for i, m := range a.members {
		specs[i] = t.args[m.name]
	}
	for _, r := range memberRules() {
		for i := range a.members {
			if rule, reason := r(t, &a.members[i], specs[i]); rule != "" {
				return rule, reason
			}
		}
	}
	if rule, reason = ruleRequired(t, a); rule != "" {
		return rule, reason
	}
	if a.canonical == nil { // unreachable: every value was checked above
		return "args.not_object", "arguments cannot be put in RFC 8785 canonical form"
	}
	return "", ""
}

func ruleNested(_ *toolSpec, m *member, spec *argSpec) (rule, reason string) {
	switch {
	case m.kind != '{' && m.kind != '[':
		return "", ""
	case m.index >= 0:
		return "args.nested", fmt.Sprintf("%s is %s; the items of an array must be strings, numbers or booleans", label(m), kindName(m.kind))
	case spec != nil:
		return "args.nested", fmt.Sprintf("value of %s is %s; want %s", quote(m.name), kindName(m.kind), spec.Type)
	}
	return "args.nested", fmt.Sprintf("value of %s is %s; argument values must be strings, numbers or booleans, or arrays of them where the policy declares one", quote(m.name), kindName(m.kind))
}

func ruleUnknown(t *toolSpec, m *member, spec *argSpec) (rule, reason string) {
	if spec != nil {
		return "", ""
	}
	return "args.unknown", fmt.Sprintf("argument %s is not declared for tool %s (declared: %s); send only declared arguments", quote(m.name), quote(t.name), list(t.names))
}

func ruleType(_ *toolSpec, m *member, spec *argSpec) (rule, reason string) {
	if why := typeFails(m, spec.Type); why != "" {
		return "args.type", fmt.Sprintf("%s %s; want %s", label(m), why, spec.Type)
	}
	return "", ""
}

// typeFails says why m is not of type typ, or returns "". An array value
// of an array argument never gets here: eachItem checks its items instead.
func typeFails(m *member, typ string) string {
	switch {
	case typ == "string" && m.kind == '"', typ == "boolean" && (m.kind == 't' || m.kind == 'f'):
		return ""
	case (typ == "integer" || typ == "number") && m.kind == '0':
		return numberFails(m.text, typ == "integer")
	case typ != "string" && typ != "boolean" && typ != "integer" && typ != "number" && typ != "array":
		return fmt.Sprintf("cannot be checked: the policy's type %s is unknown", quote(typ))
	}
	return "is " + kindName(m.kind)
}

func ruleMinItems(_ *toolSpec, m *member, spec *argSpec) (rule, reason string) {
	if m.kind == '[' && len(m.items) < spec.MinItems {
		return "args.min_items", fmt.Sprintf("value of %s has %d items; min_items is %d", quote(m.name), len(m.items), spec.MinItems)
	}
	return "", ""
}

func ruleMaxItems(_ *toolSpec, m *member, spec *argSpec) (rule, reason string) {
	if m.kind == '[' && len(m.items) > spec.MaxItems {
		return "args.max_items", fmt.Sprintf("value of %s has %d items; max_items is %d", quote(m.name), len(m.items), spec.MaxItems)
	}
	return "", ""
}

// numberFails says why the number literal lit is not a valid integer (if
// integer) or number, or returns "".
func numberFails(lit string, integer bool) string {
	plain := !strings.ContainsAny(lit, ".eE")
	if integer && !plain {
		return "is a number literal with a fraction or exponent"
	}
	if plain {
		if n, err := strconv.ParseInt(lit, 10, 64); err != nil || n > maxSafe || n < -maxSafe {
			return "is an integer literal beyond ±2^53, which a float64 cannot hold exactly"
		}
		return ""
	}
	if f, err := strconv.ParseFloat(lit, 64); err != nil || math.IsInf(f, 0) {
		return "is a number beyond the float64 range"
	}
	return ""
}

func rulePattern(_ *toolSpec, m *member, spec *argSpec) (rule, reason string) {
	if m.kind != '"' || (spec.re == nil && !spec.badPattern) {
		return "", ""
	}
	if spec.badPattern {
		return "args.pattern", fmt.Sprintf("the policy's pattern for %s does not compile as RE2; fix the policy", label(m))
	}
	if spec.re.MatchString(m.text) {
		return "", ""
	}
	return "args.pattern", fmt.Sprintf("%s does not match pattern %s (the whole value must match)", label(m), strconv.QuoteToASCII(spec.Pattern))
}

func ruleMinLength(_ *toolSpec, m *member, spec *argSpec) (rule, reason string) {
	if m.kind != '"' || spec.MinLength == nil {
		return "", ""
	}
	if n := utf8.RuneCountInString(m.text); n < *spec.MinLength {
		return "args.min_length", fmt.Sprintf("%s is %d code points; min_length is %d", label(m), n, *spec.MinLength)
	}
	return "", ""
}

func ruleMaxLength(_ *toolSpec, m *member, spec *argSpec) (rule, reason string) {
	if m.kind != '"' || spec.MaxLength == nil {
		return "", ""
	}
	if n := utf8.RuneCountInString(m.text); n > *spec.MaxLength {
		return "args.max_length", fmt.Sprintf("%s is %d code points; max_length is %d", label(m), n, *spec.MaxLength)
	}
	return "", ""
}

func ruleMin(_ *toolSpec, m *member, spec *argSpec) (rule, reason string) {
	if f, ok := number(m); ok && spec.Min != nil && f < *spec.Min {
		return "args.min", fmt.Sprintf("%s is below min %s", label(m), formatFloat(*spec.Min))
	}
	return "", ""
}

func ruleMax(_ *toolSpec, m *member, spec *argSpec) (rule, reason string) {
	if f, ok := number(m); ok && spec.Max != nil && f > *spec.Max {
		return "args.max", fmt.Sprintf("%s is above max %s", label(m), formatFloat(*spec.Max))
	}
	return "", ""
}

func ruleEnum(_ *toolSpec, m *member, spec *argSpec) (rule, reason string) {
	if spec.Enum == nil || slices.Contains(spec.Enum, canonicalScalar(m)) {
		return "", ""
	}
	return "args.enum", fmt.Sprintf("%s is not one of the %d values of its enum in the policy", label(m), len(spec.Enum))
}

// ruleRequired reports the first required argument, in byte order of the
// names, that the call lacks.
func ruleRequired(t *toolSpec, a *args) (rule, reason string) {
	for _, name := range t.names {
		if !t.args[name].Required {
			continue
		}
		if _, ok := slices.BinarySearchFunc(a.members, name, func(m member, n string) int { return compareStrings(m.name, n) }); !ok {
			return "args.required", fmt.Sprintf("required argument %s of tool %s is missing", quote(name), quote(t.name))
		}
	}
	return "", ""
}

// number returns the value of a number member; ruleType has already
// checked that it is finite.
func number(m *member) (float64, bool) {
	if m.kind != '0' {
		return 0, false
	}
	f, err := strconv.ParseFloat(m.text, 64)
	return f, err == nil
}

// canonicalScalar returns the RFC 8785 text of a scalar member, the form
// in which the policy stores enum values.
func canonicalScalar(m *member) string {
	var raw []byte
	switch m.kind {
	case '"':
		raw, _ = jsontext.AppendQuote(nil, m.text)
	default:
		raw = []byte(m.text)
	}
	c, err := jcs.Canonicalize(raw)
	if err != nil {
		return ""
	}
	return string(c)
}

func formatFloat(f float64) string {
	return strconv.FormatFloat(f, 'g', -1, 64)
}
