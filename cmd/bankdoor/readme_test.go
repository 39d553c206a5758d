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

// TestReadmeWords checks that the README lists exactly the built-in words.
func TestReadmeWords(t *testing.T) {
	t.Parallel()
	readme := readRepoFile(t, "README.md")
	m := regexp.MustCompile(`(?s)<!-- words:begin -->(.*)<!-- words:end -->`).FindStringSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no <!-- words:begin --> ... <!-- words:end --> section")
	}
	var listed []string
	for _, w := range strings.Split(m[1], ",") {
		listed = append(listed, strings.Trim(strings.TrimSpace(w), "`"))
	}
	if diff := cmp.Diff(words.Builtin(), listed); diff != "" {
		t.Errorf("README word list differs from words.Builtin() (-code +readme):\n%s", diff)
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
