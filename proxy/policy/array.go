package policy

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// arrayConstraints decodes what an array argument needs: items, the spec
// of every item, and max_items (both required), and min_items.
func (d *decoder) arrayConstraints(a *Arg, n *yaml.Node, keys map[string]entry, what string) {
	if e, ok := keys["items"]; ok {
		a.Items = d.items(a, e.k, e.v, what)
	} else {
		d.errorf(n, "missing key \"items\" in %s; add items: {type: string, ...} with the constraints every item must meet", what)
	}
	e, ok := keys["max_items"]
	if !ok {
		d.errorf(n, "missing key \"max_items\" in %s; add max_items: N (1 to %d), the most items a call may send", what, MaxItemsLimit)
		return
	}
	max, ok := d.itemCount(e, what)
	if !ok {
		return
	}
	if max < 1 || max > MaxItemsLimit {
		d.errorf(e.v, "max_items %d of %s is not between 1 and %d; bound the array by what one read needs", max, what, MaxItemsLimit)
		return
	}
	a.MaxItems = max
	e, ok = keys["min_items"]
	if !ok {
		return
	}
	min, ok := d.itemCount(e, what)
	switch {
	case !ok:
	case min < 0:
		d.errorf(e.v, "min_items %d of %s is negative; a count is 0 or more", min, what)
	case min > max:
		d.errorf(e.v, "min_items %d of %s is more than its max_items %d; swap or fix them", min, what, max)
	default:
		a.MinItems = min
	}
}

func (d *decoder) itemCount(e entry, what string) (int, bool) {
	v, ok := d.integer(e.v, fmt.Sprintf("%q of %s", e.k.Value, what))
	return int(v), ok
}

// items decodes the spec of the items of the array argument a: a scalar
// type and its constraints. The key node k gives the spec its position.
func (d *decoder) items(a *Arg, k, v *yaml.Node, what string) *Arg {
	it := &Arg{Name: a.Name, Line: k.Line, Column: k.Column}
	what = "items of " + what
	keys := d.collect(v, what, itemKeys(), "type: string (or integer, number, boolean)")
	if e, ok := keys["type"]; ok {
		it.Type = d.itemType(e.v, what)
	}
	if it.Type == "" || !d.constraintsFit(it.Type, keys, what) {
		return it
	}
	d.scalarConstraints(it, keys, what)
	return it
}

func (d *decoder) itemType(n *yaml.Node, what string) string {
	s, ok := d.str(n, fmt.Sprintf(`"type" of %s`, what))
	switch {
	case !ok:
		return ""
	case s == "string" || s == "integer" || s == "number" || s == "boolean":
		return s
	}
	d.errorf(n, "type %q of %s is not one of string, integer, number, boolean; items are scalars (arrays of arrays or of objects are never accepted)", truncate(s), what)
	return ""
}
