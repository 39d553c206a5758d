package secretfile

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"fmt"
	"regexp"
	"strings"
)

const (
	maxTokenFile = 1 << 20
	minToken     = 32 // characters: 128 bits as hex
)

// A Token is one line of a token file. The token itself is not kept, only
// its SHA-256, so that callers compare hashes and never the secret's bytes.
type Token struct {
	Name string
	Sum  [32]byte
}

// ReadTokens reads the token file at path with Read and parses it with
// ParseTokens.
func ReadTokens(path string) ([]Token, error) {
	b, err := Read(path, maxTokenFile)
	if err != nil {
		return nil, fmt.Errorf("token file %w", err)
	}
	return ParseTokens(path, b)
}

// ParseTokens parses the contents of a token file (see the package doc);
// path names it in errors.
func ParseTokens(path string, data []byte) ([]Token, error) {
	var tokens []Token
	seen := map[[32]byte]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		t, err := parseLine(f)
		if err == nil && seen[t.Sum] {
			err = fmt.Errorf("name %s: this token is already given on another line; give each its own", t.Name)
		}
		if err != nil {
			return nil, fmt.Errorf("token file %s line %d: %w", path, n, err)
		}
		seen[t.Sum] = true
		tokens = append(tokens, t)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("token file %s: %w", path, err)
	}
	if len(tokens) == 0 {
		return nil, fmt.Errorf("token file %s holds no tokens; add a line \"NAME TOKEN\"", path)
	}
	return tokens, nil
}

func parseLine(f []string) (Token, error) {
	if len(f) != 2 {
		return Token{}, fmt.Errorf("want \"NAME TOKEN\", got %d fields", len(f))
	}
	if err := CheckName(f[0]); err != nil {
		return Token{}, err
	}
	if err := CheckToken(f[1]); err != nil {
		return Token{}, fmt.Errorf("name %s: %w", f[0], err)
	}
	return Token{Name: f[0], Sum: sha256.Sum256([]byte(f[1]))}, nil
}

var name = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// CheckName checks the NAME of a token file's line: 1 to 64 of a-z, 0-9, _
// and -, starting with a letter or a digit.
func CheckName(s string) error {
	if !name.MatchString(s) {
		return fmt.Errorf("name %q: use 1 to 64 of a-z, 0-9, _ and -, starting with a letter or digit", s)
	}
	return nil
}

// CheckToken checks the TOKEN of a token file's line: at least 32
// characters of the RFC 6750 b64token alphabet.
func CheckToken(s string) error {
	if len(s) < minToken {
		return fmt.Errorf("token is %d characters, want at least %d (generate one with: openssl rand -hex 32)", len(s), minToken)
	}
	body := strings.TrimRight(s, "=")
	for i := 0; i < len(body); i++ {
		c := body[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~+/", c) >= 0) {
			return fmt.Errorf("token holds %q at column %d; use only A-Z a-z 0-9 - . _ ~ + / and trailing =", c, i+1)
		}
	}
	return nil
}
