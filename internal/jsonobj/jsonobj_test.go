package jsonobj

import (
	"errors"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

func TestParse(t *testing.T) {
	obj, err := Parse([]byte(` {"b": [1, {"x":2}], "a":"s\u00e9", "c": null} `))
	if err != nil {
		t.Fatal(err)
	}
	if got := obj.Names(); len(got) != 3 || got[0] != "b" || got[1] != "a" || got[2] != "c" {
		t.Fatalf("names = %q", got)
	}
	if s, ok := String(obj.Get("a")); !ok || s != "sé" {
		t.Fatalf("a = %q %v", s, ok)
	}
	if got := string(obj.Marshal()); got != `{"b":[1, {"x":2}],"a":"s\u00e9","c":null}` {
		t.Fatalf("Marshal = %s", got)
	}
}

func TestParseRejects(t *testing.T) {
	for _, in := range []string{``, `[]`, `{"a":{"b":1,"b":2}}`, `{"a":[{"b":1,"b":2}]}`, "{\"a\":{\"b\":\"\xff\"}}", `{"a":["\udc00"]}`, `"x"`, `{"a":1,"a":2}`, `{"a":1} {}`, `{"a":1`, "{\"a\":\"\xff\"}", `{"a":"\ud800"}`} {
		if _, err := Parse([]byte(in)); err == nil {
			t.Errorf("Parse(%q) succeeded", in)
		}
	}
	var dup *DuplicateError
	if _, err := Parse([]byte(`{"a":1,"a":2}`)); !errors.As(err, &dup) || dup.Name != "a" {
		t.Errorf("duplicate: err = %v", err)
	}
	if _, err := Parse([]byte(`{"b":{"a":1},"a~/":1,"a~/":2}`)); !errors.As(err, &dup) || dup.Name != "a~/" {
		t.Errorf("duplicate after a nested same name: err = %v", err)
	}
	if _, err := Parse([]byte(`[1]`)); !errors.Is(err, ErrNotObject) {
		t.Errorf("array: err = %v", err)
	}
}

func TestParseLenient(t *testing.T) {
	obj, err := ParseLenient([]byte("{\"a\":\"\xff\",\"b\":1}"))
	if err != nil {
		t.Fatal(err)
	}
	if string(obj.Get("a")) != "\"\xff\"" {
		t.Fatalf("raw value changed: %q", obj.Get("a"))
	}
	if _, err := ParseLenient([]byte(`{"a":1,"a":2}`)); err == nil {
		t.Fatal("lenient parse accepted a duplicate name")
	}
	// Below the top level, ParseLenient leaves duplicates to the caller's
	// more specific check, as it does invalid UTF-8.
	if _, err := ParseLenient([]byte(`{"a":{"b":1,"b":2}}`)); err != nil {
		t.Fatalf("lenient parse refused a nested duplicate: %v", err)
	}
}

// FuzzParse checks that Parse accepts exactly the strict JSON objects:
// what jsontext itself calls valid, at every depth.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`{}`, ` {"a":1} `, `{"a":{"b":1,"b":2}}`, `{"a":[{"b":"\ud800"}]}`, "{\"a\":\"\xff\"}", `{"a":1}{}`, `[]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		_, err := Parse(raw)
		v := jsontext.Value(raw)
		want := v.IsValid() && v.Kind() == '{'
		if (err == nil) != want {
			t.Fatalf("Parse(%q): err = %v, strict JSON object = %v", raw, err, want)
		}
	})
}
