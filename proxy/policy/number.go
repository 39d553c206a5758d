package policy

import (
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/bankdoor/bankdoor/internal/jcs"
)

// maxExact is 2^53: integers beyond ±maxExact are not all representable
// in the IEEE 754 doubles that JSON numbers become in RFC 8785 and in most
// MCP clients, so a bound there would not mean what it says.
const maxExact = 1 << 53

const (
	integerHelp = "write a decimal integer such as 10, without quotes"
	numberHelp  = "write a number as JSON does, such as 10 or 2.5, without quotes"
)

// integer returns the value of the integer scalar n, which must be written
// in decimal and lie within ±2^53.
func (d *decoder) integer(n *yaml.Node, what string) (int64, bool) {
	if !isNumber(n, true) {
		d.errorf(n, "%s must be an integer, found %s; %s", what, describe(n), integerHelp)
		return 0, false
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil || v < -maxExact || v > maxExact {
		d.errorf(n, "%s is %s, outside ±2^53 (9007199254740992); use a smaller bound", what, n.Value)
		return 0, false
	}
	return v, true
}

// number returns the value of the number scalar n and its RFC 8785
// canonical text.
func (d *decoder) number(n *yaml.Node, what string) (float64, string, bool) {
	if !isNumber(n, false) {
		d.errorf(n, "%s must be a number, found %s; %s", what, describe(n), numberHelp)
		return 0, "", false
	}
	v, err := strconv.ParseFloat(n.Value, 64)
	if err != nil || math.IsInf(v, 0) {
		d.errorf(n, "%s is %s, too large for a 64-bit floating-point number; use a smaller value", what, n.Value)
		return 0, "", false
	}
	canon, err := jcs.Canonicalize([]byte(n.Value))
	if err != nil {
		d.errorf(n, "%s: %v; write a plain decimal number", what, err)
		return 0, "", false
	}
	return v, string(canon), true
}

// isNumber reports whether n is an unquoted scalar written in JSON number
// syntax (RFC 8259 section 6), without fraction or exponent if integer is
// true. yaml.v3 would also read 0x10, 0o17, 010 (as octal), 1_000, +5, .5
// and .inf; in a security file a number has one obvious reading, so those
// are errors.
func isNumber(n *yaml.Node, integer bool) bool {
	if n.Kind != yaml.ScalarNode || n.Style != 0 {
		return false
	}
	s := strings.TrimPrefix(n.Value, "-")
	s, ok := digits(s, true)
	if !ok {
		return false
	}
	if integer {
		return s == ""
	}
	if rest, found := strings.CutPrefix(s, "."); found {
		if s, ok = digits(rest, false); !ok {
			return false
		}
	}
	if len(s) > 0 && (s[0] == 'e' || s[0] == 'E') {
		s = s[1:]
		if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
			s = s[1:]
		}
		s, ok = digits(s, false)
	}
	return ok && s == ""
}

// digits strips a non-empty run of decimal digits from the front of s. If
// noLeadingZero is true the run is "0" or does not start with '0'.
func digits(s string, noLeadingZero bool) (string, bool) {
	i := 0
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	if i == 0 || noLeadingZero && s[0] == '0' && i > 1 {
		return s, false
	}
	return s[i:], true
}
