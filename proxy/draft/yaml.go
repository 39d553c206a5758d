package draft

import (
	"regexp"
	"strconv"
)

// plainKey matches the names written as plain YAML keys: tool names that
// pass check 1, and argument names like them.
var plainKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// yamlKey writes name as a YAML mapping key: plain when it can be, else a
// double-quoted (JSON) string.
func yamlKey(name string) string {
	if plainKey.MatchString(name) && !reserved[name] {
		return name
	}
	return yamlString(name)
}

// reserved are plain scalars YAML would read as something else.
var reserved = map[string]bool{"true": true, "false": true, "null": true, "yes": true, "no": true, "on": true, "off": true, "y": true, "n": true, "True": true, "False": true, "Null": true, "NULL": true, "TRUE": true, "FALSE": true, "Yes": true, "No": true, "On": true, "Off": true, "YES": true, "NO": true, "ON": true, "OFF": true, "Y": true, "N": true, "~": true}

// yamlString writes s, valid UTF-8, as a double-quoted YAML string of
// printable ASCII: Go's escapes (\n, \x00, \u2028, \U0001f600) are YAML's,
// and no character is left that yaml.v3 would read as a line break
// (U+0085, U+2028, U+2029) and fold.
func yamlString(s string) string {
	return strconv.QuoteToASCII(s)
}
