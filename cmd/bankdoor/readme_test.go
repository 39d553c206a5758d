package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/bankdoor/bankdoor/proxy/words"
)

func readRepoFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("../../" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReadmeWords checks that the README lists exactly the built-in words,
// and exactly the words no policy can acknowledge.
func TestReadmeWords(t *testing.T) {
	t.Parallel()
	readme := readRepoFile(t, "README.md")
	for _, l := range []struct {
		marker string
		code   []string
	}{{"words", words.Builtin()}, {"never", words.Never()}} {
		m := regexp.MustCompile(`(?s)<!-- ` + l.marker + `:begin -->(.*)<!-- ` + l.marker + `:end -->`).FindStringSubmatch(readme)
		if m == nil {
			t.Fatalf("README.md has no <!-- %s:begin --> ... <!-- %s:end --> section", l.marker, l.marker)
		}
		var listed []string
		for _, w := range strings.Split(m[1], ",") {
			listed = append(listed, strings.Trim(strings.TrimSpace(w), "`"))
		}
		if diff := cmp.Diff(l.code, listed); diff != "" {
			t.Errorf("README %s list differs from package words (-code +readme):\n%s", l.marker, diff)
		}
	}
}

// TestCIRunsReadmeTest checks that .ci/run runs exactly the README's Test command.
func TestCIRunsReadmeTest(t *testing.T) {
	t.Parallel()
	readme := readRepoFile(t, "README.md")
	m := regexp.MustCompile("(?s)\\*\\*Test:\\*\\*\\s*```sh\n(.*?)\n```").FindStringSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no **Test:** sh block")
	}
	if ci := readRepoFile(t, ".ci/run"); !strings.Contains(ci, "\n"+m[1]+"\n") {
		t.Errorf(".ci/run does not run the README's Test command %q", m[1])
	}
}
