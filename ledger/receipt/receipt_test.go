package receipt

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestSignParseRoundTrip(t *testing.T) {
	rs := exampleReceipts(t)
	file, err := Sign(rs[0], testKey())
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse(file)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(rs[0], got); diff != "" {
		t.Errorf("Parse(Sign(r)) differs from r after Sign (-signed +parsed):\n%s", diff)
	}
	if err := got.Verify(testPub()); err != nil {
		t.Error(err)
	}
	if bytes.HasSuffix(file, []byte("\n")) {
		t.Error("receipt file ends in a newline")
	}
}

func TestSignNormalizes(t *testing.T) {
	r := exampleReceipts(t)[0]
	long := strings.Repeat("a", 255) + "é" + "tail" // é straddles byte 256
	r.Tool = long
	r.Time = time.Date(2026, 1, 2, 3, 4, 5, 6_789_999, time.FixedZone("x", 3600))
	r.ArgNames = []string{"b", "a\xff", strings.Repeat("n", 70)}
	r.Server = "bank\xfe"
	orig := *r
	if _, err := Sign(r, testKey()); err != nil {
		t.Fatal(err)
	}
	want := orig
	want.V = Version
	want.Tool = strings.Repeat("a", 255) + "…"
	want.Time = time.Date(2026, 1, 2, 2, 4, 5, 6_000_000, time.UTC)
	want.ArgNames = []string{"a\uFFFD", "b", strings.Repeat("n", 64) + "…"}
	want.Server = "bank\uFFFD"
	want.KeyID, want.Sig = r.KeyID, r.Sig
	if diff := cmp.Diff(&want, r); diff != "" {
		t.Errorf("Sign normalized r wrongly (-want +got):\n%s", diff)
	}
	if orig.ArgNames[0] != "b" {
		t.Error("Sign sorted the caller's ArgNames slice in place")
	}
}

func TestSignCapsArgNames(t *testing.T) {
	r := exampleReceipts(t)[0]
	r.ArgNames = nil
	for i := 99; i >= 0; i-- {
		r.ArgNames = append(r.ArgNames, string(rune('A'+i%26))+strings.Repeat("x", i))
	}
	file, err := Sign(r, testKey())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.ArgNames) != maxArgNames {
		t.Errorf("%d arg names kept, want %d", len(r.ArgNames), maxArgNames)
	}
	if _, err := Parse(file); err != nil {
		t.Error(err)
	}
}

func TestSignFailureLeavesReceipt(t *testing.T) {
	r := exampleReceipts(t)[0]
	r.Decision = "maybe"
	before := *r
	if _, err := Sign(r, testKey()); err == nil || !strings.Contains(err.Error(), `"decision"`) {
		t.Fatalf("Sign with bad decision: err = %v", err)
	}
	if diff := cmp.Diff(&before, r); diff != "" {
		t.Errorf("failed Sign changed r:\n%s", diff)
	}
}

func TestSignRejectsOversize(t *testing.T) {
	r := exampleReceipts(t)[0]
	r.Reason = strings.Repeat("\x01", MaxSize/6+1) // 6 bytes each as \u0001
	if _, err := Sign(r, testKey()); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Fatalf("err = %v, want a size limit error", err)
	}
}

func TestTruncate(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{strings.Repeat("x", 256), strings.Repeat("x", 256)},
		{strings.Repeat("x", 257), strings.Repeat("x", 256) + "…"},
		{strings.Repeat("x", 254) + "€", strings.Repeat("x", 254) + "…"}, // € is 3 bytes: 257
		{strings.Repeat("x", 253) + "€", strings.Repeat("x", 253) + "€"}, // 256 exactly
		{strings.Repeat("x", 253) + "😀", strings.Repeat("x", 253) + "…"},
		{"ab\xffcd", "ab\uFFFDcd"},
		{strings.Repeat("\xff", 300), "\uFFFD"},
	}
	for _, tt := range tests {
		got := truncate(tt.in, 256)
		if got != tt.want {
			t.Errorf("truncate(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if again := truncate(got, 256); again != got {
			t.Errorf("truncate is not idempotent on %q: %q", got, again)
		}
		if !utf8.ValidString(got) {
			t.Errorf("truncate(%q) is not UTF-8", tt.in)
		}
	}
	// Idempotence over every cut position around multi-byte characters.
	for n := 240; n < 270; n++ {
		for _, c := range []string{"é", "€", "😀"} {
			s := truncate(strings.Repeat("x", n)+strings.Repeat(c, 4), 256)
			if truncate(s, 256) != s || len(s) > 256+len("…") {
				t.Errorf("n=%d %q: truncate gives %q, not stable or too long", n, c, s)
			}
		}
	}
}

func TestFileName(t *testing.T) {
	for _, tt := range []struct {
		seq  uint64
		name string
	}{{1, "000001.json"}, {42, "000042.json"}, {999999, "999999.json"}, {1000000, "1000000.json"}} {
		if got := FileName(tt.seq); got != tt.name {
			t.Errorf("FileName(%d) = %s, want %s", tt.seq, got, tt.name)
		}
		if seq, ok := ParseFileName(tt.name); !ok || seq != tt.seq {
			t.Errorf("ParseFileName(%s) = %d, %v", tt.name, seq, ok)
		}
	}
	for _, bad := range []string{"000000.json", "00001.json", "0000001.json", "01000000.json", "000001.JSON",
		"000001.json.tmp", "+00001.json", "00000a.json", ".lock", "000001", "9007199254740992.json",
		"99999999999999999999999.json"} {
		if seq, ok := ParseFileName(bad); ok {
			t.Errorf("ParseFileName(%q) = %d, true; want false", bad, seq)
		}
	}
}

func TestVerifyWrongKey(t *testing.T) {
	file := exampleFiles(t)[0]
	r, err := Parse(file)
	if err != nil {
		t.Fatal(err)
	}
	err = r.Verify(otherPub())
	if err == nil || !strings.Contains(err.Error(), r.KeyID) {
		t.Fatalf("Verify with another key: err = %v, want a key_id mismatch naming %s", err, r.KeyID)
	}
	// Signed by another key but claiming the real key_id.
	forged := *r
	if _, err := Sign(&forged, otherKey()); err != nil {
		t.Fatal(err)
	}
	forged.KeyID = r.KeyID
	if err := forged.Verify(testPub()); err == nil || !strings.Contains(err.Error(), "signature does not verify") {
		t.Fatalf("Verify of a forged signature: err = %v", err)
	}
}

// TestTamperEveryByte changes each byte of a real receipt in several ways:
// every result must fail Parse or Verify.
func TestTamperEveryByte(t *testing.T) {
	pub := testPub()
	opener := openWith(pub)
	for _, file := range exampleFiles(t) {
		for i := range file {
			for _, c := range []byte{file[i] ^ 0x01, file[i] ^ 0x20, '0', 'a', ' ', '"'} {
				if c == file[i] {
					continue
				}
				b := bytes.Clone(file)
				b[i] = c
				if slowAccepts(b, pub) == nil {
					t.Fatalf("byte %d changed to %q: receipt still parses and verifies:\n%s", i, c, b)
				}
				if _, err := Open(b, opener); err == nil {
					t.Fatalf("byte %d changed to %q: Open accepts it:\n%s", i, c, b)
				}
			}
		}
		// Deleting any one byte, too.
		for i := range file {
			b := append(bytes.Clone(file[:i]), file[i+1:]...)
			if slowAccepts(b, pub) == nil {
				t.Fatalf("byte %d deleted: receipt still parses and verifies", i)
			}
			if _, err := Open(b, opener); err == nil {
				t.Fatalf("byte %d deleted: Open accepts it", i)
			}
		}
	}
}

func TestParseRejects(t *testing.T) {
	good := string(exampleFiles(t)[0])
	second := string(exampleFiles(t)[1])
	sig := base64.StdEncoding.EncodeToString(make([]byte, 64))
	rep := func(s, old, new string) string {
		t.Helper()
		if !strings.Contains(s, old) {
			t.Fatalf("test bug: %q not in receipt", old)
		}
		return strings.Replace(s, old, new, 1)
	}
	tests := []struct{ name, in, want string }{
		{"empty", "", "not canonicalisable JSON"},
		{"not json", "receipt", "not canonicalisable JSON"},
		{"array", "[1]", "not a JSON object"},
		{"trailing newline", good + "\n", "not in RFC 8785 canonical form"},
		{"space after brace", "{ " + good[1:], "not in RFC 8785 canonical form"},
		{"space after colon", rep(good, `"seq":1`, `"seq": 1`), "not in RFC 8785 canonical form"},
		{"reordered", `{"v":1,` + strings.TrimSuffix(good[1:], `,"v":1}`) + "}", "not in RFC 8785 canonical form"},
		{"escaped slash", rep(good, `name.write_word`, `name\/write_word`), "not in RFC 8785 canonical form"},
		{"unicode escape", rep(good, `"bank"`, `"\u0062ank"`), "not in RFC 8785 canonical form"},
		{"seq 1.0", rep(good, `"seq":1`, `"seq":1.0`), "not in RFC 8785 canonical form"},
		{"duplicate member", rep(good, `"v":1}`, `"v":1,"v":1}`), "not canonicalisable JSON"},
		{"unknown member", rep(good, `"v":1}`, `"v":1,"zzz":1}`), `unknown member "zzz"`},
		{"unknown first member", `{"a":1,` + good[1:], `unknown member "a"`},
		{"missing member", rep(good, `"rule":"name.write_word",`, ""), `no member "rule"`},
		{"missing sig", rep(good, `"sig":"`+strings.SplitN(strings.SplitN(good, `"sig":"`, 2)[1], `"`, 2)[0]+`",`, ""), `no member "sig"`},
		{"v 2", rep(good, `"v":1}`, `"v":2}`), "version 2 is not supported"},
		{"v string", rep(good, `"v":1}`, `"v":"1"}`), `member "v": is a string, want an integer`},
		{"seq 0", rep(good, `"seq":1`, `"seq":0`), `member "seq": 0 is not an integer`},
		{"seq negative", rep(good, `"seq":1`, `"seq":-1`), `member "seq"`},
		{"seq fraction", rep(good, `"seq":1`, `"seq":1.5`), `member "seq"`},
		{"seq too big", rep(good, `"seq":1`, `"seq":9007199254740992`), `member "seq"`},
		{"seq string", rep(good, `"seq":1`, `"seq":"1"`), `member "seq": is a string`},
		{"seq null", rep(good, `"seq":1`, `"seq":null`), `member "seq": is null`},
		{"time no millis", rep(good, `45.123Z`, `45Z`), `member "time"`},
		{"time micros", rep(good, `45.123Z`, `45.123456Z`), `member "time"`},
		{"time offset", rep(good, `45.123Z`, `45.123+00:00`), `member "time"`},
		{"time lower z", rep(good, `45.123Z`, `45.123z`), `member "time"`},
		{"time month 13", rep(good, `2026-12-02`, `2026-13-02`), `member "time"`},
		{"time space", rep(good, `2026-12-02T`, `2026-12-02 `), `member "time"`},
		{"time zero", rep(good, `2026-12-02T18:42:45.123Z`, `0001-01-01T00:00:00.000Z`), `member "time"`},
		{"decision", rep(good, `"deny"`, `"Deny"`), `member "decision"`},
		{"decision number", rep(good, `"deny"`, `0`), `member "decision": is a number`},
		{"args hex upper", rep(good, `135cb15a8f`, `135CB15A8F`), `member "args_sha256"`},
		{"args hex short", rep(good, `"135cb15a8f`, `"35cb15a8f`), `member "args_sha256"`},
		{"policy hex nonhex", rep(good, `89d275167d`, `89d275167g`), `member "policy_sha256"`},
		{"key_id long", rep(good, `56475aa75463474c`, `56475aa75463474c0`), `member "key_id"`},
		{"key_id upper", rep(good, `56475aa75463474c`, `56475AA75463474C`), `member "key_id"`},
		{"prev short", rep(good, `"prev":"0`, `"prev":"`), `member "prev"`},
		{"prev not zero at seq 1", rep(good, `"prev":"0`, `"prev":"1`), `member "prev": must be 64 zeros exactly when seq is 1`},
		{"prev zero at seq 2", rep(second, `"prev":"4c662e288a98db34feaeda6caa4bbabb60c00109a81b49e3f4390bd809938a26"`, `"prev":"`+FirstPrev+`"`), `member "prev"`},
		{"sig url alphabet", replaceSig(good, strings.Repeat("-", 86)+"=="), `member "sig"`},
		{"sig unpadded", replaceSig(good, strings.TrimRight(sig, "=")), `member "sig"`},
		{"sig 63 bytes", replaceSig(good, base64.StdEncoding.EncodeToString(make([]byte, 63))), `member "sig"`},
		{"sig 65 bytes", replaceSig(good, base64.StdEncoding.EncodeToString(make([]byte, 65))), `member "sig"`},
		{"sig padding bits", replaceSig(good, sig[:85]+"B=="), `member "sig"`},
		{"sig number", replaceSigRaw(good, `1`), `member "sig": is a number`},
		{"arg_names unsorted", rep(good, `["amount_cents","to_account"]`, `["to_account","amount_cents"]`), `member "arg_names": not sorted`},
		{"arg_names number", rep(good, `["amount_cents","to_account"]`, `["amount_cents",1]`), `member "arg_names": element 1 is a number`},
		{"arg_names string", rep(good, `["amount_cents","to_account"]`, `"amount_cents"`), `member "arg_names": is a string, want an array`},
		{"arg_name long", rep(good, `["amount_cents","to_account"]`, `["`+strings.Repeat("a", 65)+`"]`), `member "arg_names": element 0`},
		{"tool long", rep(good, `"tool":"transfer"`, `"tool":"`+strings.Repeat("t", 257)+`"`), `member "tool"`},
		{"tool object", rep(good, `"tool":"transfer"`, `"tool":{}`), `member "tool": is an object`},
		{"oversize", good[:len(good)-1] + `,"zz":"` + strings.Repeat("z", MaxSize) + `"}`, "over the 16384-byte limit"},
		{"lone surrogate", rep(good, `"bank"`, `"\ud800"`), "not canonicalisable JSON"},
		{"invalid utf-8", rep(good, `"bank"`, "\"\xff\""), "not canonicalisable JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Parse([]byte(tt.in))
			if err == nil {
				t.Fatalf("Parse accepted %s:\n%+v", tt.in, r)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse error %q does not contain %q", err, tt.want)
			}
		})
	}
}

func replaceSig(file, sig string) string { return replaceSigRaw(file, `"`+sig+`"`) }

func replaceSigRaw(file, raw string) string {
	before, rest, _ := strings.Cut(file, `"sig":"`)
	_, after, _ := strings.Cut(rest, `"`)
	return before + `"sig":` + raw + after
}

// TestMarshal: a receipt as Sign leaves it, or as Parse reads it,
// marshals to its file; an unsigned one does not marshal.
func TestMarshal(t *testing.T) {
	r := exampleReceipts(t)[0]
	file, err := Sign(r, testKey())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*Receipt{r, mustParse(t, file)} {
		got, err := c.Marshal()
		if err != nil || !bytes.Equal(got, file) {
			t.Fatalf("Marshal = %s, %v; want %s", got, err, file)
		}
	}
	unsigned := *r
	unsigned.Sig = nil
	if b, err := unsigned.Marshal(); err == nil {
		t.Fatalf("unsigned receipt marshalled to %s", b)
	}
}

func mustParse(t *testing.T, b []byte) *Receipt {
	t.Helper()
	r, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
