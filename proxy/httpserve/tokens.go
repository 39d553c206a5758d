package httpserve

import (
	"crypto/sha256"
	"fmt"

	"github.com/bankdoor/bankdoor/internal/secretfile"
)

// CheckAgent checks an agent name, of the tokens file or of a client
// certificate: 1 to 64 of a-z, 0-9, _ and -, starting with a letter or a
// digit, as it names the agent's key and receipts directories.
func CheckAgent(name string) error {
	if err := secretfile.CheckName(name); err != nil {
		return fmt.Errorf("agent %w", err)
	}
	return nil
}

// Tokens maps the SHA-256 of a bearer token to the agent it authenticates.
// Lookups by hash keep the token's bytes out of any comparison.
type Tokens map[[32]byte]string

// Agent returns the agent that token authenticates.
func (t Tokens) Agent(token string) (string, bool) {
	name, ok := t[sha256.Sum256([]byte(token))]
	return name, ok
}

// LoadTokens reads a token file (package secretfile): one "NAME TOKEN"
// line per bearer token, NAME being the agent it authenticates.
func LoadTokens(path string) (Tokens, error) {
	lines, err := secretfile.ReadTokens(path)
	return tokens(lines, err)
}

// ParseTokens parses the contents of a token file (see LoadTokens); path
// names it in errors.
func ParseTokens(path string, data []byte) (Tokens, error) {
	return tokens(secretfile.ParseTokens(path, data))
}

func tokens(lines []secretfile.Token, err error) (Tokens, error) {
	if err != nil {
		return nil, err
	}
	t := Tokens{}
	for _, l := range lines {
		t[l.Sum] = l.Name
	}
	return t, nil
}
