package oauth

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// FuzzParseClaims: what parseClaims accepts, encoding/json reads alike:
// the same iss, aud and exp, so no claim means one thing here and another
// to a lenient decoder (duplicates, strings for numbers).
func FuzzParseClaims(f *testing.F) {
	for _, s := range []string{
		`{"iss":"https://as.example","aud":"r","exp":1796000000,"scp":["a"]}`,
		`{"iss":"x","aud":["r","s"],"exp":1796000000.25,"nbf":0,"scope":"a b"}`,
		`{"exp":"1796000000"}`, `{"iss":"a","iss":"b"}`, `{"i\u0073s":"a","iss":"b"}`, `{"aud":[1]}`, `{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		c, err := parseClaims(payload)
		if err != nil {
			return
		}
		var std map[string]any
		if err := json.Unmarshal(payload, &std); err != nil {
			t.Fatalf("parseClaims accepted %q, encoding/json refuses it: %v", payload, err)
		}
		if iss, _ := std["iss"].(string); iss != c.iss {
			t.Errorf("%q: iss %q here, %q to encoding/json", payload, c.iss, iss)
		}
		var aud []string
		switch v := std["aud"].(type) {
		case string:
			aud = []string{v}
		case []any:
			for _, a := range v {
				aud = append(aud, a.(string))
			}
		}
		if !slices.Equal(aud, c.aud) {
			t.Errorf("%q: aud %q here, %q to encoding/json", payload, c.aud, aud)
		}
		exp, ok := std["exp"].(float64)
		if ok == c.exp.IsZero() || ok && c.exp.Unix() != int64(exp) {
			t.Errorf("%q: exp %v here, %v to encoding/json", payload, c.exp, std["exp"])
		}
	})
}

// FuzzCheckCompact: an accepted token is three non-empty parts of the
// base64url alphabet joined by two dots, whatever the input.
func FuzzCheckCompact(f *testing.F) {
	f.Add("eyJhbGciOiJFZERTQSJ9.e30.c2ln")
	f.Add(`{"payload":"e30","protected":"eyJhbGciOiJFZERTQSJ9","signature":"c2ln"}`)
	f.Add("eyJhbGciOiJFZERTQSJ9.e3\n0.c2ln")
	f.Fuzz(func(t *testing.T, token string) {
		if checkCompact(token) != nil {
			return
		}
		parts := strings.Split(token, ".")
		if len(parts) != 3 {
			t.Fatalf("accepted %q: %d parts", token, len(parts))
		}
		for _, p := range parts {
			if p == "" || strings.Trim(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
				t.Fatalf("accepted %q: part %q", token, p)
			}
		}
	})
}
