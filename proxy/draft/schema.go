package draft

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bankdoor/bankdoor/internal/jsonobj"
	"github.com/bankdoor/bankdoor/proxy/policy"
)

// arg is one property of an input schema as a draft argument spec.
type arg struct {
	name   string
	fields []string // "type: string", "required: true", ...
	note   string   // a comment after the spec
	skip   string   // why the argument is left out; then fields is nil
}

// describing are the keywords that only describe a value; they are ignored.
var describing = []string{"description", "title", "default", "examples", "deprecated", "readOnly", "writeOnly", "$comment"}

// specs derives the argument specs of the tool definition raw, in the
// order of its input schema's properties, and notes on the tool.
func specs(raw []byte) ([]arg, []string) {
	def, err := jsonobj.Parse(raw)
	if err != nil {
		return nil, []string{"its definition is not a JSON object: " + err.Error()}
	}
	schema, err := jsonobj.Parse(def.Get("inputSchema"))
	if err != nil {
		return nil, []string{"its inputSchema is not a JSON object: no argument is allowed"}
	}
	var notes []string
	for _, m := range schema {
		switch m.Name {
		case "type", "properties", "required", "additionalProperties", "$schema":
		default:
			if !slices.Contains(describing, m.Name) {
				notes = append(notes, fmt.Sprintf("its inputSchema has %q, which a policy cannot express; the arguments below are checked one by one", m.Name))
			}
		}
	}
	var required []string
	if r := schema.Get("required"); r != nil {
		if err := json.Unmarshal(r, &required); err != nil {
			notes = append(notes, "its inputSchema's required is not a list of names; no argument is marked required")
		}
	}
	props := schema.Get("properties")
	if props == nil {
		return nil, notes
	}
	members, err := jsonobj.Parse(props)
	if err != nil {
		return nil, append(notes, "its inputSchema's properties is not an object: no argument is allowed")
	}
	var args []arg
	for _, m := range members {
		a := property(m.Name, m.Value)
		if a.skip == "" && slices.Contains(required, m.Name) {
			a.fields = slices.Insert(a.fields, 1, "required: true")
		}
		if a.skip != "" && slices.Contains(required, m.Name) {
			a.skip += "; the schema requires it, so every call is denied until you write its spec"
		}
		args = append(args, a)
	}
	return args, notes
}

// property derives the spec of the property name with schema raw.
func property(name string, raw jsontext.Value) arg {
	a := arg{name: name}
	s, err := jsonobj.Parse(raw)
	if err != nil {
		a.skip = "its schema is not an object"
		return a
	}
	var typ string
	if t := s.Get("type"); t == nil {
		a.skip = "its schema has no type"
		return a
	} else if json.Unmarshal(t, &typ) != nil {
		a.skip = fmt.Sprintf("its type is %s; a list of types (e.g. nullable) cannot be expressed", t)
		return a
	}
	switch typ {
	case "string", "integer", "number", "boolean":
		fields, note, skip := scalar(typ, s, nil)
		a.fields, a.note, a.skip = fields, note, skip
	case "array":
		a.fields, a.note, a.skip = array(s)
	case "object":
		a.skip = "nested objects cannot be expressed"
	default:
		a.skip = fmt.Sprintf("type %q cannot be expressed", typ)
	}
	if a.skip != "" {
		a.fields = nil
	}
	return a
}

// scalar derives the fields of a scalar of type typ with schema s; the
// keywords in also are handled by the caller.
func scalar(typ string, s jsonobj.Object, also []string) (fields []string, note, skip string) {
	fields = []string{"type: " + typ}
	var notes []string
	for _, m := range s {
		k, v := m.Name, m.Value
		var f string
		var err error
		switch {
		case k == "type" || slices.Contains(describing, k) || slices.Contains(also, k):
			continue
		case k == "enum":
			f, err = enum(typ, v)
		case typ == "string" && k == "pattern":
			f, err = pattern(v)
		case typ == "string" && (k == "minLength" || k == "maxLength"):
			f, err = length(k, v)
		case typ == "string" && k == "format":
			var format string
			if json.Unmarshal(v, &format) == nil && format == "date" && s.Get("pattern") == nil {
				f = `pattern: "\\d{4}-\\d{2}-\\d{2}"`
				if s.Get("maxLength") == nil {
					f += ", max_length: 10"
				}
			} else {
				notes = append(notes, fmt.Sprintf("format %s is not checked", v))
			}
		case (typ == "integer" || typ == "number") && (k == "minimum" || k == "maximum"):
			f, err = bound(typ, k, v)
		case typ == "integer" && (k == "exclusiveMinimum" || k == "exclusiveMaximum"):
			f, err = bound(typ, k, v)
		default:
			return nil, "", fmt.Sprintf("%q cannot be expressed for a %s", k, typ)
		}
		if err != nil {
			return nil, "", err.Error()
		}
		if f != "" {
			fields = append(fields, f)
		}
	}
	return fields, strings.Join(notes, "; "), ""
}

// array derives the fields of an array with schema s.
func array(s jsonobj.Object) (fields []string, note, skip string) {
	items, err := jsonobj.Parse(s.Get("items"))
	if err != nil {
		return nil, "", "an array needs an items schema that is an object"
	}
	var typ string
	if json.Unmarshal(items.Get("type"), &typ) != nil || !slices.Contains([]string{"string", "integer", "number", "boolean"}, typ) {
		return nil, "", fmt.Sprintf("an array of %s cannot be expressed (only arrays of strings, integers, numbers or booleans)", cmp.Or(string(items.Get("type")), "untyped items"))
	}
	itemFields, itemNote, skip := scalar(typ, items, nil)
	if skip != "" {
		return nil, "", "its items: " + skip
	}
	fields = []string{"type: array", "items: { " + strings.Join(itemFields, ", ") + " }"}
	maxItems := -1
	for _, m := range s {
		switch k := m.Name; {
		case k == "type" || k == "items" || slices.Contains(describing, k):
		case k == "minItems" || k == "maxItems":
			n, err := count(m.Value)
			if err != nil {
				return nil, "", fmt.Sprintf("%s: %v", k, err)
			}
			if k == "minItems" {
				if n > 0 {
					fields = append(fields, "min_items: "+strconv.Itoa(n))
				}
			} else {
				maxItems = n
			}
		default:
			return nil, "", fmt.Sprintf("%q cannot be expressed for an array", k)
		}
	}
	switch {
	case maxItems < 0:
		fields = append(fields, fmt.Sprintf("max_items: %d", DefaultMaxItems))
		note = fmt.Sprintf("the schema sets no maxItems; %d is a guess: bound it by what one read needs", DefaultMaxItems)
	case maxItems == 0:
		return nil, "", "maxItems is 0: the schema allows only an empty array"
	case maxItems > policy.MaxItemsLimit:
		fields = append(fields, fmt.Sprintf("max_items: %d", policy.MaxItemsLimit))
		note = fmt.Sprintf("the schema allows %d items; a policy allows at most %d", maxItems, policy.MaxItemsLimit)
	default:
		fields = append(fields, "max_items: "+strconv.Itoa(maxItems))
	}
	if itemNote != "" {
		note = strings.TrimPrefix(note+"; items: "+itemNote, "; ")
	}
	return fields, note, ""
}

// enum turns a JSON Schema enum of type typ into the policy's.
func enum(typ string, v jsontext.Value) (string, error) {
	var vals []jsontext.Value
	if err := json.Unmarshal(v, &vals); err != nil || len(vals) == 0 {
		return "", fmt.Errorf("its enum is not a non-empty list")
	}
	out := make([]string, len(vals))
	for i, e := range vals {
		k := e.Kind()
		ok := typ == "string" && k == '"' || (typ == "integer" || typ == "number") && k == '0' || typ == "boolean" && (k == 't' || k == 'f')
		if typ == "integer" && ok {
			_, err := strconv.ParseInt(string(e), 10, 64)
			ok = err == nil
		}
		if !ok {
			return "", fmt.Errorf("its enum holds %s, which is not a %s", e, typ)
		}
		out[i] = string(e)
	}
	return "enum: [" + strings.Join(out, ", ") + "]", nil
}

// pattern turns a JSON Schema pattern (a search) into a policy pattern
// (a whole-string match) that accepts the same strings.
func pattern(v jsontext.Value) (string, error) {
	var p string
	if err := json.Unmarshal(v, &p); err != nil {
		return "", fmt.Errorf("its pattern is not a string")
	}
	re, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		return "", fmt.Errorf("its pattern %q is not RE2 syntax (%v)", p, err)
	}
	full := "(?s:.*)(?:" + p + ")(?s:.*)" // any text, newlines too, around a match
	if re.Op == syntax.OpConcat && len(re.Sub) >= 2 && re.Sub[0].Op == syntax.OpBeginText && re.Sub[len(re.Sub)-1].Op == syntax.OpEndText &&
		strings.HasPrefix(p, "^") && strings.HasSuffix(p, "$") && !strings.HasSuffix(p, `\$`) {
		full = p[1 : len(p)-1]
	}
	if _, err := regexp.Compile("^(?:" + full + ")$"); err != nil {
		return "", fmt.Errorf("its pattern %q does not compile: %v", p, err)
	}
	q, _ := json.Marshal(full)
	return "pattern: " + string(q), nil
}

// length turns minLength or maxLength into min_length or max_length.
func length(k string, v jsontext.Value) (string, error) {
	n, err := count(v)
	if err != nil {
		return "", fmt.Errorf("%s: %v", k, err)
	}
	if k == "minLength" {
		if n == 0 {
			return "", nil
		}
		return "min_length: " + strconv.Itoa(n), nil
	}
	return "max_length: " + strconv.Itoa(n), nil
}

// count parses a non-negative integer count.
func count(v jsontext.Value) (int, error) {
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil || f < 0 || f != math.Trunc(f) || f > math.MaxInt32 {
		return 0, fmt.Errorf("%s is not a count", v)
	}
	return int(f), nil
}

// bound turns minimum, maximum and, for integers, exclusiveMinimum and
// exclusiveMaximum into min or max: the integers strictly inside an
// exclusive bound, and the integers inside a fractional one.
func bound(typ, k string, v jsontext.Value) (string, error) {
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil || math.IsInf(f, 0) {
		return "", fmt.Errorf("%s %s is not a number", k, v)
	}
	if typ == "number" {
		key := map[string]string{"minimum": "min", "maximum": "max"}[k]
		return key + ": " + string(v), nil
	}
	var n float64
	switch k {
	case "minimum":
		n = math.Ceil(f)
	case "maximum":
		n = math.Floor(f)
	case "exclusiveMinimum":
		n = math.Floor(f) + 1
	case "exclusiveMaximum":
		n = math.Ceil(f) - 1
	}
	if math.Abs(n) > 1<<53 {
		return "", fmt.Errorf("%s %s is out of range", k, v)
	}
	key := "min"
	if k == "maximum" || k == "exclusiveMaximum" {
		key = "max"
	}
	return key + ": " + strconv.FormatInt(int64(n), 10), nil
}
