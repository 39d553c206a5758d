package httpserve

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// agentName is what an agent name may be: it names directories.
var agentName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// CheckAgent checks an agent name, of the tokens file or of a client
// certificate: 1 to 64 of a-z, 0-9, _ and -, starting with a letter or a
// digit, as it names the agent's key and receipts directories.
func CheckAgent(name string) error {
	if !agentName.MatchString(name) {
		return fmt.Errorf("agent name %q: use 1 to 64 of a-z, 0-9, _ and -, starting with a letter or digit", name)
	}
	return nil
}

// minTokenLen is the shortest bearer token accepted (128 bits as hex).
const minTokenLen = 32

// Tokens maps the SHA-256 of a bearer token to the agent it authenticates.
// Lookups by hash keep the token's bytes out of any comparison.
type Tokens map[[32]byte]string

// Agent returns the agent that token authenticates.
func (t Tokens) Agent(token string) (string, bool) {
	name, ok := t[sha256.Sum256([]byte(token))]
	return name, ok
}

// LoadTokens reads a tokens file: one "AGENT TOKEN" pair a line, blank
// lines and lines starting with # skipped. AGENT is 1..64 of [a-z0-9_-]
// starting with a letter or digit (it names the agent's key and receipts
// directories); TOKEN is at least 32 printable ASCII characters without
// spaces, used once in the file. The file must not be readable by group
// or others (mode 0600), as it holds secrets.
func LoadTokens(path string) (Tokens, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s: mode %04o lets others read the tokens; chmod 600 %s", path, fi.Mode().Perm(), path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseTokens(path, data)
}

// ParseTokens parses the contents of a tokens file (see LoadTokens); path
// names it in errors.
func ParseTokens(path string, data []byte) (Tokens, error) {
	t := Tokens{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		if err := t.add(line); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if len(t) == 0 {
		return nil, fmt.Errorf("%s: no tokens; add a line \"AGENT TOKEN\"", path)
	}
	return t, nil
}

func (t Tokens) add(line string) error {
	f := strings.Fields(line)
	if len(f) != 2 {
		return fmt.Errorf("want \"AGENT TOKEN\", got %d fields", len(f))
	}
	name, token := f[0], f[1]
	if err := CheckAgent(name); err != nil {
		return err
	}
	if len(token) < minTokenLen || strings.IndexFunc(token, func(c rune) bool { return c <= ' ' || c > '~' }) >= 0 {
		return fmt.Errorf("agent %s: the token must be at least %d printable ASCII characters (e.g. openssl rand -hex 32)", name, minTokenLen)
	}
	sum := sha256.Sum256([]byte(token))
	if _, dup := t[sum]; dup {
		return fmt.Errorf("agent %s: this token is already given to another line; give each agent its own", name)
	}
	t[sum] = name
	return nil
}
