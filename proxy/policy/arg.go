package policy

import (
	"fmt"
	"regexp"

	"go.yaml.in/yaml/v3"
)

// entry is one key and its value.
type entry struct{ k, v *yaml.Node }

// argKeys returns the keys of an argument, in the order messages list them.
func argKeys() []string {
	return []string{"type", "required", "pattern", "min_length", "max_length", "min", "max", "enum", "items", "min_items", "max_items"}
}

// itemKeys returns the keys of an array's items: a scalar type and its
// constraints.
func itemKeys() []string {
	return []string{"type", "pattern", "min_length", "max_length", "min", "max", "enum"}
}

// arg decodes one argument. Its keys are collected first and checked once
// the type is known, since the type decides which constraints apply.
func (d *decoder) arg(k, v *yaml.Node) *Arg {
	a := &Arg{Name: k.Value, Line: k.Line, Column: k.Column}
	what := fmt.Sprintf("argument %q", a.Name)
	keys := d.collect(v, what, argKeys(), "type: string (or integer, number, boolean, array)")
	if e, ok := keys["type"]; ok {
		a.Type = d.argType(e.v, what)
	}
	if a.Type == "" {
		return a
	}
	if e, ok := keys["required"]; ok {
		a.Required, _ = d.boolean(e.v, fmt.Sprintf(`"required" of %s`, what))
	}
	if !d.constraintsFit(a.Type, keys, what) {
		return a
	}
	if a.Type == "array" {
		d.arrayConstraints(a, v, keys, what)
		return a
	}
	d.scalarConstraints(a, keys, what)
	return a
}

// collect decodes the mapping n whose keys are among known, the first of
// which (type) is required and added as need says.
func (d *decoder) collect(n *yaml.Node, what string, known []string, need string) map[string]entry {
	keys := make(map[string]entry)
	var fs []field
	for _, key := range known {
		fs = append(fs, field{key: key, set: func(k, v *yaml.Node) { keys[key] = entry{k, v} }})
	}
	fs[0].need = need
	d.fields(n, what, fs)
	return keys
}

// scalarConstraints decodes the constraints of a string, integer, number
// or boolean, which constraintsFit has accepted for its type.
func (d *decoder) scalarConstraints(a *Arg, keys map[string]entry, what string) {
	d.stringConstraints(a, keys, what)
	d.rangeConstraints(a, keys, what)
	if e, ok := keys["enum"]; ok {
		a.Enum = d.enum(a, e.v, what)
	}
}

func (d *decoder) argType(n *yaml.Node, what string) string {
	s, ok := d.str(n, fmt.Sprintf(`"type" of %s`, what))
	switch {
	case !ok:
		return ""
	case s == "string" || s == "integer" || s == "number" || s == "boolean" || s == "array":
		return s
	}
	d.errorf(n, "type %q of %s is not one of string, integer, number, boolean, array; use one of those (objects are never accepted)", truncate(s), what)
	return ""
}

// constraintsFit reports whether every constraint present applies to typ.
func (d *decoder) constraintsFit(typ string, keys map[string]entry, what string) bool {
	ok := true
	for _, key := range argKeys()[2:] {
		e, present := keys[key]
		if present && !fits(key, typ) {
			d.errorf(e.k, "%q does not apply to %s of type %s; %s", key, what, typ, fitHelp(key, typ))
			ok = false
		}
	}
	return ok
}

func fits(key, typ string) bool {
	switch key {
	case "pattern", "min_length", "max_length":
		return typ == "string"
	case "min", "max":
		return typ == "integer" || typ == "number"
	case "items", "min_items", "max_items":
		return typ == "array"
	}
	return typ != "array" // enum: any scalar type; its values are checked against it
}

func fitHelp(key, typ string) string {
	if typ == "array" {
		return "put it under items, which holds the constraints every item must meet"
	}
	if key == "items" || key == "min_items" || key == "max_items" {
		return "remove it (items, min_items and max_items apply to arrays)"
	}
	return "remove it (pattern, min_length and max_length apply to strings, min and max to integers and numbers)"
}

func (d *decoder) stringConstraints(a *Arg, keys map[string]entry, what string) {
	if e, ok := keys["pattern"]; ok {
		a.Pattern, a.Re = d.pattern(e.v, what)
	}
	a.MinLength = d.length(keys, "min_length", what)
	a.MaxLength = d.length(keys, "max_length", what)
	if a.MinLength != nil && a.MaxLength != nil && *a.MinLength > *a.MaxLength {
		d.errorf(keys["max_length"].v, "max_length %d of %s is less than its min_length %d; swap or fix them", *a.MaxLength, what, *a.MinLength)
	}
}

// pattern compiles the pattern as written, then anchored as ^(?:p)$. The
// first compile matters: "a)|(b" does not compile alone, but anchored it
// would compile to an expression that matches any value starting with a.
func (d *decoder) pattern(n *yaml.Node, what string) (string, *regexp.Regexp) {
	p, ok := d.str(n, fmt.Sprintf(`"pattern" of %s`, what))
	if !ok {
		return "", nil
	}
	if _, err := regexp.Compile(p); err != nil {
		d.errorf(n, "pattern of %s does not compile: %v; write an RE2 expression (https://github.com/google/re2/wiki/Syntax)", what, err)
		return "", nil
	}
	re, err := regexp.Compile(`^(?:` + p + `)$`)
	if err != nil {
		d.errorf(n, "pattern of %s does not compile when anchored: %v; simplify it", what, err)
		return "", nil
	}
	return p, re
}

func (d *decoder) length(keys map[string]entry, key, what string) *int {
	e, ok := keys[key]
	if !ok {
		return nil
	}
	v, ok := d.integer(e.v, fmt.Sprintf("%q of %s", key, what))
	if !ok {
		return nil
	}
	if v < 0 {
		d.errorf(e.v, "%s %d of %s is negative; a length is 0 or more", key, v, what)
		return nil
	}
	n := int(v)
	return &n
}

func (d *decoder) rangeConstraints(a *Arg, keys map[string]entry, what string) {
	a.Min = d.bound(a.Type, keys, "min", what)
	a.Max = d.bound(a.Type, keys, "max", what)
	if a.Min != nil && a.Max != nil && *a.Min > *a.Max {
		d.errorf(keys["max"].v, "max %v of %s is less than its min %v; swap or fix them", *a.Max, what, *a.Min)
	}
}

func (d *decoder) bound(typ string, keys map[string]entry, key, what string) *float64 {
	e, ok := keys[key]
	if !ok {
		return nil
	}
	label := fmt.Sprintf("%q of %s", key, what)
	var v float64
	if typ == "integer" {
		i, ok := d.integer(e.v, label)
		if !ok {
			return nil
		}
		v = float64(i)
	} else if v, _, ok = d.number(e.v, label); !ok {
		return nil
	}
	return &v
}
