// Package jcs produces and checks the JSON Canonicalization Scheme of
// RFC 8785 (https://www.rfc-editor.org/rfc/rfc8785).
//
// Input is parsed strictly: duplicate object member names, invalid UTF-8
// and lone surrogate escapes (\ud800) are errors, never silently repaired,
// because two parsers that disagree on such input disagree on what was
// signed or checked. The canonical form has no whitespace, object members
// sorted by their UTF-16 code units, strings in their minimal escaping and
// numbers in the ECMAScript double format, so integers beyond ±2⁵³ lose
// precision: callers that care (argument checking) reject them first.
//
// The work is done by github.com/go-json-experiment/json/jsontext.
package jcs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/go-json-experiment/json/jsontext"
)

// Canonicalize returns the RFC 8785 canonical form of the single JSON value
// in b. It returns an error, and no output, if b is not exactly one valid
// JSON value under the strict rules in the package documentation.
func Canonicalize(b []byte) ([]byte, error) {
	v := jsontext.Value(bytes.Clone(b))
	if err := v.Canonicalize(); err != nil {
		return nil, fmt.Errorf("not canonicalisable JSON: %w", err)
	}
	return v, nil
}

// IsCanonical reports whether b is already in RFC 8785 canonical form.
func IsCanonical(b []byte) bool {
	c, err := Canonicalize(b)
	return err == nil && bytes.Equal(c, b)
}

// SHA256 returns the lower-case hex SHA-256 of the canonical form of b.
func SHA256(b []byte) (string, error) {
	c, err := Canonicalize(b)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:]), nil
}
