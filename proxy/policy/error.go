package policy

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"go.yaml.in/yaml/v3"
)

// Error is one problem found while loading a policy file. Load and Parse
// return every Error they find joined with errors.Join, sorted by position; use
// errors.As to get the first one, or the Unwrap() []error method of the
// joined error to get them all.
type Error struct {
	File   string // the path given to Load or the name given to Parse
	Line   int    // 1-based; 0 when the YAML library did not say
	Column int    // 1-based, in Unicode code points; 0 when unknown
	// Msg says what is wrong and how to fix it.
	Msg string
}

// Error returns "file:line:col: msg", leaving out a position that is 0.
func (e *Error) Error() string {
	switch {
	case e.Line == 0:
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	case e.Column == 0:
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, e.Msg)
}

// maxErrors bounds how many errors one file can produce, so that a huge
// broken file does not produce a huge message.
const maxErrors = 50

// decoder walks a policy's node tree and collects errors.
type decoder struct {
	file string
	errs []error
	full bool // maxErrors reached
	// acks are the acknowledge entries read so far, checked once the
	// whole policy (its never_allow words too) is read.
	acks []ackEntry
}

// errorf records an error at the position of n (nil: no position).
func (d *decoder) errorf(n *yaml.Node, format string, args ...any) {
	line, col := 0, 0
	if n != nil {
		line, col = n.Line, n.Column
	}
	d.errorAt(line, col, fmt.Sprintf(format, args...))
}

func (d *decoder) errorAt(line, col int, msg string) {
	if d.full {
		return
	}
	if len(d.errs) == maxErrors {
		d.full = true
		msg = fmt.Sprintf("more than %d errors; fix the ones above and load the file again", maxErrors)
		line, col = 0, 0
	}
	d.errs = append(d.errs, &Error{File: d.file, Line: line, Column: col, Msg: msg})
}

// err returns the errors sorted by position (stable, so errors at one
// position keep the order they were found in), the note that there were
// too many last.
func (d *decoder) err() error {
	errs := d.errs
	if d.full {
		errs = errs[:len(errs)-1]
	}
	slices.SortStableFunc(errs, func(a, b error) int {
		ea, eb := a.(*Error), b.(*Error)
		return cmp.Or(cmp.Compare(ea.Line, eb.Line), cmp.Compare(ea.Column, eb.Column))
	})
	return errors.Join(d.errs...)
}

// describe names the kind of a node for messages: "a string", "a list", ….
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return describeScalar(n)
	}
	return "an unexpected YAML node"
}

func describeScalar(n *yaml.Node) string {
	switch n.ShortTag() {
	case "!!null":
		return "null"
	case "!!bool":
		return fmt.Sprintf("the boolean %s", n.Value)
	case "!!int":
		return fmt.Sprintf("the integer %s", n.Value)
	case "!!float":
		return fmt.Sprintf("the number %s", n.Value)
	case "!!str":
		return fmt.Sprintf("the string %q", truncate(n.Value))
	}
	return fmt.Sprintf("%s %q", n.ShortTag(), truncate(n.Value))
}

// truncate shortens s for quoting in an error message.
func truncate(s string) string {
	const max = 64
	r := []rune(s)
	if len(r) <= max {
		return s
	}
	return string(r[:max]) + "…"
}
