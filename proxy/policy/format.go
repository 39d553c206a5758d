package policy

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// canonical writes p as a policy file in one fixed layout: keys in the
// documented order, map entries sorted, every string quoted, no comments.
// Parsing the result gives a Policy equal to p except for positions, Path
// and SHA256, so comparing two canonical forms compares two policies'
// meaning. SetPins uses it to check its edit; FuzzParse checks the
// round trip.
func canonical(p *Policy) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "version: %d\nid: %s\ndefault: %s\nrequire_pins: %t\n",
		p.Version, quote(p.ID), quote(p.Default), p.RequirePins)
	fmt.Fprintf(&b, "never_allow: %s\nreceipts: %s\nservers:\n", quoteList(p.NeverAllow), quote(p.Receipts))
	for _, name := range sortedKeys(p.Servers) {
		s := p.Servers[name]
		fmt.Fprintf(&b, "  %s:\n    expose: %s\n    trace_context: %s\n", quote(name), quoteList(s.Expose), quote(s.TraceContext))
		if len(s.Tools) == 0 {
			b.WriteString("    tools: {}\n")
			continue
		}
		b.WriteString("    tools:\n")
		for _, tname := range sortedKeys(s.Tools) {
			writeTool(&b, s.Tools[tname])
		}
	}
	return b.Bytes()
}

func writeTool(b *bytes.Buffer, t *Tool) {
	fmt.Fprintf(b, "      %s:\n", quote(t.Name))
	if t.SchemaSHA256 != "" {
		fmt.Fprintf(b, "        schema_sha256: %s\n", quote(t.SchemaSHA256))
	}
	if t.DefinitionSHA256 != "" {
		fmt.Fprintf(b, "        definition_sha256: %s\n", quote(t.DefinitionSHA256))
	}
	if t.Acknowledge != nil {
		fmt.Fprintf(b, "        acknowledge: %s\n", quoteList(t.Acknowledge))
	}
	if len(t.Args) == 0 {
		b.WriteString("        args: {}\n")
		return
	}
	b.WriteString("        args:\n")
	for _, aname := range sortedKeys(t.Args) {
		a := t.Args[aname]
		fmt.Fprintf(b, "          %s: {%s}\n", quote(a.Name), strings.Join(argFields(a), ", "))
	}
}

func argFields(a *Arg) []string {
	f := []string{"type: " + a.Type, "required: " + strconv.FormatBool(a.Required)}
	if a.Type != "array" {
		return append(f, constraintFields(a)...)
	}
	if a.Items != nil {
		items := append([]string{"type: " + a.Items.Type}, constraintFields(a.Items)...)
		f = append(f, "items: {"+strings.Join(items, ", ")+"}")
	}
	if a.MinItems != 0 {
		f = append(f, "min_items: "+strconv.Itoa(a.MinItems))
	}
	return append(f, "max_items: "+strconv.Itoa(a.MaxItems))
}

// constraintFields returns the scalar constraints of an argument or of an
// array's items.
func constraintFields(a *Arg) []string {
	var f []string
	if a.Re != nil {
		f = append(f, "pattern: "+quote(a.Pattern))
	}
	if a.MinLength != nil {
		f = append(f, "min_length: "+strconv.Itoa(*a.MinLength))
	}
	if a.MaxLength != nil {
		f = append(f, "max_length: "+strconv.Itoa(*a.MaxLength))
	}
	if a.Min != nil {
		f = append(f, "min: "+formatBound(a.Type, *a.Min))
	}
	if a.Max != nil {
		f = append(f, "max: "+formatBound(a.Type, *a.Max))
	}
	if a.Enum != nil {
		vals := make([]string, len(a.Enum))
		for i, v := range a.Enum {
			vals[i] = enumYAML(v)
		}
		f = append(f, "enum: ["+strings.Join(vals, ", ")+"]")
	}
	return f
}

func formatBound(typ string, v float64) string {
	if typ == "integer" {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// enumYAML turns the canonical JSON text of an enum value into YAML: JSON
// numbers and booleans are YAML as they are; strings are re-quoted.
func enumYAML(v string) string {
	if !strings.HasPrefix(v, `"`) {
		return v
	}
	s, err := jsontext.AppendUnquote(nil, v)
	if err != nil {
		return v // not from Parse, which stores only valid JSON strings
	}
	return quote(string(s))
}

// quote writes s as a YAML double-quoted scalar. Go's ASCII quoting uses
// only escapes that YAML reads the same way (\a \b \f \n \r \t \v \\ \"
// \xHH \uHHHH \UHHHHHHHH); s is valid UTF-8, so \xHH is always a code point.
func quote(s string) string {
	return strconv.QuoteToASCII(s)
}

func quoteList(l []string) string {
	q := make([]string, len(l))
	for i, s := range l {
		q[i] = quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
