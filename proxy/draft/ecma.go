package draft

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// # Patterns
//
// A JSON Schema pattern is an ECMA-262 regular expression, which validators
// run with or without the u flag (ajv with it, a JavaScript RegExp by
// default without) or hand to Go's regexp (google/jsonschema-go does). The
// three readings differ: "." matches \r, U+2028 and U+2029 in RE2 but not
// in ECMA-262; \s is [\t\n\f\r ] in RE2 and about twenty code points in
// ECMA-262; without u, "." and a class match one UTF-16 code unit, half of
// a character outside the BMP. translate accepts a subset of ECMA-262
// (literals, ., classes, \d \D \w \W \s \S, \t \n \v \f \r \xHH \uHHHH,
// escaped syntax characters, groups, alternation, ^, $ and quantifiers up
// to 1000) and writes each character set as the code points every reading
// agrees are in it, outside the surrogates and the BMP's end: what the RE2
// pattern matches, each of the three finds. Anything else (lookaround,
// backreferences, \b, \p, named groups, Annex B's lenient forms) is an
// error and the argument is left out.

// rangeSet is a set of code points as sorted, disjoint, non-adjacent
// inclusive ranges lo0, hi0, lo1, hi1, ...
type rangeSet []rune

var (
	setDigit = rangeSet{'0', '9'}
	setWord  = rangeSet{'0', '9', 'A', 'Z', '_', '_', 'a', 'z'}
	// setSpaceRE2 is RE2's \s; setSpaceECMA is ECMA-262's WhiteSpace and
	// LineTerminator (Zs as of Unicode 15, U+FEFF, LF, CR, U+2028, U+2029).
	setSpaceRE2  = rangeSet{'\t', '\n', '\f', '\r', ' ', ' '}
	setSpaceECMA = rangeSet{'\t', '\r', ' ', ' ', 0xa0, 0xa0, 0x1680, 0x1680, 0x2000, 0x200a,
		0x2028, 0x2029, 0x202f, 0x202f, 0x205f, 0x205f, 0x3000, 0x3000, 0xfeff, 0xfeff}
	// setBMP is the code points one UTF-16 code unit holds: the BMP
	// without the surrogates.
	setBMP = rangeSet{0, 0xd7ff, 0xe000, 0xffff}
	// setDot is what "." matches in ECMA-262 (RE2's also takes \r, U+2028
	// and U+2029).
	setDot = rangeSet{'\n', '\n', '\r', '\r', 0x2028, 0x2029}.not().and(setBMP)
)

// classEscape holds, for each class escape, the code points every reading
// puts in it (lower) and those any reading does (upper).
var classEscape = map[rune]struct{ lower, upper rangeSet }{
	'd': {setDigit, setDigit},
	'D': {setDigit.not(), setDigit.not()},
	'w': {setWord, setWord},
	'W': {setWord.not(), setWord.not()},
	's': {setSpaceRE2, setSpaceECMA},
	'S': {setSpaceECMA.not(), setSpaceRE2.not()},
}

// not returns the code points not in s.
func (s rangeSet) not() rangeSet {
	var out rangeSet
	next := rune(0)
	for i := 0; i < len(s); i += 2 {
		if s[i] > next {
			out = append(out, next, s[i]-1)
		}
		next = s[i+1] + 1
	}
	if next <= 0x10ffff {
		out = append(out, next, 0x10ffff)
	}
	return out
}

// or returns the code points in s or t, which may be ranges in any order.
func (s rangeSet) or(t rangeSet) rangeSet {
	all := append(slices.Clone(s), t...)
	type r struct{ lo, hi rune }
	rs := make([]r, 0, len(all)/2)
	for i := 0; i < len(all); i += 2 {
		rs = append(rs, r{all[i], all[i+1]})
	}
	slices.SortFunc(rs, func(a, b r) int { return int(a.lo - b.lo) })
	var out rangeSet
	for _, x := range rs {
		if n := len(out); n > 0 && x.lo <= out[n-1]+1 {
			out[n-1] = max(out[n-1], x.hi)
			continue
		}
		out = append(out, x.lo, x.hi)
	}
	return out
}

// and returns the code points in both s and t.
func (s rangeSet) and(t rangeSet) rangeSet { return s.not().or(t.not()).not() }

// errPattern marks a pattern translate does not take.
var errPattern = errors.New("no exact RE2 form")

// ecma is a translation in progress: the pattern's runes and a position.
type ecma struct {
	src   []rune
	i     int
	depth int
}

// maxDepth bounds the nesting of groups, and maxPattern a pattern's
// length in code points (a class's sets cost up to the square of it).
const (
	maxDepth   = 50
	maxPattern = 4096
)

// translate returns the RE2 text that, matched against a whole string as
// the gate does, accepts only strings in which the JSON Schema pattern p
// finds a match under each reading (see # Patterns above).
func translate(p string) (string, error) {
	e := &ecma{src: []rune(p)}
	if len(e.src) > maxPattern {
		return "", fmt.Errorf("%w: longer than %d characters", errPattern, maxPattern)
	}
	alts, err := e.alternatives()
	if err != nil {
		return "", err
	}
	if e.i < len(e.src) { // an unmatched ")"
		return "", e.fail("unmatched )")
	}
	if len(alts) == 1 && len(alts[0]) >= 2 && alts[0][0] == "^" && alts[0][len(alts[0])-1] == "$" {
		if len(alts[0]) == 2 {
			return "(?:)", nil // ^$: only the empty string, said so ("" would read as no pattern)
		}
		return strings.Join(alts[0][1:len(alts[0])-1], ""), nil // anchored at both ends: a whole-string match already
	}
	return "(?s:.*)(?:" + join(alts) + ")(?s:.*)", nil // any text, newlines too, around a match
}

// join writes alternatives, each a list of RE2 pieces.
func join(alts [][]string) string {
	parts := make([]string, len(alts))
	for i, a := range alts {
		parts[i] = strings.Join(a, "")
	}
	return strings.Join(parts, "|")
}

func (e *ecma) fail(format string, args ...any) error {
	return fmt.Errorf("%w: %s at offset %d", errPattern, fmt.Sprintf(format, args...), e.i)
}

func (e *ecma) peek(s string) bool {
	return strings.HasPrefix(string(e.src[e.i:min(e.i+len(s), len(e.src))]), s)
}

// alternatives reads a|b|... up to a ")" or the end.
func (e *ecma) alternatives() ([][]string, error) {
	var alts [][]string
	for {
		seq, err := e.sequence()
		if err != nil {
			return nil, err
		}
		alts = append(alts, seq)
		if !e.peek("|") {
			return alts, nil
		}
		e.i++
	}
}

// sequence reads terms up to a "|", a ")" or the end: each an RE2 piece.
func (e *ecma) sequence() ([]string, error) {
	var out []string
	for e.i < len(e.src) && !e.peek("|") && !e.peek(")") {
		atom, quantifiable, err := e.atom()
		if err != nil {
			return nil, err
		}
		q, err := e.quantifier()
		if err != nil {
			return nil, err
		}
		if q != "" && !quantifiable {
			return nil, e.fail("a quantifier after an assertion")
		}
		out = append(out, atom+q)
	}
	return out, nil
}

// atom reads one atom or assertion.
func (e *ecma) atom() (string, bool, error) {
	c := e.src[e.i]
	e.i++
	switch c {
	case '^', '$':
		return string(c), false, nil
	case '.':
		return emit(setDot), true, nil
	case '(':
		return e.group()
	case '[':
		s, err := e.class()
		return s, true, err
	case '\\':
		s, err := e.escape()
		if err != nil {
			return "", false, err
		}
		return emit(s), true, nil
	case '*', '+', '?', '{', '}', ']':
		e.i--
		return "", false, e.fail("%q where an atom should be", c)
	}
	s, err := e.literal(c)
	return emit(s), true, err
}

// group reads a group after its "(".
func (e *ecma) group() (string, bool, error) {
	if e.peek("?:") {
		e.i += 2
	} else if e.peek("?") {
		return "", false, e.fail("a lookaround or named group")
	}
	if e.depth++; e.depth > maxDepth {
		return "", false, e.fail("groups nested deeper than %d", maxDepth)
	}
	alts, err := e.alternatives()
	if err != nil {
		return "", false, err
	}
	if !e.peek(")") {
		return "", false, e.fail("an unclosed group")
	}
	e.i++
	e.depth--
	return "(?:" + join(alts) + ")", true, nil
}

// quantifier reads an optional quantifier and its lazy "?".
func (e *ecma) quantifier() (string, error) {
	if e.i >= len(e.src) {
		return "", nil
	}
	var q string
	switch c := e.src[e.i]; c {
	case '*', '+', '?':
		e.i++
		q = string(c)
	case '{':
		end := slices.Index(e.src[e.i:], '}')
		if end < 0 {
			return "", e.fail("a { that is not a quantifier")
		}
		body := string(e.src[e.i+1 : e.i+end])
		lo, hi, comma := strings.Cut(body, ",")
		n, m := bound10(lo), bound10(hi)
		if n < 0 || (comma && hi != "" && (m < 0 || m < n)) || (!comma && hi != "") {
			return "", e.fail("a { that is not a quantifier up to 1000")
		}
		e.i += end + 1
		q = "{" + body + "}"
	default:
		return "", nil
	}
	if e.peek("?") { // lazy: the same strings match
		e.i++
	}
	if e.i < len(e.src) && strings.ContainsRune("*+?{", e.src[e.i]) {
		return "", e.fail("a quantifier after a quantifier")
	}
	return q, nil
}

// bound10 parses a quantifier bound of 1 to 4 decimal digits up to 1000
// (RE2's limit), or returns -1.
func bound10(s string) int {
	if len(s) == 0 || len(s) > 4 || strings.Trim(s, "0123456789") != "" {
		return -1
	}
	n, _ := strconv.Atoi(s)
	if n > 1000 {
		return -1
	}
	return n
}

// literal returns the set of the literal c, which must be one UTF-16 unit.
func (e *ecma) literal(c rune) (rangeSet, error) {
	s := rangeSet{c, c}
	if len(s.and(setBMP)) == 0 {
		return nil, e.fail("%U, outside the BMP or a surrogate", c)
	}
	return s, nil
}

// escape reads an escape after its "\" outside a class.
func (e *ecma) escape() (rangeSet, error) {
	if e.i >= len(e.src) {
		return nil, e.fail("a trailing \\")
	}
	if ce, ok := classEscape[e.src[e.i]]; ok {
		e.i++
		return ce.lower.and(setBMP), nil
	}
	return e.charEscape(false)
}

// charEscape reads an escape that stands for one character.
func (e *ecma) charEscape(inClass bool) (rangeSet, error) {
	c := e.src[e.i]
	e.i++
	switch {
	case strings.ContainsRune(`^$\.*+?()[]{}|/`, c) || inClass && c == '-':
		return rangeSet{c, c}, nil
	case strings.ContainsRune("tnvfr", c):
		r := map[rune]rune{'t': '\t', 'n': '\n', 'v': '\v', 'f': '\f', 'r': '\r'}[c]
		return rangeSet{r, r}, nil
	case c == 'x' || c == 'u':
		n := map[rune]int{'x': 2, 'u': 4}[c]
		if e.i+n > len(e.src) {
			return nil, e.fail("\\%c without %d hex digits", c, n)
		}
		v, err := strconv.ParseUint(string(e.src[e.i:e.i+n]), 16, 32)
		if err != nil || strings.ContainsAny(string(e.src[e.i:e.i+n]), "+-") {
			return nil, e.fail("\\%c without %d hex digits", c, n)
		}
		e.i += n
		return e.literal(rune(v))
	}
	e.i--
	return nil, e.fail("the escape \\%c", c)
}

// class reads a character class after its "[".
func (e *ecma) class() (string, error) {
	start := e.i
	negated := e.peek("^")
	if negated {
		e.i++
	}
	var lower, upper rangeSet
	for first := true; ; first = false {
		if e.i >= len(e.src) {
			return "", e.fail("an unclosed class")
		}
		if e.src[e.i] == ']' {
			if first {
				return "", e.fail("an empty class")
			}
			break
		}
		lo, hi, single, err := e.classAtom()
		if err != nil {
			return "", err
		}
		if single && e.peek("-") && !e.peek("-]") {
			e.i++
			_, end, single2, err := e.classAtom()
			if err != nil {
				return "", err
			}
			if !single2 || end[0] < lo[0] {
				return "", e.fail("a class range that is not from one character to a later one")
			}
			lo = rangeSet{lo[0], end[0]}
			hi = lo
		} else if single && lo[0] == '-' && !first && !e.peek("]") {
			return "", e.fail("a - inside a class that is not a range")
		}
		lower, upper = append(lower, lo...), append(upper, hi...) // ranges in any order, sorted once below
	}
	lower, upper = lower.or(nil), upper.or(nil)
	body := string(e.src[start:e.i])
	e.i++
	if !negated && strings.Trim(body, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == "" {
		return "[" + body + "]", nil // RE2 reads these letters, digits and ranges as ECMA-262 does
	}
	if negated {
		return emit(upper.not().and(setBMP)), nil
	}
	return emit(lower.and(setBMP)), nil
}

// classAtom reads one member of a class: its lower and upper sets, and
// whether it is one character (a possible end of a range).
func (e *ecma) classAtom() (lower, upper rangeSet, single bool, err error) {
	c := e.src[e.i]
	e.i++
	if c != '\\' {
		s, err := e.literal(c)
		return s, s, true, err
	}
	if e.i >= len(e.src) {
		return nil, nil, false, e.fail("a trailing \\")
	}
	if ce, ok := classEscape[e.src[e.i]]; ok {
		e.i++
		return ce.lower, ce.upper, false, nil
	}
	s, err := e.charEscape(true)
	return s, s, true, err
}

// emit writes the set s as one RE2 atom.
func emit(s rangeSet) string {
	switch {
	case len(s) == 2 && s[0] == s[1]:
		return emitRune(s[0], false)
	case slices.Equal(s, setDigit):
		return `\d`
	case slices.Equal(s, setWord):
		return `\w`
	}
	pos, neg := "["+ranges(s)+"]", "[^"+ranges(s.not())+"]"
	if len(neg) < len(pos) {
		return neg
	}
	return pos
}

// ranges writes s's ranges as the inside of an RE2 class.
func ranges(s rangeSet) string {
	var b strings.Builder
	for i := 0; i < len(s); i += 2 {
		b.WriteString(emitRune(s[i], true))
		if s[i+1] != s[i] {
			if s[i+1] > s[i]+1 {
				b.WriteByte('-')
			}
			b.WriteString(emitRune(s[i+1], true))
		}
	}
	return b.String()
}

// emitRune writes r as RE2 text, inside a class or not: ASCII letters,
// digits and _ as they are, other printable ASCII escaped where RE2 needs
// it, \t \n \v \f \r, the rest as \x{...}: the pattern is ASCII.
func emitRune(r rune, inClass bool) string {
	switch {
	case 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_':
		return string(r)
	case r >= ' ' && r < 0x7f && !inClass:
		return regexp.QuoteMeta(string(r))
	case r >= ' ' && r < 0x7f && strings.ContainsRune(`\]^-[`, r):
		return `\` + string(r)
	case r >= ' ' && r < 0x7f:
		return string(r)
	case '\t' <= r && r <= '\r':
		return `\` + string("tnvfr"[r-'\t'])
	}
	return fmt.Sprintf(`\x{%x}`, r)
}
