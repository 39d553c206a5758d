package jcs

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

func TestCanonicalize(t *testing.T) {
	tests := []struct{ name, in, want string }{
		// RFC 8785 §3.2.3: member order by UTF-16 code units.
		{"sort-utf16", `{"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis"}`,
			"{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"\u00f6\":\"Latin Small Letter O With Diaeresis\",\"\u20ac\":\"Euro Sign\",\"\U0001F600\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}"},
		{"1e30", `1e30`, `1e+30`},
		{"4.50", `4.50`, `4.5`},
		{"2e-3", `2e-3`, `0.002`},
		{"0.000001", `0.000001`, `0.000001`},
		{"1e-7", `1e-7`, `1e-7`},
		{"minus-zero", `-0`, `0`},
		{"ints", `[1, 100, 1E2, 9007199254740991]`, `[1,100,100,9007199254740991]`},
		{"control-lower-hex", `"\u001F\u0007\n\t\b\f\r"`, `"\u001f\u0007\n\t\b\f\r"`},
		{"slash-not-escaped", `"\/a/b"`, `"/a/b"`},
		{"unicode-unescaped", `"\u00e9\u20AC"`, "\"\u00e9\u20ac\""},
		{"whitespace", " {\n\"b\" : [ 1 , true , null ] ,\t\"a\":{}}\r\n", `{"a":{},"b":[1,true,null]}`},
		{"nested-sort", `{"z":{"y":1,"x":2},"a":[{"c":1,"b":2}]}`, `{"a":[{"b":2,"c":1}],"z":{"x":2,"y":1}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Canonicalize([]byte(tt.in))
			if err != nil {
				t.Fatalf("Canonicalize(%q): %v", tt.in, err)
			}
			if string(got) != tt.want {
				t.Errorf("Canonicalize(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if !IsCanonical(got) {
				t.Errorf("IsCanonical(%q) = false for Canonicalize output", got)
			}
		})
	}
}

func TestCanonicalizeRejects(t *testing.T) {
	tests := []struct{ name, in string }{
		{"dup-name", `{"a":1,"a":2}`},
		{"dup-name-escaped", `{"a":1,"\u0061":2}`},
		{"dup-nested", `{"x":{"a":1,"a":1}}`},
		{"invalid-utf8", "\"\xff\""},
		{"invalid-utf8-name", "{\"\xc3\":1}"},
		{"lone-high-surrogate", `"\ud800"`},
		{"lone-low-surrogate", `"\udc00x"`},
		{"trailing-data", `{} {}`},
		{"trailing-garbage", `1 x`},
		{"empty", ``},
		{"truncated", `{"a":`},
		{"single-quote", `{'a':1}`},
		{"trailing-comma", `[1,]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := []byte(tt.in)
			if got, err := Canonicalize(in); err == nil {
				t.Errorf("Canonicalize(%q) = %q, want error", tt.in, got)
			}
			if IsCanonical(in) {
				t.Errorf("IsCanonical(%q) = true, want false", tt.in)
			}
			if _, err := SHA256(in); err == nil {
				t.Errorf("SHA256(%q) succeeded, want error", tt.in)
			}
		})
	}
}

func TestCanonicalizeDoesNotModifyInput(t *testing.T) {
	in := []byte(`{"b":1, "a":2}`)
	orig := string(in)
	if _, err := Canonicalize(in); err != nil {
		t.Fatal(err)
	}
	if string(in) != orig {
		t.Errorf("Canonicalize modified its input: %q, was %q", in, orig)
	}
}

func TestIsCanonical(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{`{"a":1,"b":2}`, true},
		{`{"b":2,"a":1}`, false},
		{`{"a": 1}`, false},
		{`{"a":1}` + "\n", false},
		{`4.5`, true},
		{`4.50`, false},
		{`1e+30`, true},
		{`1e30`, false},
		{`"\u001f"`, true},
		{`"\u001F"`, false},
		{`"\/"`, false},
		{`"\u00e9"`, false},
		{"\"\u00e9\"", true},
		{`[]`, true},
	}
	for _, tt := range tests {
		if got := IsCanonical([]byte(tt.in)); got != tt.want {
			t.Errorf("IsCanonical(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestSHA256(t *testing.T) {
	const canon = `{"a":[1,"x"],"b":0.002}`
	sum := sha256.Sum256([]byte(canon))
	want := hex.EncodeToString(sum[:])
	for _, in := range []string{canon, `{ "b" : 2e-3, "a" : [ 1.0, "\u0078" ] }`} {
		got, err := SHA256([]byte(in))
		if err != nil {
			t.Fatalf("SHA256(%q): %v", in, err)
		}
		if got != want {
			t.Errorf("SHA256(%q) = %s, want %s (sha256 of %s)", in, got, want, canon)
		}
	}
}
