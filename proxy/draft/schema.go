package draft

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bankdoor/bankdoor/internal/jcs"
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

// maxArgName is the longest argument name a policy accepts, and maxArgs
// the most arguments it may declare for a tool (the gate's limit on keys).
const (
	maxArgName = 64
	maxArgs    = 32
)

// argName matches the argument names a policy accepts.
var argName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// specs derives the argument specs of the tool definition raw, in the
// order of its input schema's properties, and refusals: why a policy with
// these specs would allow a call the schema forbids, so that the tool is
// not proposed.
func specs(raw []byte) (args []arg, refusals []string) {
	def, err := jsonobj.Parse(raw)
	if err != nil {
		return nil, []string{"its definition is not a JSON object: " + err.Error()}
	}
	schema, err := jsonobj.Parse(def.Get("inputSchema"))
	if err != nil {
		return nil, []string{"its inputSchema is not a JSON object"}
	}
	refusals = topLevel(schema)
	var required []string
	if r := schema.Get("required"); r != nil && json.Unmarshal(r, &required) != nil {
		refusals = append(refusals, "its inputSchema's required is not a list of names")
	}
	var members jsonobj.Object
	if props := schema.Get("properties"); props != nil {
		if members, err = jsonobj.Parse(props); err != nil {
			return nil, append(refusals, "its inputSchema's properties is not an object")
		}
	}
	kept := 0
	for _, m := range members {
		a := property(m.Name, m.Value)
		switch {
		case a.skip != "" && slices.Contains(required, m.Name):
			refusals = append(refusals, fmt.Sprintf("its inputSchema requires %s, which a policy cannot express as the schema does (%s), and a call without it would pass", strconv.QuoteToASCII(m.Name), a.skip))
		case a.skip == "" && slices.Contains(required, m.Name):
			a.fields = slices.Insert(a.fields, 1, "required: true")
		}
		if a.skip == "" {
			kept++
		}
		args = append(args, a)
	}
	for _, r := range required {
		if members.Get(r) == nil {
			refusals = append(refusals, fmt.Sprintf("its inputSchema requires %s, which its properties do not define", strconv.QuoteToASCII(r)))
		}
	}
	if kept > maxArgs {
		refusals = append(refusals, fmt.Sprintf("its inputSchema has %d arguments a policy could express, more than the %d a policy may declare", kept, maxArgs))
	}
	return args, refusals
}

// topLevel says which keywords at the top of an input schema a policy
// cannot express. The gate refuses every key a policy does not declare,
// so additionalProperties (whatever it says) only ever allows more than
// the gate does.
func topLevel(schema jsonobj.Object) []string {
	var out []string
	for _, m := range schema {
		switch m.Name {
		case "properties", "required", "additionalProperties", "$schema":
		case "type":
			if string(m.Value) != `"object"` {
				out = append(out, fmt.Sprintf("its inputSchema's type is %s, not \"object\"", m.Value))
			}
		default:
			if !slices.Contains(describing, m.Name) {
				out = append(out, fmt.Sprintf("its inputSchema has %s at the top, which a policy cannot express", strconv.QuoteToASCII(m.Name)))
			}
		}
	}
	if schema.Get("type") == nil {
		out = append(out, `its inputSchema has no type "object"`)
	}
	return out
}

// property derives the spec of the property name with schema raw.
func property(name string, raw jsontext.Value) arg {
	a := arg{name: name}
	if !argName.MatchString(name) {
		a.skip = fmt.Sprintf("its name is not 1 to %d characters of [A-Za-z0-9_-], which a policy needs", maxArgName)
		return a
	}
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
		a.fields, a.note, a.skip = scalar(typ, s)
	case "array":
		a.fields, a.note, a.skip = array(s)
	case "object":
		a.skip = "nested objects cannot be expressed"
	default:
		a.skip = fmt.Sprintf("type %s cannot be expressed", strconv.QuoteToASCII(typ))
	}
	if a.skip != "" {
		a.fields = nil
	}
	return a
}

// DefaultMaxLength is the max_length a draft gives a string whose schema
// sets no maxLength (nor enum), so that the draft passes lint.
const DefaultMaxLength = 256

// constraints are the keywords of one scalar schema, as a policy says
// them.
type constraints struct {
	typ            string
	pattern        string         // a policy pattern, "" if none
	re             *regexp.Regexp // pattern as the policy compiles it
	minLen, maxLen int            // -1 if unset
	min, max       *float64
	enum           []jsontext.Value // nil if unset
	notes          []string
}

// scalar derives the fields of a scalar of type typ with schema s.
func scalar(typ string, s jsonobj.Object) (fields []string, note, skip string) {
	c := &constraints{typ: typ, minLen: -1, maxLen: -1}
	for _, m := range s {
		if err := c.keyword(m.Name, m.Value, s); err != nil {
			return nil, "", err.Error()
		}
	}
	if typ == "string" && c.maxLen < 0 && c.enum == nil {
		c.maxLen = max(DefaultMaxLength, c.minLen)
		c.notes = append(c.notes, fmt.Sprintf("the schema sets no maxLength; %d is a guess: bound it by what one read needs", c.maxLen))
	}
	if c.minLen > c.maxLen && c.maxLen >= 0 || c.min != nil && c.max != nil && *c.min > *c.max {
		return nil, "", "its bounds admit no value"
	}
	fields, err := c.fields()
	if err != nil {
		return nil, "", err.Error()
	}
	return fields, strings.Join(c.notes, "; "), ""
}

// keyword adds the keyword k with value v of the schema s to c.
func (c *constraints) keyword(k string, v jsontext.Value, s jsonobj.Object) error {
	typ := c.typ
	switch {
	case k == "type" || slices.Contains(describing, k):
	case k == "enum":
		return c.setEnum(v)
	case typ == "string" && k == "pattern":
		p, err := pattern(v)
		c.pattern = p
		return err
	case typ == "string" && (k == "minLength" || k == "maxLength"):
		n, err := count(v)
		if err != nil {
			return fmt.Errorf("%s: %v", k, err)
		}
		if k == "minLength" {
			c.minLen = n
		} else {
			c.maxLen = n
		}
	case typ == "string" && k == "format":
		var format string
		if json.Unmarshal(v, &format) == nil && format == "date" && s.Get("pattern") == nil {
			c.pattern = `\d{4}-\d{2}-\d{2}`
			if s.Get("maxLength") == nil {
				c.maxLen = 10
			}
		} else {
			c.notes = append(c.notes, fmt.Sprintf("format %s is not checked", v))
		}
	case (typ == "integer" || typ == "number") && (k == "minimum" || k == "maximum"),
		typ == "integer" && (k == "exclusiveMinimum" || k == "exclusiveMaximum"):
		return c.bound(k, v)
	default:
		return fmt.Errorf("%s cannot be expressed for a %s", strconv.QuoteToASCII(k), typ)
	}
	return nil
}

// fields writes c as the fields of a spec. With an enum, the spec is the
// enum's values that meet the other constraints, exactly what the schema
// accepts.
func (c *constraints) fields() ([]string, error) {
	if c.pattern != "" {
		c.re = regexp.MustCompile("^(?:" + c.pattern + ")$") // pattern compiled it
	}
	f := []string{"type: " + c.typ}
	if c.enum != nil {
		vals, err := c.enumValues()
		if err != nil {
			return nil, err
		}
		return append(f, "enum: ["+strings.Join(vals, ", ")+"]"), nil
	}
	if c.pattern != "" {
		f = append(f, "pattern: "+yamlString(c.pattern))
	}
	if c.minLen > 0 {
		f = append(f, "min_length: "+strconv.Itoa(c.minLen))
	}
	if c.maxLen >= 0 {
		f = append(f, "max_length: "+strconv.Itoa(c.maxLen))
	}
	if c.min != nil {
		f = append(f, "min: "+c.number(*c.min))
	}
	if c.max != nil {
		f = append(f, "max: "+c.number(*c.max))
	}
	return f, nil
}

// setEnum keeps the enum v, whose values must all be of c's type.
func (c *constraints) setEnum(v jsontext.Value) error {
	var vals []jsontext.Value
	if err := json.Unmarshal(v, &vals); err != nil || len(vals) == 0 {
		return fmt.Errorf("its enum is not a non-empty list")
	}
	for _, e := range vals {
		k := e.Kind()
		if !(c.typ == "string" && k == '"' || (c.typ == "integer" || c.typ == "number") && k == '0' || c.typ == "boolean" && (k == 't' || k == 'f')) {
			return fmt.Errorf("its enum holds %s, which is not a %s", e, c.typ)
		}
	}
	c.enum = vals
	return nil
}

// enumValues returns, as policy enum values, the distinct values of c's
// enum that meet c's other constraints.
func (c *constraints) enumValues() ([]string, error) {
	var out []string
	for _, e := range c.enum {
		v, ok := c.enumValue(e)
		if ok && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no value of its enum meets its other constraints")
	}
	return out, nil
}

// enumValue writes the enum value e, or reports that a call could not
// send it: the other constraints reject it, or the gate would.
func (c *constraints) enumValue(e jsontext.Value) (string, bool) {
	switch c.typ {
	case "string":
		s, ok := jsonobj.String(e)
		n := utf8.RuneCountInString(s)
		return yamlString(s), ok && (c.re == nil || c.re.MatchString(s)) && n >= c.minLen && (c.maxLen < 0 || n <= c.maxLen)
	case "boolean":
		return string(e), true
	}
	f, err := strconv.ParseFloat(string(e), 64)
	ok := err == nil && (c.min == nil || f >= *c.min) && (c.max == nil || f <= *c.max)
	if c.typ == "integer" {
		ok = ok && f == math.Trunc(f) && math.Abs(f) <= maxExact
	}
	canon, err := jcs.Canonicalize([]byte(c.number(f))) // as the policy stores it: -0 is 0, so 0 and -0 are one value
	return string(canon), ok && err == nil
}

// number writes f, a value of c's type, as the policy reads it: an
// integer in decimal, a number as JSON writes it.
func (c *constraints) number(f float64) string {
	if c.typ == "integer" {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
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
	itemFields, itemNote, skip := scalar(typ, items)
	if skip != "" {
		return nil, "", "its items: " + skip
	}
	fields = []string{"type: array", "items: { " + strings.Join(itemFields, ", ") + " }"}
	minItems, maxItems := 0, -1
	for _, m := range s {
		switch k := m.Name; {
		case k == "type" || k == "items" || slices.Contains(describing, k):
		case k == "minItems" || k == "maxItems":
			n, err := count(m.Value)
			if err != nil {
				return nil, "", fmt.Sprintf("%s: %v", k, err)
			}
			if k == "minItems" {
				minItems = n
			} else {
				maxItems = n
			}
		default:
			return nil, "", fmt.Sprintf("%s cannot be expressed for an array", strconv.QuoteToASCII(k))
		}
	}
	switch {
	case maxItems < 0:
		maxItems = DefaultMaxItems
		note = fmt.Sprintf("the schema sets no maxItems; %d is a guess: bound it by what one read needs", DefaultMaxItems)
	case maxItems == 0:
		return nil, "", "maxItems is 0: the schema allows only an empty array"
	case maxItems > policy.MaxItemsLimit:
		note = fmt.Sprintf("the schema allows %d items; a policy allows at most %d", maxItems, policy.MaxItemsLimit)
		maxItems = policy.MaxItemsLimit
	}
	if minItems > maxItems {
		return nil, "", fmt.Sprintf("minItems %d is more than the %d items a draft allows", minItems, maxItems)
	}
	if minItems > 0 {
		fields = append(fields, "min_items: "+strconv.Itoa(minItems))
	}
	fields = append(fields, "max_items: "+strconv.Itoa(maxItems))
	if itemNote != "" {
		note = strings.TrimPrefix(note+"; items: "+itemNote, "; ")
	}
	return fields, note, ""
}

// pattern turns a JSON Schema pattern (an ECMA-262 search) into a policy
// pattern (an RE2 whole-string match) that accepts only strings the
// schema's accepts (see translate).
func pattern(v jsontext.Value) (string, error) {
	p, ok := jsonobj.String(v)
	if !ok {
		return "", fmt.Errorf("its pattern is not a string")
	}
	full, err := translate(p)
	if err != nil {
		return "", fmt.Errorf("its pattern %s is not RE2 syntax or has no exact RE2 form (%v)", strconv.QuoteToASCII(p), err)
	}
	if _, err := regexp.Compile("^(?:" + full + ")$"); err != nil {
		return "", fmt.Errorf("its pattern %s does not compile as RE2: %v", strconv.QuoteToASCII(p), err)
	}
	return full, nil
}

// count parses a non-negative integer count.
func count(v jsontext.Value) (int, error) {
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil || f < 0 || f != math.Trunc(f) || f > math.MaxInt32 {
		return 0, fmt.Errorf("%s is not a count", v)
	}
	return int(f), nil
}

// maxExact is 2^53, the bound of the integers the gate accepts either side
// of 0.
const maxExact = 1 << 53

// bound adds minimum, maximum and, for integers, exclusiveMinimum and
// exclusiveMaximum to c as min or max, keeping the tighter of two. It
// works on the bound's exact decimal value: for integers, min and max are
// the integers strictly inside an exclusive bound and those inside a
// fractional one; for numbers, the float64 nearest the bound on its inside.
func (c *constraints) bound(k string, v jsontext.Value) error {
	exact, ok := decimal(v)
	if !ok {
		return fmt.Errorf("%s %s is not a number within the range of a float64", k, v)
	}
	lower := k == "minimum" || k == "exclusiveMinimum"
	var f float64
	if c.typ == "integer" {
		// The bound's exact value, and the float64 a validator may read
		// instead (2^53+1 is 2^53 there): the tighter integer bound of the two.
		rounded, _ := exact.Float64()
		var q *big.Int
		for _, r := range []*big.Rat{exact, new(big.Rat).SetFloat64(rounded)} {
			b := integerBound(k, r)
			if q == nil || lower == (b.Cmp(q) > 0) {
				q = b
			}
		}
		if q.CmpAbs(big.NewInt(maxExact)) > 0 {
			if lower == (q.Sign() < 0) {
				return nil // the gate's own bound on integers is tighter
			}
			return fmt.Errorf("%s %s leaves no integer the gate accepts (those within 2^53 of 0)", k, v)
		}
		f = float64(q.Int64())
	} else {
		f, _ = exact.Float64()
		switch cmp := new(big.Rat).SetFloat64(f).Cmp(exact); {
		case lower && cmp < 0:
			f = math.Nextafter(f, math.Inf(1))
		case !lower && cmp > 0:
			f = math.Nextafter(f, math.Inf(-1))
		}
		if math.IsInf(f, 0) {
			return fmt.Errorf("%s %s is beyond the range of a float64", k, v)
		}
	}
	if lower {
		if c.min == nil || f > *c.min {
			c.min = &f
		}
	} else if c.max == nil || f < *c.max {
		c.max = &f
	}
	return nil
}

// integerBound returns the integer bound that the keyword k with value r
// sets: the least (minimum) or greatest (maximum) integer inside it.
func integerBound(k string, r *big.Rat) *big.Int {
	q, m := new(big.Int).DivMod(r.Num(), r.Denom(), new(big.Int)) // q = floor, as Denom > 0
	if (k == "minimum" || k == "exclusiveMaximum") && m.Sign() != 0 {
		q.Add(q, big.NewInt(1)) // ceil
	}
	switch k {
	case "exclusiveMinimum":
		q.Add(q, big.NewInt(1))
	case "exclusiveMaximum":
		q.Sub(q, big.NewInt(1))
	}
	return q
}

// decimal returns the exact value of the JSON number v, if it is one
// whose exponent is within ±400 (a float64's range, with room).
func decimal(v jsontext.Value) (*big.Rat, bool) {
	if v.Kind() != '0' {
		return nil, false
	}
	s := string(v)
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
		if err != nil || e > 400 || e < -400 {
			return nil, false
		}
	}
	r, ok := new(big.Rat).SetString(s)
	return r, ok
}
