package policy

import (
	"bytes"
	"fmt"
	"unicode/utf8"
)

// bom is the UTF-8 byte order mark. yaml.v3 skips it without counting a
// column.
const bom = "\ufeff"

// source is the text of a policy file, with the start of each line, so
// that the line and column yaml.v3 reports can be turned into a byte
// offset. checkText must have accepted the text: lines then end only in
// "\n" or "\r\n", as yaml.v3 counts them.
type source struct {
	data  []byte
	lines []int  // byte offset of the start of each line
	ascii []bool // whether each line is ASCII, so columns are bytes

	// The last position found, to resume from: the tree is walked in
	// document order, so finding every node's offset stays linear even
	// on one long non-ASCII line.
	lastLine, lastCol, lastOff int
}

func newSource(data []byte) *source {
	s := &source{data: data, lines: []int{0}, ascii: []bool{true}}
	if bytes.HasPrefix(data, []byte(bom)) {
		s.lines[0] = len(bom)
	}
	for i, b := range data {
		switch {
		case b == '\n':
			s.lines = append(s.lines, i+1)
			s.ascii = append(s.ascii, true)
		case b >= utf8.RuneSelf && i >= s.lines[len(s.lines)-1]:
			s.ascii[len(s.ascii)-1] = false
		}
	}
	return s
}

// offset returns the byte offset of 1-based line and column (in code
// points), or false if the position is not in the text.
func (s *source) offset(line, col int) (int, bool) {
	if line < 1 || line > len(s.lines) || col < 1 {
		return 0, false
	}
	end := len(s.data)
	if line < len(s.lines) {
		end = s.lines[line] - 1 // the '\n'
	}
	off, c := s.lines[line-1], 1
	switch {
	case s.ascii[line-1]:
		off, c = off+col-1, col
	case line == s.lastLine && col >= s.lastCol:
		off, c = s.lastOff, s.lastCol
	}
	for ; c < col && off < end; c++ {
		_, n := utf8.DecodeRune(s.data[off:end])
		off += n
	}
	if c < col || off > end {
		return 0, false
	}
	s.lastLine, s.lastCol, s.lastOff = line, col, off
	return off, true
}

// at returns the byte at line and column, or 0 if there is none.
func (s *source) at(line, col int) byte {
	off, ok := s.offset(line, col)
	if !ok || off >= len(s.data) {
		return 0
	}
	return s.data[off]
}

// checkText rejects text whose lines YAML parsers and editors could count
// differently from each other (a lone CR, NEL, U+2028, U+2029), and text
// that is not UTF-8. It returns the 1-based line and column of the first
// offending character.
func checkText(data []byte) (line, col int, msg string) {
	line, col = 1, 1
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			return line, col, "the file is not valid UTF-8; save it as UTF-8"
		case r == '\r' && (i+1 == len(data) || data[i+1] != '\n'):
			return line, col, `carriage return not followed by a line feed; end lines with "\n" or "\r\n"`
		case r == '\u0085' || r == '\u2028' || r == '\u2029':
			return line, col, fmt.Sprintf("line break U+%04X is not allowed: YAML counts it as a new line and most editors do not; replace it with a newline", r)
		case r == '\n':
			line, col = line+1, 0
		}
		if !(line == 1 && i == 0 && r == '\ufeff') {
			col++
		}
		i += n
	}
	return 0, 0, ""
}
