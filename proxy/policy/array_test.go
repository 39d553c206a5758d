package policy

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParseArrays(t *testing.T) {
	p, err := Load("testdata/arrays.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]*Arg{
		"ids": {Name: "ids", Type: "array", Required: true, MaxItems: 20, Line: 10, Column: 11,
			Items: &Arg{Name: "ids", Type: "string", Pattern: "tx_[0-9]{1,8}", Re: regexp.MustCompile(`^(?:tx_[0-9]{1,8})$`),
				MaxLength: ptr(11), Line: 10, Column: 62}},
		"amounts": {Name: "amounts", Type: "array", MinItems: 1, MaxItems: 1000, Line: 11, Column: 11,
			Items: &Arg{Name: "amounts", Type: "number", Min: ptr(0.0), Max: ptr(1e6), Line: 15, Column: 13}},
		"years": {Name: "years", Type: "array", MaxItems: 3, Line: 19, Column: 11,
			Items: &Arg{Name: "years", Type: "integer", Min: ptr(2000.0), Max: ptr(2100.0), Enum: []string{"2024", "2025"}, Line: 19, Column: 47}},
		"flags": {Name: "flags", Type: "array", MaxItems: 1, Line: 20, Column: 11,
			Items: &Arg{Name: "flags", Type: "boolean", Line: 20, Column: 61}},
		"codes": {Name: "codes", Type: "array", MaxItems: 5, Line: 21, Column: 11,
			Items: &Arg{Name: "codes", Type: "string", MinLength: ptr(3), Enum: []string{`"EUR"`, `"USD"`}, Line: 21, Column: 47}},
	}
	if diff := cmp.Diff(want, p.Servers["bank"].Tools["get_transactions_by_ids"].Args, cmpRegexp); diff != "" {
		t.Errorf("arrays.yaml mismatch (-want +got):\n%s", diff)
	}
}

// TestArrayCanonical checks that an array argument survives the canonical
// form SetPins compares policies by: the same meaning, written once.
func TestArrayCanonical(t *testing.T) {
	data, err := os.ReadFile("testdata/arrays.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse("a.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	c := canonical(p)
	for _, line := range []string{
		`"ids": {type: array, required: true, items: {type: string, pattern: "tx_[0-9]{1,8}", max_length: 11}, max_items: 20}`,
		`"amounts": {type: array, required: false, items: {type: number, min: 0, max: 1e+06}, min_items: 1, max_items: 1000}`,
		`"flags": {type: array, required: false, items: {type: boolean}, max_items: 1}`,
	} {
		if !bytes.Contains(c, []byte(line)) {
			t.Errorf("canonical form lacks %s:\n%s", line, c)
		}
	}
	q, err := Parse("a.yaml", c)
	if err != nil {
		t.Fatalf("canonical form does not parse: %v\n%s", err, c)
	}
	ignore := cmpopts.IgnoreFields(Arg{}, "Line", "Column")
	want, got := p.Servers["bank"].Tools["get_transactions_by_ids"].Args, q.Servers["bank"].Tools["get_transactions_by_ids"].Args
	if diff := cmp.Diff(want, got, cmpRegexp, ignore); diff != "" {
		t.Errorf("canonical form means another policy (-want +got):\n%s", diff)
	}
}

func TestParseArrayErrors(t *testing.T) {
	for _, tc := range []errorCase{
		{"missing items and max_items", argDoc("type: array"), []string{
			`t.yaml:10:13: missing key "items" in argument "a"; add items: {type: string, ...}`,
			`t.yaml:10:13: missing key "max_items" in argument "a"; add max_items: N (1 to 1000)`}},
		{"missing max_items, flow", toolDoc("args:\n  a: { type: array, items: { type: string, max_length: 3 } }"), []string{
			`t.yaml:9:14: missing key "max_items" in argument "a"`}},
		{"max_items 0", argDoc("type: array\nmax_items: 0\nitems: {type: boolean}"), []string{
			`t.yaml:11:24: max_items 0 of argument "a" is not between 1 and 1000`}},
		{"max_items above the limit", argDoc("type: array\nmax_items: 1001\nitems: {type: boolean}"), []string{
			`t.yaml:11:24: max_items 1001 of argument "a" is not between 1 and 1000`}},
		{"max_items not an integer", argDoc("type: array\nmax_items: 1.5\nitems: {type: boolean}"), []string{
			`t.yaml:11:24: "max_items" of argument "a" must be an integer, found the number 1.5`}},
		{"max_items quoted", argDoc("type: array\nmax_items: \"5\"\nitems: {type: boolean}"), []string{
			`t.yaml:11:24: "max_items" of argument "a" must be an integer, found the string "5"`}},
		{"min_items above max_items", argDoc("type: array\nmax_items: 2\nmin_items: 3\nitems: {type: boolean}"), []string{
			`t.yaml:12:24: min_items 3 of argument "a" is more than its max_items 2`}},
		{"min_items negative", argDoc("type: array\nmax_items: 2\nmin_items: -1\nitems: {type: boolean}"), []string{
			`t.yaml:12:24: min_items -1 of argument "a" is negative`}},
		{"items of arrays", argDoc("type: array\nmax_items: 2\nitems: {type: array, max_items: 2, items: {type: string}}"), []string{
			`t.yaml:12:27: type "array" of items of argument "a" is not one of string, integer, number, boolean; items are scalars`,
			`t.yaml:12:34: unknown key "max_items" in items of argument "a" (known: type, pattern, min_length, max_length, min, max, enum)`,
			`t.yaml:12:48: unknown key "items" in items of argument "a"`}},
		{"items of objects", argDoc("type: array\nmax_items: 2\nitems: {type: object}"), []string{
			`t.yaml:12:27: type "object" of items of argument "a" is not one of string, integer, number, boolean; items are scalars (arrays of arrays or of objects are never accepted)`}},
		{"items without type", argDoc("type: array\nmax_items: 2\nitems: {max_length: 3}"), []string{
			`t.yaml:12:20: missing key "type" in items of argument "a"; add type: string (or integer, number, boolean)`}},
		{"items a string", argDoc("type: array\nmax_items: 2\nitems: string"), []string{
			`t.yaml:12:20: items of argument "a" must be a mapping, found the string "string"`}},
		{"items required", argDoc("type: array\nmax_items: 2\nitems: {type: string, max_length: 3, required: true}"), []string{
			`t.yaml:12:50: unknown key "required" in items of argument "a"`}},
		{"item constraint of another type", argDoc("type: array\nmax_items: 2\nitems: {type: integer, pattern: \"[0-9]+\", max_length: 3}"), []string{
			`t.yaml:12:36: "pattern" does not apply to items of argument "a" of type integer; remove it`,
			`t.yaml:12:55: "max_length" does not apply to items of argument "a" of type integer; remove it`}},
		{"item min above max", argDoc("type: array\nmax_items: 2\nitems: {type: number, min: 2, max: 1}"), []string{
			`t.yaml:12:48: max 1 of items of argument "a" is less than its min 2`}},
		{"item enum outside pattern", argDoc("type: array\nmax_items: 2\nitems: {type: string, pattern: \"[A-Z]{3}\", enum: [USD, usd]}"), []string{
			`t.yaml:12:68: an enum value of items of argument "a" (type string) is "usd", which does not match the pattern`}},
		{"item pattern does not compile", argDoc("type: array\nmax_items: 2\nitems: {type: string, pattern: \"(\"}"), []string{
			`t.yaml:12:44: pattern of items of argument "a" does not compile`}},
		{"scalar constraints on the array", argDoc("type: array\nmax_items: 2\nitems: {type: string, max_length: 3}\npattern: x\nenum: [a]\nmin: 1"), []string{
			`t.yaml:13:13: "pattern" does not apply to argument "a" of type array; put it under items`,
			`t.yaml:14:13: "enum" does not apply to argument "a" of type array; put it under items`,
			`t.yaml:15:13: "min" does not apply to argument "a" of type array; put it under items`}},
		{"array keys on a string", argDoc("type: string\nmax_length: 3\nmax_items: 2\nitems: {type: string}\nmin_items: 1"), []string{
			`t.yaml:12:13: "max_items" does not apply to argument "a" of type string; remove it (items, min_items and max_items apply to arrays)`,
			`t.yaml:13:13: "items" does not apply to argument "a" of type string`,
			`t.yaml:14:13: "min_items" does not apply to argument "a" of type string`}},
		{"unknown key on an array", argDoc("type: array\nmax_items: 2\nitems: {type: boolean}\nunique: true"), []string{
			`t.yaml:13:13: unknown key "unique" in argument "a" (known: type, required, pattern, min_length, max_length, min, max, enum, items, min_items, max_items)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse("t.yaml", []byte(tc.in))
			if err == nil || p != nil {
				t.Fatalf("Parse = %v, %v; want only errors %q", p, err, tc.want)
			}
			checkErrors(t, err, tc.want)
		})
	}
}

func TestLintArrayItems(t *testing.T) {
	p, err := Parse("l.yaml", []byte(toolDoc(`schema_sha256: "`+strings.Repeat("a", 64)+`"
definition_sha256: "`+strings.Repeat("b", 64)+`"
args:
  free: { type: array, max_items: 5, items: { type: string } }
  bounded: { type: array, max_items: 5, items: { type: string, max_length: 8 } }
  numbers: { type: array, max_items: 5, items: { type: integer } }`)))
	if err != nil {
		t.Fatal(err)
	}
	got := Lint(p)
	if len(got) != 1 {
		t.Fatalf("Lint = %v, want one args.unbounded", got)
	}
	want := `l.yaml:11:46: args.unbounded: the string items of array argument "free" of tool "get_x" have no pattern, enum or max_length`
	if s := got[0].String(); !strings.HasPrefix(s, want) {
		t.Errorf("Lint = %s, want prefix %s", s, want)
	}
}
