package pin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
)

func sumOf(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func mustHash(t *testing.T, raw string) string {
	t.Helper()
	_, sum, err := Hash([]byte(raw))
	if err != nil {
		t.Fatalf("Hash(%s): %v", raw, err)
	}
	return sum
}

func TestHashVector(t *testing.T) {
	tests := []struct{ raw, canon string }{
		{`{"name":"get_balances","description":"Balances.","inputSchema":{"type":"object"},"title":"x"}`,
			`{"description":"Balances.","inputSchema":{"type":"object"},"name":"get_balances"}`},
		{`{"name":"n"}`, `{"name":"n"}`},
		{`{ "annotations" : {"readOnlyHint":true}, "outputSchema":{"type":"object"}, "name":"n", "_meta":{"a":1},
		   "inputSchema":{"type":"object","properties":{"b":{"type":"integer"},"a":{"type":"string"}}}}`,
			`{"annotations":{"readOnlyHint":true},"inputSchema":{"properties":{"a":{"type":"string"},"b":{"type":"integer"}},"type":"object"},"name":"n"}`},
	}
	for _, tt := range tests {
		name, sum, err := Hash([]byte(tt.raw))
		if err != nil {
			t.Fatalf("Hash(%s): %v", tt.raw, err)
		}
		if want := sumOf(tt.canon); sum != want {
			t.Errorf("Hash(%s) = %s, want sha256(%s) = %s", tt.raw, sum, tt.canon, want)
		}
		if name == "" {
			t.Errorf("Hash(%s) returned no name", tt.raw)
		}
	}
}

func TestHashCoverage(t *testing.T) {
	base := `{"name":"get_balances","title":"Balances","description":"Balances.","inputSchema":{"type":"object","properties":{"account":{"type":"string"}}},"outputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}`
	want := mustHash(t, base)
	same := map[string]string{
		"title":        strings.Replace(base, `"Balances",`, `"Other",`, 1),
		"outputSchema": strings.Replace(base, `"outputSchema":{"type":"object"}`, `"outputSchema":{"type":"array"}`, 1),
		"_meta added":  strings.Replace(base, `{"name"`, `{"_meta":{"x":1},"name"`, 1),
		"order+space":  `{ "annotations":{"readOnlyHint":true},  "inputSchema":{"properties":{"account":{"type":"string"}},"type":"object"},` + "\n" + `"description":"Balances.","name":"get_balances"}`,
		"escapes":      strings.Replace(base, `"Balances."`, `"Bal\u0061nces."`, 1),
	}
	for what, raw := range same {
		if got := mustHash(t, raw); got != want {
			t.Errorf("changing %s changed the pin: %s, want %s", what, got, want)
		}
	}
	differ := map[string]string{
		"description byte": strings.Replace(base, `"Balances."`, `"Balances!"`, 1),
		"schema member":    strings.Replace(base, `"account":{"type":"string"}`, `"account":{"type":"number"}`, 1),
		"schema name":      strings.Replace(base, `"account"`, `"acount"`, 1),
		"annotation":       strings.Replace(base, `true`, `false`, 1),
		"name":             strings.Replace(base, `"get_balances"`, `"get_balance"`, 1),
		"drop annotations": strings.Replace(base, `,"annotations":{"readOnlyHint":true}`, ``, 1),
		"empty annotation": strings.Replace(base, `{"readOnlyHint":true}`, `{}`, 1),
	}
	for what, raw := range differ {
		if got := mustHash(t, raw); got == want {
			t.Errorf("changing %s did not change the pin %s", what, got)
		}
	}
}

// TestHashDefinition: definition_sha256 covers every member the server
// sent, and is blind only to how they are written.
func TestHashDefinition(t *testing.T) {
	raw := `{"name":"get_balances","description":"Balances.","inputSchema":{"type":"object"},"title":"x"}`
	got, err := HashDefinition([]byte(raw))
	if want := sumOf(`{"description":"Balances.","inputSchema":{"type":"object"},"name":"get_balances","title":"x"}`); err != nil || got != want {
		t.Fatalf("HashDefinition(%s) = %s, %v; want %s", raw, got, err, want)
	}
	base := `{"name":"get_balances","title":"Balances","description":"Balances.","inputSchema":{"type":"object"},"outputSchema":{"type":"object"},` +
		`"icons":[{"src":"https://bank.example/b.png"}],"execution":{"taskSupport":"forbidden"},"_meta":{"v":1},"annotations":{"readOnlyHint":true}}`
	want, err := HashDefinition([]byte(base))
	if err != nil {
		t.Fatal(err)
	}
	for what, changed := range map[string]string{
		"title":        strings.Replace(base, `"Balances",`, `"Sweep",`, 1),
		"icons":        strings.Replace(base, `b.png`, `c.png`, 1),
		"outputSchema": strings.Replace(base, `"outputSchema":{"type":"object"}`, `"outputSchema":{"type":"array"}`, 1),
		"execution":    strings.Replace(base, `"forbidden"`, `"required"`, 1),
		"_meta":        strings.Replace(base, `{"v":1}`, `{"v":2}`, 1),
		"new member":   strings.Replace(base, `{"name"`, `{"future":true,"name"`, 1),
		"dropped":      strings.Replace(base, `,"_meta":{"v":1}`, ``, 1),
		"description":  strings.Replace(base, `"Balances."`, `"Balances!"`, 1),
	} {
		if got, err := HashDefinition([]byte(changed)); err != nil || got == want {
			t.Errorf("changing %s left definition_sha256 %s (%v)", what, got, err)
		}
	}
	same := `{ "_meta":{"v":1},"annotations":{"readOnlyHint":true},"execution":{"taskSupport":"forb\u0069dden"},` + "\n" +
		`"icons":[{"src":"https://bank.example/b.png"}],"inputSchema":{"type":"object"},"outputSchema":{"type":"object"},"description":"Balances.","title":"Balances","name":"get_balances"}`
	if got, err := HashDefinition([]byte(same)); err != nil || got != want {
		t.Errorf("reordering, spacing and escapes changed definition_sha256: %s (%v), want %s", got, err, want)
	}
	for _, bad := range []string{`{"name":"a","_meta":{"x":1,"x":2}}`, "{\"name\":\"a\",\"title\":\"\xff\"}", `{"name":"a","title":"\ud800"}`} {
		if got, err := HashDefinition([]byte(bad)); err == nil {
			t.Errorf("HashDefinition(%q) = %s, want an error", bad, got)
		}
	}
}

func TestHashRejects(t *testing.T) {
	for _, raw := range []string{
		`[]`, `"x"`, `{}`, `{"name":1}`, `{"name":null}`,
		`{"name":"a","name":"b"}`,
		`{"name":"a","description":"x","description":"y"}`,
		`{"name":"a","inputSchema":{"type":"object","type":"array"}}`,
		"{\"name\":\"a\",\"description\":\"\xff\"}",
		`{"name":"a","description":"\ud800"}`,
		`{"name":"a"} x`,
	} {
		if name, sum, err := Hash([]byte(raw)); err == nil {
			t.Errorf("Hash(%q) = %q, %s; want error", raw, name, sum)
		}
	}
}

func TestParseList(t *testing.T) {
	a := `{"name":"a", "inputSchema":{"type":"object"}}`
	b := "{\n \"title\":\"B\",\"name\":\"b\"}"
	in := `{"tools":[ ` + a + " ,\n" + b + ` ],"nextCursor":"c2"}`
	l, err := ParseList([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Tools) != 2 {
		t.Fatalf("ParseList: %d tools, want 2", len(l.Tools))
	}
	for i, raw := range []string{a, b} {
		tool := l.Tools[i]
		if !bytes.Equal(tool.Raw, []byte(raw)) {
			t.Errorf("tool %d Raw = %q, want the input bytes %q", i, tool.Raw, raw)
		}
		if name, sum, _ := Hash([]byte(raw)); tool.Name != name || tool.SHA256 != sum {
			t.Errorf("tool %d = %q %s, want %q %s", i, tool.Name, tool.SHA256, name, sum)
		}
	}
	if string(l.NextCursor) != `"c2"` {
		t.Errorf("NextCursor = %q, want %q", l.NextCursor, `"c2"`)
	}
	l, err = ParseList([]byte(`{"tools":[]}`))
	if err != nil || len(l.Tools) != 0 || l.NextCursor != nil {
		t.Errorf(`ParseList({"tools":[]}) = %+v, %v`, l, err)
	}
}

func TestParseListRejects(t *testing.T) {
	for _, in := range []string{
		`{}`, `[]`, `{"tools":{}}`, `{"tools":"x"}`, `{"tools":[1]}`, `{"tools":["a"]}`, `{"tools":[null]}`,
		`{"tools":[{"name":"a","name":"b"}]}`,
		`{"tools":[{"name":"a","description":"x","description":"x"}]}`,
		`{"tools":[],"tools":[]}`,
		`{"tools":[{"name":"a"}`,
	} {
		if l, err := ParseList([]byte(in)); err == nil {
			t.Errorf("ParseList(%s) = %+v, want error", in, l)
		}
	}
}

// fakeServer answers tools/list from pages keyed by cursor ("" first).
type fakeServer struct {
	pages map[string]string
	calls []string
}

func (f *fakeServer) call(ctx context.Context, method string, params []byte) ([]byte, error) {
	if method != "tools/list" {
		return nil, fmt.Errorf("unexpected method %q", method)
	}
	f.calls = append(f.calls, string(params))
	cursor := ""
	if s := string(params); s != "{}" {
		cursor = strings.TrimSuffix(strings.TrimPrefix(s, `{"cursor":"`), `"}`)
	}
	p, ok := f.pages[cursor]
	if !ok {
		return nil, fmt.Errorf("no page for params %s", params)
	}
	return []byte(p), nil
}

func TestListAllPages(t *testing.T) {
	f := &fakeServer{pages: map[string]string{
		"":   `{"tools":[{"name":"a"}],"nextCursor":"p2"}`,
		"p2": `{"tools":[{"name":"b"},{"name":"c"}],"nextCursor":"p3"}`,
		"p3": `{"tools":[{"name":"d"}],"nextCursor":null}`,
	}}
	tools, err := ListAll(context.Background(), f.call)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	if got := strings.Join(names, ","); got != "a,b,c,d" {
		t.Errorf("ListAll names = %s, want a,b,c,d", got)
	}
	if got, want := strings.Join(f.calls, " "), `{} {"cursor":"p2"} {"cursor":"p3"}`; got != want {
		t.Errorf("ListAll sent %s, want %s", got, want)
	}
}

func TestListAllDuplicateAcrossPages(t *testing.T) {
	f := &fakeServer{pages: map[string]string{
		"":   `{"tools":[{"name":"a"}],"nextCursor":"p2"}`,
		"p2": `{"tools":[{"name":"b","description":"other"}],"nextCursor":"p3"}`,
		"p3": `{"tools":[{"name":"a","description":"evil"}]}`,
	}}
	if _, err := ListAll(context.Background(), f.call); err == nil || !strings.Contains(err.Error(), `"a" twice`) {
		t.Errorf("ListAll with a tool on two pages: err = %v, want one naming %q twice", err, "a")
	}
}

func TestListAllTooManyPages(t *testing.T) {
	pages := map[string]string{"": `{"tools":[],"nextCursor":"1"}`}
	for i := 1; i <= MaxPages+1; i++ {
		pages[fmt.Sprint(i)] = fmt.Sprintf(`{"tools":[{"name":"t%d"}],"nextCursor":"%d"}`, i, i+1)
	}
	f := &fakeServer{pages: pages}
	if _, err := ListAll(context.Background(), f.call); err == nil {
		t.Error("ListAll with endless pages succeeded, want error")
	}
	if len(f.calls) != MaxPages {
		t.Errorf("ListAll made %d calls, want %d", len(f.calls), MaxPages)
	}
	// Exactly MaxPages pages is fine.
	pages[fmt.Sprint(MaxPages-1)] = `{"tools":[]}`
	f = &fakeServer{pages: pages}
	if _, err := ListAll(context.Background(), f.call); err != nil {
		t.Errorf("ListAll with %d pages: %v", MaxPages, err)
	}
}

func TestListAllErrors(t *testing.T) {
	f := &fakeServer{pages: map[string]string{"": `{"tools":[{"name":"a"}],"nextCursor":"gone"}`}}
	if _, err := ListAll(context.Background(), f.call); err == nil {
		t.Error("ListAll with a failing call succeeded")
	}
	f = &fakeServer{pages: map[string]string{"": `{"tools":[{"name":"a"},{"name":"a"}]}`}}
	if _, err := ListAll(context.Background(), f.call); err == nil {
		t.Error("ListAll with a name twice on one page succeeded")
	}
}

func FuzzHash(f *testing.F) {
	for _, s := range []string{
		`{"name":"get_balances","description":"Balances.","inputSchema":{"type":"object"},"title":"x"}`,
		`{"name":"a","annotations":{"readOnlyHint":true},"outputSchema":{}}`,
		`{"name":"a","name":"b"}`, `{"name":"\ud800"}`, "{\"name\":\"\xff\"}", `[]`, `{"name":"a","inputSchema":1e400}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		name, sum, err := Hash(raw)
		name2, sum2, err2 := Hash(bytes.Clone(raw))
		if (err == nil) != (err2 == nil) || name != name2 || sum != sum2 {
			t.Fatalf("Hash(%q) not deterministic: %q %s %v / %q %s %v", raw, name, sum, err, name2, sum2, err2)
		}
		if err == nil && len(sum) != 64 {
			t.Fatalf("Hash(%q) = %q, not 64 hex digits", raw, sum)
		}
	})
}
