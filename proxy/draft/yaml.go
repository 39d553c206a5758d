package draft

import (
	"encoding/json"
	"regexp"
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

// yamlString writes s as a double-quoted YAML string (JSON's escapes are
// YAML's).
func yamlString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
